"""The report as JUnit XML (``evaluate --junit FILE``), the test report CI systems draw natively.

One ``<testsuite>`` per run, named ``GENERATION [CHANNEL]``, with the run's
properties (generation, identity, model, channel, corpus digest, verdict)
and one ``<testcase>`` per corpus case (``classname`` ``ptah.GENERATION.CHANNEL``,
``name`` the case id): a ``<failure>`` when a required key was missed
(saying where it ranked) or a forbidden key leaked. Then one ``<testsuite>``
named ``gates`` with one ``<testcase>`` per gate, failed when the gate failed
(``type="gate"``) or is inconclusive (``type="inconclusive"``: the holes in
the judgements decide it; evaluate exits 4), and a ``<system-out>`` with the
verdict and every finding, in the sentences every format says
(:mod:`ptah.render.sentences`).

Times: a case's ``time`` is its share of the run's search (the report keeps
one time per step, not per case): the evaluation's total seconds spread
evenly over the runs, then over each run's cases; the suites' times add up
to the total. ``file`` and ``line`` of a case are its place in the corpus
when the caller knows it (``evaluate`` does; a re-rendered report does not).

The text is XML 1.0: characters XML cannot hold (C0 controls other than tab
and newline, lone surrogates, U+FFFE/U+FFFF) are written as ``\\xNN``-style
escapes (:func:`ptah.core.visible.visible`), so a hostile case id never makes
the file unreadable; everything else is escaped by the XML rules.
The schema the tests validate it against: ``tests/render/junit.xsd``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Mapping
from xml.sax.saxutils import escape, quoteattr

from ptah.core.report import CaseResult, Report, Run
from ptah.render.cases import problems
from ptah.render.sentences import findings, verdict_sentence

if TYPE_CHECKING:
    from ptah.core.corpus import Corpus

_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _clean(value: object) -> str:
    """``value`` as text XML 1.0 can hold: each character it cannot written as an escape (module docs)."""
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}",
                        str(value))


def _xml_text(value: object) -> str:
    """``value`` as XML character data: :func:`_clean`, then ``&<>`` escaped."""
    return escape(_clean(value))


def _attr(value: object) -> str:
    """``value`` as a quoted XML attribute value (newlines and tabs kept as character references)."""
    return quoteattr(_clean(value), {"\n": "&#10;", "\r": "&#13;", "\t": "&#9;"})


def render_junit(report: Report, lines: Mapping[str, int] | None = None, corpus_file: str | None = None) -> str:
    """The JUnit XML document of ``report`` (module docs); ``lines`` maps case ids to their corpus lines."""
    total = float(report.timings.get("total", 0.0) or 0.0)
    per_run = total / len(report.runs) if report.runs else 0.0
    suites = [_suite(report, run, per_run, lines or {}, corpus_file) for run in report.runs]
    suites.append(_gates(report))
    failures = sum(1 for run in report.runs for case in run.cases if not case.passed)
    failures += sum(1 for gate in report.gates if not gate.passed)
    tests = sum(len(run.cases) for run in report.runs) + len(report.gates)
    name = report.corpus.get("name") or report.corpus.get("path") or "corpus"
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f"<testsuites name={_attr(f'ptah evaluate {name}')} tests=\"{tests}\" failures=\"{failures}\" "
        f'errors="0" time="{total:.6f}">\n' + "".join(suites) + "</testsuites>\n"
    )


def _properties(pairs: list[tuple[str, object]]) -> str:
    items = "".join(f"      <property name={_attr(name)} value={_attr(value)}/>\n" for name, value in pairs
                    if value is not None)
    return f"    <properties>\n{items}    </properties>\n"


def _suite(report: Report, run: Run, seconds: float, lines: Mapping[str, int], corpus_file: str | None) -> str:
    generation = run.generation
    properties = _properties([
        ("generation", generation.get("name")),
        ("identity", generation.get("identity")),
        ("model", generation.get("model")),
        ("channel", run.channel),
        ("search", run.search.get("mode")),
        ("corpus_digest", report.corpus.get("digest")),
        ("corpus", report.corpus.get("path")),
        ("created_at", report.created_at),
        ("verdict", report.verdict),
    ])
    each = seconds / len(run.cases) if run.cases else 0.0
    classname = f"ptah.{run.name}.{run.channel}"
    cases = "".join(_case(case, classname, each, lines.get(case.id), corpus_file) for case in run.cases)
    failed = sum(1 for case in run.cases if not case.passed)
    return (
        f"  <testsuite name={_attr(f'{run.name} [{run.channel}]')} tests=\"{len(run.cases)}\" failures=\"{failed}\" errors=\"0\" "
        f'skipped="0" time="{seconds:.6f}" timestamp={_attr(_timestamp(report.created_at))}>\n'
        f"{properties}{cases}  </testsuite>\n"
    )


def _timestamp(created_at: str) -> str:
    """ISO 8601 without the offset, as the Ant schema's ``xs:dateTime`` in JUnit files is usually written."""
    return created_at.replace("+00:00", "").rstrip("Z")


def _case(case: CaseResult, classname: str, seconds: float, line: int | None, corpus_file: str | None) -> str:
    where = ""
    if corpus_file is not None:
        where = f" file={_attr(corpus_file)}" + (f' line="{line}"' if line is not None else "")
    head = f"    <testcase name={_attr(case.id)} classname={_attr(classname)} time=\"{seconds:.6f}\"{where}"
    if case.passed:
        return head + "/>\n"
    found = problems(case)
    kind = "required" if case.missed else "forbidden"
    detail = "\n".join([f"query: {case.query}", *found, f"top {case.k}: {', '.join(case.keys)}"])
    return (f"{head}>\n      <failure message={_attr('; '.join(found))} type=\"{kind}\">{_xml_text(detail)}</failure>\n"
            "    </testcase>\n")


def _gates(report: Report) -> str:
    cases = []
    for gate in report.gates:
        head = (f"    <testcase name={_attr(f'{gate.name} ({gate.generation})')} classname=\"ptah.gates\" "
                'time="0.000000"')
        if gate.passed:
            cases.append(head + "/>\n")
        else:
            kind = "inconclusive" if gate.inconclusive else "gate"
            cases.append(f"{head}>\n      <failure message={_attr(gate.detail)} type=\"{kind}\">{_xml_text(gate.detail)}"
                         "</failure>\n    </testcase>\n")
    failed = sum(1 for gate in report.gates if not gate.passed)
    word, told = verdict_sentence(report)
    said = "\n".join([f"verdict: {word} — {told}", *findings(report)])
    return (f'  <testsuite name="gates" tests="{len(report.gates)}" failures="{failed}" errors="0" skipped="0" '
            f'time="0.000000" timestamp={_attr(_timestamp(report.created_at))}>\n' + "".join(cases)
            + f"    <system-out>{_xml_text(said)}</system-out>\n  </testsuite>\n")


def pieces(report: Report, corpus: Corpus | None = None) -> list[str]:
    """The ``junit`` format (:mod:`ptah.render.formats`); with the ``corpus`` it measured, each case carries
    its file and line."""
    if corpus is None:
        return [render_junit(report)]
    return [render_junit(report, corpus.lines(), corpus.path)]
