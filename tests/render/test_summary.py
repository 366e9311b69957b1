"""The first screen of an evaluation: verdict and exit code, failed gates, means, findings, baseline
notes."""

from __future__ import annotations

from ptah.render.table import render_summary
from tests.render.reports import compared, document, entry, report, rich_lines
from tests.render.test_table import DETAIL


def summary(data: dict) -> list[str]:
    """The summary as a wide console prints it (nothing wraps), up to the line that announces the
    detail."""
    lines = rich_lines(report(data), 400, render_summary)
    assert lines[-1] == DETAIL
    return lines[:-1]


def test_several_runs_show_the_verdict_the_failed_gates_the_means_with_deltas_and_one_line_of_findings():
    assert summary(compared()) == [
        "verdict: FAIL (exit 1) — 1 of 1 gate failed",
        "  FAIL required (base): all required keys found",
        "corpus corpus.yaml: 2 cases",
        "means ┃         recall ┃            MRR ┃           nDCG ┃         MAP@10",
        "━━━━━━╇━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━",
        "base  │         0.5000 │         0.2500 │         0.3155 │         0.5000",
        "worse │ 0.2500 -0.2500 │ 0.1250 -0.2500 │ 0.1500 -0.1655 │ 0.0000 -0.5000",
        "  (delta: against base, the reference run)",
        "  worse vs base: recall -0.2500 no clear difference; MRR -0.2500 no clear difference; nDCG -0.1655 no "
        "clear difference; MAP@10 -0.5000 worse (p = 0.5000)",
    ]


def test_a_baseline_from_another_identity_is_a_note_on_the_first_screen():
    data = document()
    note = (
        "the baseline measured generation old (sha256:ffffffffffff…), another generation identity than base "
        "(sha256:0123456789ab…): its deltas compare other vectors (another model, settings or text)"
    )
    data["baseline"] = {
        "path": "old.json",
        "digest": "sha256:abc",
        "comparisons": [
            {
                "generation": "old",
                "identity": "sha256:" + "f" * 64,
                "against": "base",
                "provenance": {"same_identity": False, "same_source": None, "notes": [note]},
                "aggregates": {"recall": {"baseline": 0.75, "current": 0.5, "delta": -0.25}},
                "cases_changed": [],
                "significance": {"recall": entry(0.75, 0.5) | {"test": None, "interval": None}},
            }
        ],
    }
    data["gates"] = [
        {
            "name": "required",
            "generation": "base",
            "passed": True,
            "detail": "all required keys found",
        }
    ]
    lines = summary(data)
    assert lines[0] == "verdict: pass (exit 0) — the one gate passed"
    assert lines[-2:] == [
        "  base vs the baseline's old: recall -0.2500 no clear difference",
        "  note: " + note,
    ]
