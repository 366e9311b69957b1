"""TREC run and qrels lines, so trec_eval, pytrec_eval and ranx users can check ptah's numbers.

Pure: these functions build the lines; the CLI writes them (atomically).

Run lines (``QID Q0 DOCID RANK SCORE TAG``)
-------------------------------------------
One line per ranked result of one run of a report (``runs[i].cases[j].results``):
the case id as QID, the literal ``Q0``, the key as DOCID, the 1-based rank in
ptah's order (score descending, key ascending on ties), the score as Python's
shortest round-trip ``repr`` of the double (exactly the score in the report),
and the run's tag. A case with no results writes no line (trec_eval then
leaves the query out of its means unless run with ``-c``).

Ties: trec_eval ignores the RANK column. It re-sorts each query's lines by
score descending and breaks ties by DOCID *descending*, the opposite of
ptah's key-ascending rule. The true scores are written, never nudged apart,
so on a ranking with tied scores trec_eval may order (and, at a cutoff,
select) the tied keys differently from ptah, and its numbers may then differ.
The report flags every such tie (``cases[j].ties``); without ties the numbers
agree.

Qrels lines (``QID 0 DOCID GRADE``)
-----------------------------------
One line per graded key of each case (its effective grades: the declared
``relevant``, else grade 1 per ``required`` key), cases in corpus order and
keys in code point order. trec_eval reads grades as integers, so a grade is
written as an integer when it is one. A fractional grade is refused unless a
``scale`` is given: every grade is then multiplied by ``scale`` and must land
on a whole number (within 1e-9 relative, to absorb binary rounding such as
``0.3 * 10``). Scaling all grades by one factor changes no measure ptah
reports: recall and MRR only ask whether a grade is above 0, and nDCG's
linear gain scales its DCG and ideal DCG alike.

Fields are separated by single spaces, and trec_eval splits lines on any
whitespace, so a case id, key or tag holding whitespace (including the
U+001F separator of composite keys, which Python's ``str.split`` also splits
on) cannot be written: :class:`InputError` names them.
"""

from __future__ import annotations

import math
from typing import Iterable, Mapping

from ptah.core.corpus import Corpus
from ptah.core.errors import InputError

DEFAULT_TAG = "ptah"
MAX_NAMED = 5
_INTEGRAL_TOLERANCE = 1e-9


def run_lines(report: Mapping, run_index: int = 0, tag: str | None = None) -> list[str]:
    """The TREC run lines of ``report["runs"][run_index]`` (see the module docs).

    ``tag`` defaults to the run's generation name, else ``ptah``. Raises
    :class:`InputError` for a run index the report lacks, and for case ids,
    keys or a tag that hold whitespace or are empty.
    """
    runs = report.get("runs") or []
    if not 0 <= run_index < len(runs):
        raise InputError(f"the report holds {len(runs)} run(s); there is no run number {run_index + 1}")
    run = runs[run_index]
    if tag is None:
        tag = (run.get("generation") or {}).get("name") or DEFAULT_TAG
    _check_fields("tag", [tag])
    cases = run.get("cases") or []
    _check_fields("case id", [case["id"] for case in cases])
    _check_fields("key", [result["key"] for case in cases for result in case["results"]])
    lines: list[str] = []
    for case in cases:
        for rank, result in enumerate(case["results"], start=1):
            score = float(result["score"])
            if not math.isfinite(score):
                raise InputError(
                    f'case "{case["id"]}": key "{result["key"]}" has the score {score!r}, '
                    "which a TREC run cannot rank"
                )
            lines.append(f"{case['id']} Q0 {result['key']} {rank} {score!r} {tag}")
    return lines


def qrels_lines(corpus: Corpus, scale: float | None = None) -> list[str]:
    """The TREC qrels lines of ``corpus``'s judgements (see the module docs).

    Raises :class:`InputError` for a fractional grade without ``scale`` (or one
    that ``scale`` does not make whole), a ``scale`` that is not a positive
    finite number, and case ids or keys that hold whitespace or are empty.
    """
    if scale is not None and (isinstance(scale, bool) or not math.isfinite(scale) or scale <= 0):
        raise InputError(f"the grade scale must be a positive number, not {scale!r}")
    _check_fields("case id", [case.id for case in corpus.cases])
    _check_fields("key", [key for case in corpus.cases for key in case.relevant])
    lines: list[str] = []
    for case in corpus.cases:
        for key in sorted(case.relevant):
            grade = _integer_grade(case.relevant[key], scale, case.id, key)
            lines.append(f"{case.id} 0 {key} {grade}")
    return lines


def _integer_grade(grade: float, scale: float | None, case_id: str, key: str) -> int:
    value = grade * scale if scale is not None else grade
    if not math.isfinite(value):
        raise InputError(f'case "{case_id}": key "{key}" has the grade {grade!r}, which the scale {scale!r} makes '
                         "too large to write; choose a smaller scale")
    whole = round(value)
    if abs(value - whole) <= _INTEGRAL_TOLERANCE * max(1.0, abs(value)) and whole >= 1:
        return int(whole)
    if scale is None:
        raise InputError(
            f'case "{case_id}": key "{key}" has the grade {grade!r}, and trec_eval reads integer grades only; '
            "give a scale that makes every grade whole (e.g. 2 for halves, 10 for tenths)"
        )
    raise InputError(
        f'case "{case_id}": key "{key}" has the grade {grade!r}, which the scale {scale!r} makes {value!r}, '
        "not a whole number of at least 1; choose a scale that makes every grade whole"
    )


def _check_fields(what: str, values: Iterable[str]) -> None:
    """Refuse empty values and values holding whitespace, naming the first few distinct ones."""
    offending: dict[str, None] = {}
    for value in values:
        if value == "" or any(char.isspace() for char in value):
            offending.setdefault(value, None)
    if offending:
        named = ", ".join(_shown(value) for value in list(offending)[:MAX_NAMED])
        more = f" and {len(offending) - MAX_NAMED} more" if len(offending) > MAX_NAMED else ""
        raise InputError(
            f"a TREC file separates its fields by whitespace, so a {what} cannot be empty or hold whitespace "
            f"(the U+001F of composite keys counts): {named}{more}"
        )


def _shown(value: str) -> str:
    """A value quoted so that its whitespace is visible: ``"a b"``, ``"acme\\u001f2"``."""
    out = []
    for char in value:
        if char == '"' or char == "\\":
            out.append("\\" + char)
        elif char == " " or char.isprintable():
            out.append(char)
        else:
            out.append(f"\\u{ord(char):04x}" if ord(char) <= 0xFFFF else f"\\U{ord(char):08x}")
    return '"' + "".join(out) + '"'
