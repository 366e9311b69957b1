"""Every format shows a tagged corpus's slices: each run's slice means, each comparison's slice
tests under the family's correction, each slice's failing cases, slice gates and their power note; a
corpus without tags reads as before."""

from __future__ import annotations

import re

from ptah.render.html import render_html
from ptah.render.junit import render_junit
from ptah.render.markdown import render_markdown
from tests.render.reports import (
    compared,
    mean,
    plain_lines,
    report,
    sliced,
    sliced_entry,
    valid_junit,
)


def after(lines: list[str], first: str, count: int) -> list[str]:
    start = lines.index(first)
    return lines[start : start + count]


def test_the_terminal_shows_each_slices_means_tests_failing_cases_family_and_gate_power():
    lines = plain_lines(report(sliced()))
    assert (
        "  slices vs base: 4 slice tests, Holm at alpha 0.05: 1 finding survives (worse billing MAP@10 -0.5000 worse)"
        in lines[
            : lines.index(
                "detail: each run's cases, then the comparisons, the gates and the verdict"
            )
        ]
    )
    legend = (
        "  slices of base (each mean a..b where the holes move it: judged and with every hole relevant, the "
        "smaller first; and its denominator):"
    )
    assert after(lines, legend, 5) == [
        legend,
        "slice    cases              recall         MRR        nDCG      MAP@10  judged@k",
        "-------  -----  ------------------  ----------  ----------  ----------  --------",
        "billing      2  0.5000..0.7500 (2)  0.2500 (2)  0.3155 (2)  0.5000 (1)    0.5000",
        "  slices not measured, fewer than 2 cases: de (1)",
    ]
    assert after(lines, "  slices against base:", 10) == [
        "  slices against base:",
        "slice    cases  measure    delta            95% CI  p       adjusted p  finding              survives",
        "-------  -----  -------  -------  ----------------  ------  ----------  -------------------  --------",
        "billing      2  recall   -0.2500  -1.0000..+0.0000  0.5000  1.0000      no clear difference  no",
        "billing      2  MRR      -0.2500  -1.0000..+0.0000  0.2500  0.7500      no clear difference  no",
        "billing      2  nDCG     -0.1655  -1.0000..+0.0000  0.5000  1.0000      no clear difference  no",
        "billing      2  MAP@10   -0.5000  -1.0000..+0.0000  0.0100  0.0400      worse                yes",
        "  slices not compared: de: fewer than 2 cases",
        "  cases now failing or worse, by slice:",
        "    billing (1 of 2): a",
    ]
    assert "slices against base: 4 slice tests, Holm at alpha 0.05: 1 finding survives" in lines
    assert (
        "  pass max-ndcg-drop@billing (worse): nDCG dropped 0.0100, within 0.0200; underpowered: needs 120 cases to "
        "see a drop of 0.02 (power 0.8, alpha 0.05), has 2"
    ) in lines


def with_baseline_slices(correction: str = "holm") -> dict:
    """:func:`sliced` with the candidate run also compared with a baseline, its slices a family of
    its own."""
    data = sliced()
    data["baseline"] = {
        "path": "old.json",
        "digest": "sha256:abc",
        "family": {"correction": correction, "alpha": 0.05, "tests": 2, "surviving": 0},
    }
    data["baseline"]["comparisons"] = [
        {
            "generation": "base",
            "identity": None,
            "against": run,
            "significance": None,
            "cases_changed": [],
            "aggregates": {"recall": {"baseline": 0.5, "current": 0.5, "delta": 0.0}},
            "slices": {
                "billing": {
                    "digest": "sha256:b111",
                    "cases": 2,
                    "comparable": True,
                    "why": None,
                    "failing": [],
                    "measures": {
                        "recall": sliced_entry(0.5, 0.5, 1.0, 1.0),
                        "ndcg": sliced_entry(
                            0.3155, 0.3, 0.04, 0.04 if correction == "none" else 0.08
                        ),
                    },
                },
                "de": {
                    "digest": "sha256:d999",
                    "cases": 1,
                    "comparable": False,
                    "why": "the baseline's slice holds other cases (or other expectations)",
                    "measures": None,
                    "failing": [],
                },
            },
        }
        for run in ("base", "worse")
    ]
    return data


