"""A variant's controls and each run's time per query in every format; a report without them reads
as before."""

from __future__ import annotations

import copy
import re
import xml.etree.ElementTree as ElementTree

from ptah.core.parts import Cost, RunVariant
from ptah.render.html import render_html
from ptah.render.junit import render_junit
from ptah.render.markdown import render_markdown
from ptah.render.sentences import cost_sentence, variant_sentence
from tests.render.reports import compared, document, entry, plain_lines, report, rich_lines

RERANKED = {
    "name": "worse",
    "channels": ["lexical"],
    "channel": "lexical",
    "generation": "base",
    "search": {"mode": "exact", "ef_search": None},
    "rerank": {
        "kind": "bi-encoder",
        "candidates": 20,
        "generation": None,
        "model": None,
        "service": None,
        "batch_size": 32,
        "scorer": {"model": "ptah/deterministic"},
    },
}
SEARCH_ONLY = {
    "stages": {
        "search": {
            "seconds": 0.5,
            "share": 0.25,
            "p50_ms": 250.0,
            "p95_ms": 250.0,
            "timed": "per batch",
        }
    },
    "p50_ms": 250.0,
    "p95_ms": 250.0,
}
SEARCH_AND_RERANK = {
    "stages": {
        "search": {
            "seconds": 0.01,
            "share": 0.005,
            "p50_ms": 5.0,
            "p95_ms": 5.0,
            "timed": "per batch",
        },
        "rerank": {
            "seconds": 0.9,
            "share": 0.45,
            "p50_ms": 430.0,
            "p95_ms": 470.5,
            "timed": "per query",
            "usage": {"requests": 2, "retries": 1, "input_tokens": 1234, "server_seconds": 0.25},
        },
    },
    "p50_ms": 435.0,
    "p95_ms": 475.5,
}
P95_GATE = {
    "name": "max-p95-ms",
    "generation": "worse",
    "passed": False,
    "detail": "p95 time per query 475.5 ms > 300.0 ms",
}
MORE = "+185.0 ms p50 and +225.5 ms p95 a query"
RERANK_TIME = (
    "time per query: p50 435.0 ms, p95 475.5 ms (search 5.0 ms timed per batch, 0.5% of the evaluation; "
    "rerank p50 430.0 ms, p95 470.5 ms timed per query, 45.0% of the evaluation, usage requests 2, "
    "retries 1, input tokens 1,234, server seconds 0.25)"
)


def timed(gate: bool = True) -> dict:
    """:func:`compared` as ptah writes it now: both runs timed, the second a variant's with a rerank
    stage, and (``gate``) the p95 gate failing it."""
    data = compared()
    base, worse = data["runs"]
    base["cost"], worse["cost"], worse["variant"] = copy.deepcopy(
        (SEARCH_ONLY, SEARCH_AND_RERANK, RERANKED)
    )
    data["comparison"]["candidates"][0]["cost"] = {"p50_ms": 185.0, "p95_ms": 225.5}
    if gate:
        data["gates"].append(P95_GATE)
    return data


def test_the_terminal_says_each_runs_time_and_controls_and_each_comparisons_time():
    lines = plain_lines(report(timed()))
    assert lines[:12] == [
        "verdict: FAIL (exit 1) — 2 of 2 gates failed",
        "  FAIL required (base): all required keys found",
        "  FAIL max-p95-ms (worse): p95 time per query 475.5 ms > 300.0 ms",
        "corpus corpus.yaml: 2 cases",
        "means          recall             MRR            nDCG          MAP@10",
        "-----  --------------  --------------  --------------  --------------",
        "base           0.5000          0.2500          0.3155          0.5000",
        "worse  0.2500 -0.2500  0.1250 -0.2500  0.1500 -0.1655  0.0000 -0.5000",
        "  (delta: against base, the reference run)",
        "  time per query, p50 / p95: base 250.0 ms / 250.0 ms; worse 435.0 ms / 475.5 ms",
        "  worse vs base: recall -0.2500 no clear difference; MRR -0.2500 no clear difference; nDCG -0.1655 no clear "
        f"difference; MAP@10 -0.5000 worse (p = 0.5000); {MORE}",
        "detail: each run's cases, then the comparisons, the gates and the verdict",
    ]
    base, worse = (
        lines.index("  mean MAP@10 0.5000  (0.5000 / 1 cases)"),
        lines.index("  mean MAP@10 0.0000  (0.0000 / 1 cases)"),
    )
    assert lines[base + 1] == (
        "  time per query: p50 250.0 ms, p95 250.0 ms (search 250.0 ms timed per batch, 25.0% of "
        "the evaluation)"
    )
    assert lines[worse + 1] == "  " + RERANK_TIME
    header = lines.index(
        "generation worse sha256:0123456789ab… model ptah/deterministic, 3 rows, exact cosine"
    )
    assert (
        lines[header + 1]
        == "  variant worse: lexical over base, rerank bi-encoder (base) on the top 20"
    )
    assert (
        "  worse is worse than base on MAP@10 by 0.5000 (95% CI -1.0000..+0.0000, p = 0.5000; 0 cases better, "
        f"1 worse, 1 tied), {MORE}"
    ) in lines
    assert sum(line.endswith(f"tied), {MORE}") for line in lines) == 4  # each measure's sentence


