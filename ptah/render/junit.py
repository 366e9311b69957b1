"""The report as JUnit XML (``evaluate --junit FILE``), the test report CI systems draw natively;
the schema the tests validate it against is ``tests/render/junit.xsd``.

* One ``<testsuite>`` per run, ``GENERATION [CHANNEL]``, with the run's properties and one
  ``<testcase>`` per case (``classname`` ``ptah.GENERATION.CHANNEL``, ``name`` the case id),
  failed when a required key was missed (saying where it ranked) or a forbidden key leaked.
* A ``gates`` suite, one test case per gate: failed when it failed (``type="gate"``), skipped when
  inconclusive (``<skipped type="inconclusive">``, exit 4, never counted as a failure); its
  ``<system-out>`` holds the verdict and every finding (:mod:`ptah.render.sentences`), and a drop
  gate's power note.
* With tags, one ``slice TAG`` suite per gated slice (none for an ungated one: an empty suite
  reads as a run of nothing): digest, cases and means as properties, its gates
  (``max-recall-drop@TAG``, then not in ``gates``) as test cases of ``ptah.slices.TAG``, each
  comparison's tests and the cases now failing or worse as output.

A case's ``time`` is its share of the run's search (the total spread evenly over runs, then
cases), so the suites add up to the total; ``file`` and ``line`` are its place in the corpus when
the caller knows it. Characters XML 1.0 cannot hold are written as ``\\xNN``-style escapes
(:func:`ptah.core.visible.visible`), so a hostile case id never makes the file unreadable.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING
from xml.sax.saxutils import escape, quoteattr

from ptah.core.measures import Measure
from ptah.core.report import CaseResult, Gate, Report, Run, counted
from ptah.core.report_parts import ListedSlice
from ptah.core.significance import p_value_phrase
from ptah.core.slicing import MIN_CASES
from ptah.render.cases import problems
from ptah.render.layout import number, signed
from ptah.render.sentences import (
    family_lines,
    finding_cell,
    findings,
    gate_slice,
    mean_text,
    power_phrase,
    slice_tests,
    verdict_sentence,
)

if TYPE_CHECKING:
    from ptah.core.corpus import Corpus

_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _clean(value: object) -> str:
    """``value`` as text XML 1.0 can hold: each character it cannot written as an escape (module
    docs)."""
    return _NOT_XML.sub(
        lambda m: (
            f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}"
        ),
        str(value),
    )


def _xml_text(value: object) -> str:
    """``value`` as XML character data: :func:`_clean`, then ``&<>`` escaped."""
    return escape(_clean(value))


def _attr(value: object) -> str:
    """``value`` as a quoted XML attribute value (newlines and tabs kept as character
    references)."""
    return quoteattr(_clean(value), {"\n": "&#10;", "\r": "&#13;", "\t": "&#9;"})


def render_junit(
    report: Report, lines: Mapping[str, int] | None = None, corpus_file: str | None = None
) -> str:
    """The JUnit XML document of ``report`` (module docs); ``lines`` maps case ids to their corpus
    lines."""
    total = report.total_seconds
    per_run = total / len(report.runs) if report.runs else 0.0
    suites = [_suite(report, run, per_run, lines or {}, corpus_file) for run in report.runs]
    slices = report.corpus.slices or {}
    whole = [gate for gate in report.gates if gate_slice(gate, slices) is None]
    suites.append(_gates(report, whole))
    gated = {gate_slice(gate, slices) for gate in report.gates}
    suites += [_slice_suite(report, tag, entry) for tag, entry in slices.items() if tag in gated]
    failures = sum(1 for run in report.runs for case in run.cases if not case.passed)
    failures += sum(1 for gate in report.gates if _failed(gate))
    tests = sum(len(run.cases) for run in report.runs) + len(report.gates)
    name = report.corpus.name or report.corpus.path or "corpus"
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<testsuites name={_attr(f"ptah evaluate {name}")} tests="{tests}" failures="{failures}" '
        f'errors="0" time="{total:.6f}">\n' + "".join(suites) + "</testsuites>\n"
    )


def _properties(pairs: list[tuple[str, object]]) -> str:
    items = "".join(
        f"      <property name={_attr(name)} value={_attr(value)}/>\n"
        for name, value in pairs
        if value is not None
    )
    return f"    <properties>\n{items}    </properties>\n"


def _suite(
    report: Report, run: Run, seconds: float, lines: Mapping[str, int], corpus_file: str | None
) -> str:
    generation = run.generation
    properties = _properties(
        [
            ("generation", generation.name),
            ("identity", generation.identity),
            ("model", generation.model),
            ("channel", run.channel),
            ("search", run.search.mode),
            ("corpus_digest", report.corpus.digest),
            ("corpus", report.corpus.path),
            ("created_at", report.created_at),
            ("verdict", report.verdict),
        ]
    )
    each = seconds / len(run.cases) if run.cases else 0.0
    classname = f"ptah.{run.name}.{run.channel}"
    cases = "".join(
        _case(case, classname, each, lines.get(case.id), corpus_file) for case in run.cases
    )
    failed = sum(1 for case in run.cases if not case.passed)
    return (
        f'  <testsuite name={_attr(f"{run.name} [{run.channel}]")} tests="{len(run.cases)}" failures="{failed}" errors="0" '
        f'skipped="0" time="{seconds:.6f}" timestamp={_attr(_timestamp(report.created_at))}>\n'
        f"{properties}{cases}  </testsuite>\n"
    )


def _timestamp(created_at: str) -> str:
    """ISO 8601 without the offset, as the Ant schema's ``xs:dateTime`` in JUnit files is usually
    written."""
    return created_at.replace("+00:00", "").rstrip("Z")


def _case(
    case: CaseResult, classname: str, seconds: float, line: int | None, corpus_file: str | None
) -> str:
    where = ""
    if corpus_file is not None:
        where = f" file={_attr(corpus_file)}" + (f' line="{line}"' if line is not None else "")
    head = f'    <testcase name={_attr(case.id)} classname={_attr(classname)} time="{seconds:.6f}"{where}'
    if case.passed:
        return head + "/>\n"
    found = problems(case)
    kind = "required" if case.missed else "forbidden"
    detail = "\n".join([f"query: {case.query}", *found, f"top {case.k}: {', '.join(case.keys)}"])
    return (
        f'{head}>\n      <failure message={_attr("; ".join(found))} type="{kind}">{_xml_text(detail)}</failure>\n'
        "    </testcase>\n"
    )


def _failed(gate: Gate) -> bool:
    """A gate that failed: not passed, and not inconclusive (a skipped test case, not a failure)."""
    return not gate.passed and not gate.inconclusive


def _gate_case(gate: Gate, classname: str) -> str:
    """A gate's test case: failed as the gate did, skipped when inconclusive, and a drop gate's
    power note (:func:`power_phrase`) as its output."""
    head = f'    <testcase name={_attr(f"{gate.name} ({gate.generation})")} classname={_attr(classname)} time="0.000000"'
    note = power_phrase(gate)
    said = "" if note is None else f"      <system-out>{_xml_text(note)}</system-out>\n"
    if gate.passed and not said:
        return head + "/>\n"
    failure = ""
    if not gate.passed:
        element = "skipped" if gate.inconclusive else "failure"
        kind = "inconclusive" if gate.inconclusive else "gate"
        failure = (
            f'      <{element} message={_attr(gate.detail)} type="{kind}">{_xml_text(gate.detail)}'
            f"</{element}>\n"
        )
    return f"{head}>\n{failure}{said}    </testcase>\n"


def _counts(gates: Sequence[Gate]) -> str:
    """A gate suite's ``tests``, ``failures``, ``errors`` and ``skipped`` attributes."""
    failed = sum(1 for gate in gates if _failed(gate))
    skipped = sum(1 for gate in gates if gate.inconclusive)
    return f'tests="{len(gates)}" failures="{failed}" errors="0" skipped="{skipped}"'