def test_each_run_against_the_baseline_has_its_slice_tests_and_the_baselines_family_its_line():
    lines = plain_lines(report(with_baseline_slices()))
    assert after(lines, "  slices against the baseline (base):", 6) == [
        "  slices against the baseline (base):",
        "slice    cases  measure    delta            95% CI  p       adjusted p  finding              survives",
        "-------  -----  -------  -------  ----------------  ------  ----------  -------------------  --------",
        "billing      2  recall   +0.0000  -1.0000..+0.0000  1.0000  1.0000      no clear difference  no",
        "billing      2  nDCG     -0.0155  -1.0000..+0.0000  0.0400  0.0800      no clear difference  no",
        "  slices not compared: de: the baseline's slice holds other cases (or other expectations)",
    ]
    assert (
        lines.count("  slices against the baseline (base):") == 2
    )  # each run against the baseline's reference
    assert (
        "slices against the baseline: 2 slice tests, Holm at alpha 0.05: 0 findings survive"
        in lines
    )
    assert (
        "  slices vs the baseline: 2 slice tests, Holm at alpha 0.05: 0 findings survive" in lines
    )
    uncorrected = plain_lines(report(with_baseline_slices("none")))
    assert (
        "slices against the baseline: 2 slice tests, no correction: 0 findings at p < 0.05"
        in uncorrected
    )


def test_markdown_has_a_slice_table_per_comparison_and_the_family():
    text = render_markdown(report(with_baseline_slices()))
    assert (
        "### Slices\n\nEach slice's means over its cases: a..b where the holes move it: judged and with every hole "
        "relevant, the smaller first; and (its denominator).\n\n"
        "| slice | cases | run | recall | MRR | nDCG | MAP@10 | judged@k |\n|---|---|---|---|---|---|---|---|\n"
        "| `billing` | 2 | `base (vector)` | 0.5000..0.7500 (2) | 0.2500 (2) | 0.3155 (2) | 0.5000 (1) | 0.5000 |\n"
        "| `billing` | 2 | `worse (vector)` | 0.2500 (2) | 0.1250 (2) | 0.1500 (2) | 0.0000 (1) | 0.2500 |\n\n"
        "Not measured, fewer than 2 cases: `de` (1)."
    ) in text
    assert (
        "By slice:\n\n| slice | cases | measure | Δ | 95% CI | p | adjusted p | finding | survives |\n"
        "|---|---|---|---|---|---|---|---|---|\n"
        "| `billing` | 2 | recall | -0.2500 | [-1.0000, +0.0000] | 0.5000 | 1.0000 | no clear difference | no |\n"
        "| `billing` | 2 | MRR | -0.2500 | [-1.0000, +0.0000] | 0.2500 | 0.7500 | no clear difference | no |\n"
        "| `billing` | 2 | nDCG | -0.1655 | [-1.0000, +0.0000] | 0.5000 | 1.0000 | no clear difference | no |\n"
        "| `billing` | 2 | MAP@10 | -0.5000 | [-1.0000, +0.0000] | 0.0100 | 0.0400 | worse | yes |\n\n"
        "- not compared: `de`: fewer than 2 cases\n- now failing or worse in `billing` (1 of 2): `a`\n\n"
        "Slices against `base`: 4 slice tests, Holm at alpha 0.05: 1 finding survives."
    ) in text
    assert (
        "- not compared: `de`: the baseline's slice holds other cases (or other expectations)"
        in text
    )
    assert (
        "Slices against the baseline: 2 slice tests, Holm at alpha 0.05: 0 findings survive."
        in text
    )
    assert (
        "- pass `max-ndcg-drop@billing` (`worse`): `nDCG dropped 0.0100, within 0.0200; underpowered: needs 120 "
        "cases to see a drop of 0.02 (power 0.8, alpha 0.05), has 2`"
    ) in text