def test_a_report_without_times_or_variants_reads_exactly_as_before_they_were_added():
    """What the times and controls add is lines and suffixes of their own: take them away and the
    rest is what a report written before them prints."""
    now = plain_lines(report(timed(gate=False)))
    added = [line for line in now if line.startswith(("  time per query", "  variant "))]
    assert len(added) == 4
    kept = [
        line.removesuffix(f", {MORE}").removesuffix(f"; {MORE}")
        for line in now
        if line not in added
    ]
    before = plain_lines(report(compared()))
    assert kept == before and not any("ms" in line.split() for line in before)
    assert render_markdown(report(compared())) == "\n\n".join(
        part
        for part in render_markdown(report(timed(gate=False)))
        .replace(f", {MORE}", "")
        .split("\n\n")
        if not part.startswith(
            ("### Variants", "### Time per query", "| run | p50 |", "Δ: against", "- variant")
        )
    )
    html = render_html(report(compared()))
    assert (
        'id="cost"' not in html
        and "a query" not in html
        and "a query" not in render_junit(report(compared()))
    )


def test_the_markdown_summary_lists_the_variants_and_tabulates_the_times():
    text = render_markdown(report(timed()))
    assert text.split("\n\n")[4:10] == [
        "### Variants",
        "- variant `worse`: `lexical` over `base`, rerank `bi-encoder` (`base`) on the top 20",
        "### Time per query",
        "| run | p50 | p95 | Δ p50 | Δ p95 | `search` | `rerank` |\n"
        "|---|---|---|---|---|---|---|\n"
        "| `base (vector)` | 250.0 ms | 250.0 ms |  |  | 250.0 ms timed per batch, 25.0% of the evaluation |  |\n"
        "| `worse (vector)` | 435.0 ms | 475.5 ms | +185.0 ms | +225.5 ms | 5.0 ms timed per batch, 0.5% of the "
        "evaluation | p50 430.0 ms, p95 470.5 ms timed per query, 45.0% of the evaluation, usage `requests` 2, "
        "`retries` 1, `input tokens` 1,234, `server seconds` 0.25 |",
        "Δ: against `base`, the reference run. Measured inside the evaluation; a stage timed per batch charges each "
        "query an equal share of its batch.",
        "### Side by side against `base (vector)`",
    ]
    assert (
        f"- `worse` is worse than `base` on MAP@10 by 0.5000 (95% CI -1.0000..+0.0000, p = 0.5000; 0 cases better, "
        f"1 worse, 1 tied), {MORE}"
    ) in text
    assert "- **FAIL** `max-p95-ms` (`worse`): `p95 time per query 475.5 ms > 300.0 ms`" in text


def test_the_html_page_tabulates_the_times_with_the_reports_values():
    html = render_html(report(timed()))
    cells = re.findall(
        r'<td data-run="(\w+)" data-stage="all" data-cost="(\w+)" data-value="([^"]+)">([^<]+)</td>',
        html,
    )
    assert cells == [
        ("base", "p50_ms", "250.0", "250.0 ms"),
        ("base", "p95_ms", "250.0", "250.0 ms"),
        ("worse", "p50_ms", "435.0", "435.0 ms"),
        ("worse", "p95_ms", "475.5", "475.5 ms"),
        ("worse", "delta_p50_ms", "185.0", "+185.0 ms"),
        ("worse", "delta_p95_ms", "225.5", "+225.5 ms"),
    ]
    assert re.findall(r'<th class="l">([^<]+)</th>', html[html.index('<table id="cost">') :])[
        :3
    ] == ["search", "rerank", "variant"]
    assert (
        '<td class="l" data-run="worse" data-stage="rerank">'
        + RERANK_TIME.split("; rerank ")[1].rstrip(")")
        + '</td><td class="l">variant worse: lexical over base, rerank bi-encoder (base) on the top 20</td></tr>'
    ) in html
    assert (
        f"<li>worse vs base: MRR -0.2500 is within noise (95% CI -1.0000..+0.0000, p = 0.5000; 0 cases better, 1 worse, 1 tied), {MORE}</li>"
        in html
    )
    assert (
        '<tr><td class="l">max-p95-ms</td><td class="l">worse</td><td class="l fail">FAIL</td>'
        '<td class="l">p95 time per query 475.5 ms &gt; 300.0 ms</td></tr>'
    ) in html


def test_junit_fails_the_p95_gate_like_any_gate_and_says_what_each_candidate_costs_more():
    suites = ElementTree.fromstring(render_junit(report(timed())).encode())
    gate = suites.find("testsuite[@name='gates']/testcase[@name='max-p95-ms (worse)']")
    assert (gate.get("classname"), gate.find("failure").get("type"), gate.find("failure").text) == (
        "ptah.gates",
        "gate",
        "p95 time per query 475.5 ms > 300.0 ms",
    )
    said = suites.find("testsuite[@name='gates']/system-out").text.splitlines()
    assert len(said) == 5 and all(line.endswith(f"tied), {MORE}") for line in said[1:])


