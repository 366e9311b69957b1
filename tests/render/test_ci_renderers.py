"""The CI renderers on small typed reports: an inconclusive drop gate, the holes' high bounds,
side-by-side runs."""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

from ptah.core.measures import Mean
from ptah.core.report import Gate
from ptah.render.annotations import failure_annotations
from ptah.render.cases import whereabouts
from ptah.render.junit import render_junit
from ptah.render.markdown import code, render_markdown
from tests.render.reports import compared, report, valid_junit

INCONCLUSIVE = Gate(
    "max-recall-drop", "base", False, "inconclusive: recall 0.5000..0.7000", 0.1, 0.2, 0.0, True
)


def inconclusive():
    """One run whose drop gate the holes decide, with recall's mean ranging 0.5000..0.7500."""
    typed = report()
    run = typed.runs[0]
    means = dict(run.means) | {"recall": Mean(1.0, 2, 0, 1.5)}
    return replace(
        typed,
        runs=(replace(run, means=MappingProxyType(means)),),
        gates=(*typed.gates, INCONCLUSIVE),
    )


def test_an_inconclusive_gate_is_said_in_every_ci_output():
    typed = inconclusive()
    assert typed.verdict == "inconclusive"
    text = render_markdown(typed)
    assert text.splitlines()[0] == (
        "## ptah evaluate: INCONCLUSIVE: the holes in the judgements decide 1 of 2 gates; "
        "judge them and evaluate again"
    )
    assert (
        "- **INCONCLUSIVE** `max-recall-drop` (`base`): `inconclusive: recall 0.5000..0.7000`"
        in text
    )
    assert "| `base (vector)` | 0.5000..0.7500 | 0.2500 | 0.3155 | 0.5000 |" in text
    junit = valid_junit(render_junit(typed))
    # inconclusive is skipped, not failed: the file's failures count only real ones
    assert (
        '<testcase name="max-recall-drop (base)" classname="ptah.gates" time="0.000000">\n'
        '      <skipped message="inconclusive: recall 0.5000..0.7000" type="inconclusive">'
    ) in junit
    assert '<testsuite name="gates" tests="2" failures="0" errors="0" skipped="1"' in junit
    assert ' failures="0" errors="0" time=' in junit.split("\n")[1]  # <testsuites>
    assert list(failure_annotations(typed, "corpus.yaml", {})) == [
        "::warning file=corpus.yaml,title=ptah%3A gate max-recall-drop is inconclusive (base)::"
        "inconclusive: recall 0.5000..0.7000"
    ]


def test_side_by_side_runs_are_compared_in_the_summary_and_the_junit_file():
    typed = report(compared())
    text = render_markdown(typed)
    assert "### Side by side against `base (vector)`" in text
    assert "| MAP@10 | 0.5000 | 0.0000 | -0.5000 | [-1.0000, +0.0000] | 0.5000 | worse |" in text
    assert (
        "- `worse` is worse than `base` on MAP@10 by 0.5000 (95% CI -1.0000..+0.0000, p = 0.5000; 0 cases better, "
        "1 worse, 1 tied)"
    ) in text
    # both runs' results are in the report: where the case's key went before and now (a relevant
    # key: its rank)
    assert (
        "- `a` in `worse` against `base`: **now failing**; query `query a`; now: `'d1' at rank 1`; before: "
        "`'d1' at rank 1`"
    ) in text
    junit = valid_junit(render_junit(typed))
    assert junit.count("<testsuite ") == 3  # two runs and the gates


def test_a_code_span_outlasts_any_run_of_backticks_and_escapes_pipes_in_tables():
    assert code("a ``b`` c") == "```a ``b`` c```"
    assert code("`x`") == "`` `x` ``"
    assert code("a|b", cell=True) == "`a\\|b`"
    assert code("x" * 200) == "`" + "x" * 159 + "… (200 characters)`"


def test_a_saved_reports_created_at_is_shown_as_code_in_the_summary():
    # report show re-renders a file: its created_at is only "a string" to the schema, so it may hold
    # Markdown or HTML.
    typed = replace(
        report(), created_at="x\n\n<img src=https://evil.example/p.png> [go](https://evil.example)"
    )
    head = render_markdown(typed).split("\n\n")[1]
    assert head.endswith(
        "created `x\\n\\n<img src=https://evil.example/p.png> [go](https://evil.example)`"
    )


def test_where_a_passing_cases_keys_went_says_relevant_not_judged():
    case = report().runs[0].cases[0]  # relevant d1, ranked d1, d2
    assert whereabouts(case) == "'d1' at rank 1"
    assert (
        whereabouts(replace(case, ranking=case.ranking[1:]))
        == "no required or relevant key in the top k"
    )
    assert (
        whereabouts(replace(case, relevant=(), ranking=case.ranking[1:]))
        == "no required or relevant key"
    )