def test_the_page_carries_each_slice_number_as_data():
    page = render_html(report(with_baseline_slices()))
    means = dict(
        ((run, tag, measure, field), value)
        for run, tag, measure, field, value in re.findall(
            r'data-run="([^"]*)" data-slice="([^"]*)" data-measure="([^"]*)" data-slice-field="([^"]*)" data-value="([^"]*)"',
            page,
        )
    )
    assert means[("base", "billing", "recall", "slice-mean")] == "0.5"
    assert means[("worse", "billing", "judged", "slice-judged")] == "0.25"
    tests = dict(
        ((run, against, tag, measure, field), value)
        for run, against, tag, measure, field, value in re.findall(
            r'data-run="([^"]*)" data-against="([^"]*)" data-slice="([^"]*)" data-measure="([^"]*)" data-slice-field="([^"]*)" '
            r'data-value="([^"]*)"',
            page,
        )
    )
    assert tests[("worse", "base", "billing", "MAP@10", "slice-adjusted-p")] == "0.04"
    assert tests[("worse", "base", "billing", "ndcg", "slice-delta")] == repr(0.15 - 0.3155)
    assert tests[("worse", "baseline", "billing", "ndcg", "slice-delta")] == repr(0.3 - 0.3155)
    assert tests[("base", "baseline", "billing", "ndcg", "slice-p")] == "0.04"
    assert (
        '<td data-run="base" data-slice="billing" data-measure="recall" data-slice-field="slice-mean" data-value="0.5" '
        'title="1.0000 / 2 cases">0.5000..0.7500 (2)</td>'
    ) in page
    assert (
        page.count('<table class="slice-tests"') == 3
    )  # the candidate against base, each run against the baseline
    assert '<p class="meta">not measured, fewer than 2 cases: de (1).</p>' in page
    assert "<li>now failing or worse in billing (1 of 2): a</li>" in page
    assert (
        '<p class="family">Slices against base: 4 slice tests, Holm at alpha 0.05: 1 finding survives.</p>'
        in page
    )
    assert (
        "nDCG dropped 0.0100, within 0.0200; underpowered: needs 120 cases to see a drop of 0.02 (power 0.8, alpha "
        "0.05), has 2</td>"
    ) in page


def test_junit_has_a_suite_per_slice_holding_its_gates():
    junit = valid_junit(render_junit(report(sliced())))
    assert junit.count("<testsuite ") == 4  # two runs, the gates, the one slice gated
    assert '<testsuite name="slice de"' not in junit  # a slice with no gate writes no empty suite
    assert (
        '<testsuite name="gates" tests="1" failures="1"' in junit
    )  # the slice's gate is in its own suite
    billing = junit[junit.index('<testsuite name="slice billing"') :]
    assert billing[: billing.index("</testsuite>")].split("\n")[:20] == [
        '<testsuite name="slice billing" tests="1" failures="0" errors="0" skipped="0" time="0.000000" '
        'timestamp="2025-01-01T00:00:00">',
        "    <properties>",
        '      <property name="slice_digest" value="sha256:b111"/>',
        '      <property name="cases" value="a, b"/>',
        '      <property name="base [vector] recall" value="0.5000..0.7500 (2)"/>',
        '      <property name="base [vector] MRR" value="0.2500 (2)"/>',
        '      <property name="base [vector] nDCG" value="0.3155 (2)"/>',
        '      <property name="base [vector] MAP@10" value="0.5000 (1)"/>',
        '      <property name="base [vector] judged@k" value="0.5000"/>',
        '      <property name="worse [vector] recall" value="0.2500 (2)"/>',
        '      <property name="worse [vector] MRR" value="0.1250 (2)"/>',
        '      <property name="worse [vector] nDCG" value="0.1500 (2)"/>',
        '      <property name="worse [vector] MAP@10" value="0.0000 (1)"/>',
        '      <property name="worse [vector] judged@k" value="0.2500"/>',
        "    </properties>",
        '    <testcase name="max-ndcg-drop@billing (worse)" classname="ptah.slices.billing" time="0.000000">',
        "      <system-out>underpowered: needs 120 cases to see a drop of 0.02 (power 0.8, alpha 0.05), has 2</system-out>",
        "    </testcase>",
        "    <system-out>slice billing: 2 cases",
        "worse vs base: recall -0.2500 no clear difference (p = 0.5000, adjusted 1.0000, survives: no)",
    ]
    assert (
        "worse vs base: MAP@10 -0.5000 worse (p = 0.0100, adjusted 0.0400, survives: yes)\n"
        "worse vs base: now failing or worse: a</system-out>" in billing
    )
    assert (
        "slices vs base: 4 slice tests, Holm at alpha 0.05: 1 finding survives (worse billing MAP@10 -0.5000 worse)"
        in junit
    )


