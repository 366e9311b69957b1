"""TREC qrels lines (``QID 0 DOCID GRADE``) of a corpus's judgements, so trec_eval, pytrec_eval and
ranx users can check ptah's numbers; the run side is :func:`ptah.render.trec.run_lines`.

Pure: the CLI writes the lines (atomically). One line per graded key of each case (the declared
``relevant``, else grade 1 per ``required`` key), cases in corpus order, keys in code point order.
A grade is written as an integer; a fractional one is refused unless a ``scale`` multiplies every
grade onto a whole number (within 1e-9 relative, for ``0.3 * 10``), which changes no measure ptah
reports (recall and MRR ask only grade > 0; nDCG's gain scales DCG and ideal DCG alike). Fields
are single-space separated and trec_eval splits on any whitespace, so a case id, key or tag holding
whitespace (the U+001F of composite keys included) is an :class:`InputError` naming it
(:func:`check_fields`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from ptah.core.corpus import Corpus
from ptah.core.errors import InputError

MAX_NAMED = 5
_INTEGRAL_TOLERANCE = 1e-9


def qrels_lines(corpus: Corpus, scale: float | None = None) -> list[str]:
    """The TREC qrels lines of ``corpus``'s judgements (see the module docs).

    Raises :class:`InputError` for a fractional grade without ``scale`` (or one
    that ``scale`` does not make whole), a ``scale`` that is not a positive
    finite number, and case ids or keys that hold whitespace or are empty.
    """
    if scale is not None and (isinstance(scale, bool) or not math.isfinite(scale) or scale <= 0):
        raise InputError(f"the grade scale must be a positive number, not {scale!r}")
    check_fields("case id", [case.id for case in corpus.cases])
    check_fields("key", [key for case in corpus.cases for key in case.relevant])
    lines: list[str] = []
    for case in corpus.cases:
        for key in sorted(case.relevant):
            grade = _integer_grade(case.relevant[key], scale, case.id, key)
            lines.append(f"{case.id} 0 {key} {grade}")
    return lines


def _integer_grade(grade: float, scale: float | None, case_id: str, key: str) -> int:
    value = grade * scale if scale is not None else grade
    if not math.isfinite(value):
        raise InputError(
            f'case "{case_id}": key "{key}" has the grade {grade!r}, which the scale {scale!r} makes '
            "too large to write; choose a smaller scale"
        )
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


def check_fields(what: str, values: Iterable[str]) -> None:
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