def test_a_variant_says_its_fused_channels_its_search_and_what_reranks():
    hybrid = {
        "name": "served",
        "channels": ["lexical", "vector"],
        "channel": "hybrid",
        "generation": "minilm",
        "search": {"mode": "index", "ef_search": 100},
        "rerank": None,
    }
    assert (
        variant_sentence(RunVariant.from_dict(hybrid))
        == "variant served: hybrid (lexical + vector) over minilm, index search at ef_search 100"
    )
    cross = RERANKED | {
        "channels": ["vector"],
        "channel": "vector",
        "rerank": RERANKED["rerank"]
        | {"kind": "cross-encoder", "model": "models/ms-marco", "candidates": 1000},
    }
    assert (
        variant_sentence(RunVariant.from_dict(cross))
        == "variant worse: vector over base, rerank cross-encoder (models/ms-marco) on the top 1,000"
    )
    service = RERANKED | {
        "rerank": RERANKED["rerank"]
        | {
            "kind": "service",
            "model": "rerank-english-v3.0",
            "service": {"api": "cohere", "base_url": "http://127.0.0.1:7997", "timeout_s": 60},
        }
    }
    assert variant_sentence(RunVariant.from_dict(service), lambda value: f"`{value}`") == (
        "variant `worse`: `lexical` over `base`, rerank `service` (`rerank-english-v3.0` at `http://127.0.0.1:7997`) "
        "on the top 20"
    )
    assert variant_sentence(
        RunVariant.from_dict(RERANKED | {"rerank": RERANKED["rerank"] | {"generation": "minilm"}})
    ).endswith("rerank bi-encoder (minilm) on the top 20")


def test_a_fast_stage_does_not_read_zero_and_a_share_not_yet_known_is_left_out():
    cost = {
        "stages": {
            "search": {
                "seconds": 0.001,
                "share": None,
                "p50_ms": 0.04,
                "p95_ms": 0.04,
                "timed": "per batch",
            }
        },
        "p50_ms": 0.04,
        "p95_ms": 0.04,
    }
    assert (
        cost_sentence(Cost.from_dict(cost))
        == "time per query: p50 0.04 ms, p95 0.04 ms (search 0.04 ms timed per batch)"
    )
    assert (
        cost_sentence(Cost.from_dict(cost | {"stages": {}, "p50_ms": None, "p95_ms": None}))
        == "time per query: p50 N/A, p95 N/A"
    )


def test_a_run_against_a_timed_baseline_says_what_it_costs_more():
    data = document()
    data["runs"][0]["cost"] = SEARCH_ONLY
    data["baseline"] = {
        "path": "base.json",
        "digest": "sha256:abc",
        "comparisons": [
            {
                "generation": "old",
                "against": "base",
                "aggregates": {"recall": {"baseline": 1.0, "current": 0.5, "delta": -0.5}},
                "cases_changed": [],
                "significance": {"recall": entry(1.0, 0.5, "worse") | {"delta": -0.5}},
                "cost": {"p50_ms": -12.5, "p95_ms": 0.5},
            }
        ],
    }
    lines = plain_lines(report(data))
    assert (
        "  base vs the baseline's old: recall -0.5000 worse (p = 0.5000); -12.5 ms p50 and +0.50 ms p95 a query"
        in lines
    )
    assert (
        "  base is worse than the baseline old on recall by 0.5000 (95% CI -1.0000..+0.0000, p = 0.5000; "
        "0 cases better, 1 worse, 1 tied), -12.5 ms p50 and +0.50 ms p95 a query"
    ) in lines


def test_names_from_a_report_file_are_quoted_as_each_format_quotes_them():
    """A saved report is a file: a stage or usage name in it may hold markup, a pipe or a tag."""
    data = timed(gate=False)
    stages = data["runs"][1]["cost"]["stages"]
    stages["<b>|[red]x"] = stages.pop("rerank") | {"usage": {"a|b": 1}}
    markdown = render_markdown(report(data))
    assert "| `search` | `<b>\\|[red]x` |" in markdown and "usage `a\\|b` 1 |" in markdown
    html = render_html(report(data))
    assert '<th class="l">&lt;b&gt;|[red]x</th>' in html and "<b>|" not in html
    assert (
        "  time per query: p50 435.0 ms, p95 475.5 ms (search 5.0 ms timed per batch, 0.5% of the evaluation; "
        "<b>|[red]x p50 430.0 ms, p95 470.5 ms timed per query, 45.0% of the evaluation, usage a|b 1)"
    ) in plain_lines(report(data))
    assert (
        "; <b>|[red]x p50 430.0 ms, p95 470.5 ms timed per query, 45.0% of the evaluation, usage a|b 1)"
        in ("\n".join(rich_lines(report(data), 400)))
    )