def test_a_whole_run_gate_on_a_measure_named_with_an_at_stays_in_the_gates_suite():
    data = sliced()
    data["corpus"]["slices"]["5-drop"] = {"digest": "sha256:f555", "cases": ["a", "b"]}
    data["gates"] += [
        {
            "name": "max-DCG@5-drop",
            "generation": "worse",
            "threshold": 0.1,
            "drop": 0.0,
            "passed": True,
            "detail": "DCG@5 unchanged",
        },
        {
            "name": "max-DCG@5-drop@billing",
            "generation": "worse",
            "threshold": 0.1,
            "drop": 0.0,
            "passed": True,
            "detail": "DCG@5 unchanged",
        },
    ]
    junit = render_junit(report(data))
    gates = junit[
        junit.index('<testsuite name="gates"') : junit.index('<testsuite name="slice billing"')
    ]
    assert '<testcase name="max-DCG@5-drop (worse)" classname="ptah.gates"' in gates
    assert '<testsuite name="slice 5-drop"' not in junit  # no gate of its own: no suite
    assert (
        '<testcase name="max-DCG@5-drop@billing (worse)" classname="ptah.slices.billing"' in junit
    )


def test_a_conclusive_failure_has_no_power_note_and_an_inconclusive_gate_keeps_it():
    data = sliced()
    data["gates"][1] |= {"passed": False, "detail": "nDCG dropped 0.0300, more than 0.0200"}
    failed = report(data)
    assert (
        '    <testcase name="max-ndcg-drop@billing (worse)" classname="ptah.slices.billing" time="0.000000">\n'
        '      <failure message="nDCG dropped 0.0300, more than 0.0200" type="gate">nDCG dropped 0.0300, more than '
        "0.0200</failure>\n    </testcase>\n"
    ) in render_junit(failed)
    assert (
        "  FAIL max-ndcg-drop@billing (worse): nDCG dropped 0.0300, more than 0.0200"
        in plain_lines(failed)
    )
    data["gates"][1] |= {"inconclusive": True, "drop_high": 0.0}
    assert (
        "  INCONCLUSIVE max-ndcg-drop@billing (worse): nDCG dropped 0.0300, more than 0.0200; underpowered: needs "
        "120 cases to see a drop of 0.02 (power 0.8, alpha 0.05), has 2"
    ) in plain_lines(report(data))


def test_a_gate_with_the_power_it_needs_has_no_note():
    data = sliced()
    data["gates"][1]["power"] = {
        "power": 0.8,
        "alpha": 0.05,
        "cases": 200,
        "needed": 120,
        "underpowered": False,
    }
    assert (
        "  pass max-ndcg-drop@billing (worse): nDCG dropped 0.0100, within 0.0200"
    ) in plain_lines(report(data))


def test_a_corpus_without_tags_shows_no_slice_anywhere():
    data = compared()
    data["runs"][0]["aggregates"]["judged"] = mean(1.0, 2)
    outputs = [
        "\n".join(plain_lines(report(data))),
        render_markdown(report(data)),
        render_html(report(data)),
        render_junit(report(data)),
    ]
    for text in outputs:
        assert "slice" not in text.lower()