def _gates(report: Report, gates: Sequence[Gate]) -> str:
    """The ``gates`` suite: every gate but a slice's, and the verdict and findings as its output."""
    word, told = verdict_sentence(report)
    said = "\n".join([f"verdict: {word} — {told}", *findings(report), *family_lines(report)])
    return (
        f'  <testsuite name="gates" {_counts(gates)} '
        f'time="0.000000" timestamp={_attr(_timestamp(report.created_at))}>\n'
        + "".join(_gate_case(gate, "ptah.gates") for gate in gates)
        + f"    <system-out>{_xml_text(said)}</system-out>\n  </testsuite>\n"
    )


def _slice_suite(report: Report, tag: str, listed: ListedSlice) -> str:
    """The suite ``slice TAG``: the slice's digest, cases and each run's means as properties, its
    gates (``max-recall-drop@TAG``) as test cases, and its comparisons as output."""
    pairs: list[tuple[str, object]] = [
        ("slice_digest", listed.digest),
        ("cases", ", ".join(listed.cases)),
    ]
    for run in report.runs:
        means = (run.slices or {}).get(tag)
        if means is None:
            continue
        for key, mean in (means.means or {}).items():
            pairs.append(
                (f"{run.name} [{run.channel}] {Measure.parse(key).label}", mean_text(mean))
            )
        if means.judged is not None:
            pairs.append((f"{run.name} [{run.channel}] judged@k", number(means.judged.value)))
    gates = [gate for gate in report.gates if gate_slice(gate, report.corpus.slices or {}) == tag]
    said = [
        f"slice {tag}: {counted(len(listed.cases), 'case')}"
        + ("" if len(listed.cases) >= MIN_CASES else f", fewer than {MIN_CASES}: not measured")
    ]
    side = report.comparison
    comparisons = (
        []
        if side is None
        else [
            (str(candidate.run), str(side.reference), candidate.slices)
            for candidate in side.candidates
        ]
    )
    comparisons += [
        (
            str(comparison.against),
            f"the baseline {comparison.generation}",
            comparison.slices,
        )
        for comparison in report.comparisons
    ]
    for name, against, slices in comparisons:
        entry = (slices or {}).get(tag)
        if entry is None:
            continue
        if not entry.comparable:
            said.append(f"{name} vs {against}: not compared ({entry.why})")
            continue
        for test in slice_tests({tag: entry}):
            said.append(
                f"{name} vs {against}: {test.label} {signed(test.entry.delta)} {finding_cell(test.entry)} "
                f"({p_value_phrase(test.entry.test)}, adjusted {test.adjusted}, survives: {test.survives})"
            )
        if entry.failing:
            said.append(f"{name} vs {against}: now failing or worse: {', '.join(entry.failing)}")
    return (
        f"  <testsuite name={_attr(f'slice {tag}')} {_counts(gates)} "
        f'time="0.000000" timestamp={_attr(_timestamp(report.created_at))}>\n'
        + _properties(pairs)
        + "".join(_gate_case(gate, f"ptah.slices.{tag}") for gate in gates)
        + f"    <system-out>{_xml_text(chr(10).join(said))}</system-out>\n  </testsuite>\n"
    )


def pieces(report: Report, corpus: Corpus | None = None) -> list[str]:
    """The ``junit`` format (:mod:`ptah.render.formats`); with the ``corpus`` it measured, each case
    carries its file and line."""
    if corpus is None:
        return [render_junit(report)]
    return [render_junit(report, corpus.lines(), corpus.path)]
