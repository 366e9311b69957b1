"""One sentence per finding, gate and verdict, the same words in the terminal, Markdown, HTML and
JUnit."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree
from html import unescape

from ptah.core.baseline import gates
from ptah.render.html import render_html
from ptah.render.junit import render_junit
from ptah.render.markdown import render_markdown
from tests.core.comparisons import against
from tests.render.reports import compared, entry, plain_lines, report

INCONCLUSIVE_GATE = {
    "name": "max-recall-drop",
    "generation": "worse",
    "passed": False,
    "threshold": 0.1,
    "drop": 0.5,
    "drop_high": 0.0,
    "inconclusive": True,
    "detail": "inconclusive: recall is 1.0000 if every hole is "
    "relevant, within the allowed drop; 93 unjudged rows in 2 cases ('a', 'b') decide it: list them with "
    "`ptah corpus holes corpus.yaml -g worse`, judge them, and evaluate again",
}
# one finding of each kind: the holes decide recall; MAP@10 is worse; MRR is noise; nDCG's interval
# excludes 0
SENTENCES = [
    "worse vs base: recall -0.2500 on the judged rows is worse: p = 0.0002, 1 of 1 changed case worse (95% CI "
    "-1.0000..+0.0000); inconclusive: 2 of 93 plausible holes, taken relevant, would change it; judge a random "
    "sample of both runs' holes to settle it: ptah corpus sample corpus.yaml 40 -g base -g worse",
    "worse vs base: MRR -0.2500 is within noise (95% CI -1.0000..+0.0000, p = 0.5000; 0 cases better, 1 worse, 1 tied)",
    "worse vs base: nDCG -0.1655 is no clear difference: the interval excludes 0 but the test does not find a "
    "difference (95% CI -0.3000..-0.1000, p = 0.5000; 0 cases better, 1 worse, 1 tied)",
    "worse is worse than base on MAP@10 by 0.5000 (95% CI -1.0000..+0.0000, p = 0.5000; 0 cases better, 1 worse, "
    "1 tied)",
]
SETTLE = {
    "flip_count": 2,
    "plausible": 93,
    "sample": 40,
    "command": "ptah corpus sample corpus.yaml 40 -g base -g worse",
}
# the finding's cell in every table
CELL = "worse on judged rows; inconclusive (2 of 93 plausible holes)"
VERDICT = (
    "INCONCLUSIVE",
    "the holes in the judgements decide 1 of 2 gates; judge them and evaluate again",
)


def three_findings():
    data = compared()
    measures = data["comparison"]["candidates"][0]["measures"]
    measures["recall"] = entry(0.5, 0.25, "inconclusive") | {
        "test": {"p_value": 0.0002, "method": "exact", "nonzero": 16, "patterns": 65536},
        "judged": "worse",
        "settle": SETTLE,
    }
    measures["ndcg"]["interval"] = {"low": -0.3, "high": -0.1, "level": 0.95}
    data["gates"] = [data["gates"][0] | {"passed": True}, INCONCLUSIVE_GATE]
    data["verdict"] = "inconclusive"
    return report(data)


def sentences_of(text: str) -> list[str]:
    return [sentence for sentence in SENTENCES if sentence in text]


def test_every_format_says_each_finding_in_the_same_sentence():
    typed = three_findings()
    plain = "\n".join(plain_lines(typed))
    markdown = render_markdown(typed).replace("`", "")
    html = unescape(" ".join(re.findall(r"<li>(.*?)</li>", render_html(typed))))
    junit = (
        ElementTree.fromstring(render_junit(typed).encode())
        .find("testsuite[@name='gates']/system-out")
        .text
    )
    for text in (plain, markdown, html, junit):
        text = text.replace("`", "")  # the command is a code span where the format has them
        assert sentences_of(text) == SENTENCES
        assert "within noise (p" not in text and "recall -0.2500 is within noise" not in text
    cells = [
        " ".join(text.split())
        for text in (plain, render_markdown(typed), unescape(render_html(typed)))
    ]
    assert all(CELL in text for text in cells)
    word, told = VERDICT
    lines = plain.splitlines()
    assert (lines[0], lines[-1]) == (
        f"verdict: {word} (exit 4) — {told}",
        f"verdict: {word} — {told}",
    )
    assert markdown.splitlines()[0] == f"## ptah evaluate: {word}: {told}"
    assert (
        f"verdict: {word} — {told}" in unescape(render_html(typed))
        and junit.splitlines()[0] == f"verdict: {word} — {told}"
    )
    # the gate's detail, 264 characters, is whole in the Markdown summary
    assert (
        f"- **INCONCLUSIVE** max-recall-drop (worse): {INCONCLUSIVE_GATE['detail'].replace('`', '')}"
        in markdown
    )


def test_a_baseline_finding_reads_the_same_in_every_format():
    data = report().to_dict()
    significance = {"recall": entry(1.0, 0.5, "worse") | {"delta": -0.5}}
    data["baseline"] = {
        "path": "base.json",
        "digest": "sha256:abc",
        "comparisons": [
            {
                "generation": "old",
                "aggregates": {"recall": {"baseline": 1.0, "current": 0.5, "delta": -0.5}},
                "cases_changed": [],
                "significance": significance,
            }
        ],
    }
    typed = report(data)
    sentence = (
        "base is worse than the baseline old on recall by 0.5000 (95% CI -1.0000..+0.0000, p = 0.5000; "
        "0 cases better, 1 worse, 1 tied)"
    )
    assert "  " + sentence in plain_lines(typed)
    assert sentence in render_markdown(typed).replace("`", "")
    assert f"<li>{sentence}</li>" in render_html(typed)
    assert sentence in render_junit(typed)


def test_the_verdict_counts_gates_in_words_and_a_gate_names_its_measure_by_label():
    data = compared()
    data["gates"].append(data["gates"][0] | {"passed": True})
    data["gates"][0]["passed"] = True
    data["verdict"] = "pass"
    assert (
        render_markdown(report(data)).splitlines()[0] == "## ptah evaluate: pass: both gates passed"
    )
    data["gates"] += [INCONCLUSIVE_GATE, data["gates"][0] | {"passed": False}]
    data["verdict"] = "fail"  # a gate that failed and one the holes decide: each said as what it is
    assert render_markdown(report(data)).splitlines()[0] == (
        "## ptah evaluate: FAIL: 1 of 4 gates failed; the holes in the judgements decide 1 more"
    )
    run = report().runs[0]
    required, forbidden, drop = gates(run, against({"ndcg": (0.9, 0.6)}), {"ndcg": 0.1})
    assert (required.detail, forbidden.detail, drop.name, drop.detail) == (
        "0 of 1 case missed a required key",
        "no forbidden keys: no case names one",
        "max-ndcg-drop",
        "nDCG 0.9000 -> 0.6000 (dropped 0.3000; a drop of 0.1000 is allowed)",
    )


def test_the_markdown_summary_points_to_no_json_report_it_cannot_know_was_written():
    data = report().to_dict()
    failing = data["runs"][0]["cases"][1]
    data["runs"][0]["cases"] = [
        failing | {"id": f"c{number:02}", "passed": False} for number in range(12)
    ]
    data["runs"][0]["aggregates"]["cases"] = 12
    typed = report(data)
    assert render_markdown(typed).endswith("\n\n2 more failing cases are not listed here.\n")


def test_an_inconclusive_verdict_names_one_sample_for_the_gates_it_serves():
    from ptah.core.gate_parts import GateHoles
    from ptah.core.report import Gate
    from ptah.render.sentences import settling_commands

    def undecided(name: str, size: int, run: str) -> Gate:
        command = f"ptah corpus sample c.yaml {size} --baseline b.json -g {run}"
        return Gate(
            name,
            run,
            False,
            "inconclusive",
            0.02,
            0.1,
            None,
            True,
            GateHoles.from_dict({"settling_sample": size, "command": command}),
        )

    # two gates between the same runs: one sample of the larger size serves both; another run needs
    # its own
    found = [
        undecided("max-recall-drop", 12, "new"),
        undecided("max-ndcg-drop", 20, "new"),
        undecided("max-mrr-drop", 7, "other"),
    ]
    assert settling_commands(found) == [
        "ptah corpus sample c.yaml 20 --baseline b.json -g new",
        "ptah corpus sample c.yaml 7 --baseline b.json -g other",
    ]
    assert settling_commands(
        found[:1] + [Gate("required", "new", False, "1 of 2 cases missed a key")]
    ) == ["ptah corpus sample c.yaml 12 --baseline b.json -g new"]
