"""The sentences of a report -- its verdict, each gate, each finding -- built once for every format.

Each format only marks the words up: a value from a file or the source comes in quoted as the format quotes
it (a code span, escaped markup), or plain where the format escapes the whole sentence (HTML, XML). A
finding's sentence follows its finding, so it agrees with the cell beside it; a difference whose interval
excludes 0 but whose test finds none is "no clear difference", never "within noise".
"""

from __future__ import annotations

from typing import Callable, Mapping

from ptah.core.measures import Measure
from ptah.core.report import Gate, Report
from ptah.core.request import DEFAULT_LEVEL
from ptah.core.significance import p_value_phrase
from ptah.core.verdicts import counted


def interval_text(found: Mapping | None) -> str:
    """An interval of differences as sentences and the terminal write it: ``-0.1875..+0.0000``, or ``N/A``."""
    return "N/A" if found is None else f"{found['low']:+.4f}..{found['high']:+.4f}"


def verdict_sentence(report: Report) -> tuple[str, str]:
    """The verdict's word (``pass``, ``FAIL``, ``INCONCLUSIVE``) and what decided it, counting the gates."""
    gates = report.gates
    total = counted(len(gates), "gate")
    failed = [gate for gate in gates if not gate.passed and not gate.inconclusive]
    undecided = [gate for gate in gates if gate.inconclusive]
    if report.verdict == "inconclusive":
        return "INCONCLUSIVE", (f"the holes in the judgements decide {len(undecided)} of {total}; "
                                "judge them and evaluate again")
    if report.verdict != "pass":
        more = f"; the holes in the judgements decide {len(undecided)} more" if undecided else ""
        return "FAIL", f"{len(failed)} of {total} failed{more}"
    return "pass", {1: "the one gate", 2: "both gates"}.get(len(gates), f"all {total}") + " passed"


def gate_word(gate: Gate) -> str:
    return "pass" if gate.passed else "INCONCLUSIVE" if gate.inconclusive else "FAIL"


def gate_sentence(gate: Gate, quote: Callable[[object], str] = str, mark: Callable[[str], str] = str) -> str:
    """``WORD NAME (RUN): DETAIL``, the word marked by ``mark`` and the values quoted by ``quote``; never cut."""
    return f"{mark(gate_word(gate))} {quote(gate.name)} ({quote(gate.generation)}): {quote(gate.detail)}"


def level_of(report: Report) -> float:
    """The interval's level the report's statistics were drawn at."""
    return DEFAULT_LEVEL if report.comparison is None else report.comparison.statistics["bootstrap"]["level"]


def finding_sentence(run: str, against: str, key: str, entry: Mapping, level: float) -> str:
    """One sentence on ``run`` against ``against`` (both already quoted) on measure ``key``: the finding, the
    interval, p and the cases that moved (module docs)."""
    label, change, finding = Measure.parse(key).label, entry.get("delta"), entry["finding"]
    if entry.get("test") is None or change is None:
        return f"{run} vs {against}: {label} cannot be compared (no case defines it on both sides)"
    spread = f"{round(level * 100)}% CI {interval_text(entry['interval'])}, {p_value_phrase(entry['test'])}"
    told = f"({spread}; {counted(entry['wins'], 'case')} better, {entry['losses']} worse, {entry['ties']} tied)"
    if finding in ("better", "worse"):
        return f"{run} is {finding} than {against} on {label} by {abs(change):.4f} {told}"
    if finding.startswith("inconclusive"):
        why = "unjudged rows, taken relevant, would change it"
    elif entry["interval"] and (entry["interval"]["low"] > 0 or entry["interval"]["high"] < 0):
        finding, why = "no clear difference", "the interval excludes 0 but the test does not find a difference"
    else:
        return f"{run} vs {against}: {label} {change:+.4f} is within noise {told}"
    return f"{run} vs {against}: {label} {change:+.4f} is {finding}: {why} {told}"


def finding_brief(key: str, change: float | None, entry: Mapping) -> str:
    """A finding in a few words, for a line of several: ``recall -0.1600 worse (p = 0.0312)``."""
    text = f"{Measure.parse(key).label} {'N/A' if change is None else f'{change:+.4f}'} {entry['finding']}"
    return text + (f" ({p_value_phrase(entry['test'])})" if entry["finding"] in ("better", "worse") and entry.get("test") else "")


def findings(report: Report, quote: Callable[[object], str] = str) -> list[str]:
    """Every finding's sentence: each candidate against the reference run, then each run against the baseline."""
    level = level_of(report)
    found = []
    if report.comparison is not None:
        for candidate in report.comparison.candidates:
            found += candidate_findings(candidate, str(report.comparison.reference), level, quote)
    for run, comparison in zip(report.runs, report.comparisons):
        found += baseline_findings(run.name, comparison.data, level, quote)
    return found


def candidate_findings(candidate: Mapping, reference: str, level: float, quote: Callable[[object], str] = str) -> list[str]:
    """The finding sentences of one candidate run against the reference run."""
    return [finding_sentence(quote(candidate["run"]), quote(reference), key, entry, level)
            for key, entry in candidate["measures"].items()]


def baseline_findings(run: str, data: Mapping, level: float, quote: Callable[[object], str] = str) -> list[str]:
    """The finding sentences of one run against the baseline's reference run."""
    against = f"the baseline {quote(data.get('generation'))}"
    return [finding_sentence(quote(run), against, key, entry, level)
            for key, entry in (data.get("significance") or {}).items()]
