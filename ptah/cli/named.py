"""Options that name a measure and give it a number, ``--OPTION NAME=X`` (``--detect
nDCG=0.02``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ptah.core.errors import InputError


def measure_values(
    option: str,
    given: Iterable[str],
    value: Callable[[str], float],
    again: str,
    found: dict[str, float] | None = None,
    *,
    tagged: bool = False,
) -> dict[str, float]:
    """Each ``OPTION NAME=X`` in ``given`` added to ``found``, keyed by the measure's string form
    (``nDCG``, ``MAP@10``); X is what ``value`` makes of its text (a ``ValueError`` says what is
    wrong). ``tagged``: X may end in a slice's ``@TAG`` (``recall=0.02@billing``), keyed
    ``recall@billing``. ``InputError`` (exit 2) for an unknown measure, a bad X, or a measure named
    twice (``again`` formats that sentence with the measure)."""
    from ptah.core.measures import Measure
    from ptah.core.visible import abbreviated

    result = dict(found or {})
    for text in given:
        name, sep, number = text.partition("=")
        number, at, tag = number.partition("@") if tagged else (number, "", "")
        try:
            measure = str(Measure.parse(name)) + (f"@{tag}" if at else "")
            amount = value(number)
        except ValueError as exc:
            detail = str(exc) if sep and name else f"write NAME=X, e.g. {option} nDCG=0.02"
            raise InputError(f"{option} {abbreviated(text)}: {detail}") from None
        if measure in result:
            raise InputError(f"{option} {abbreviated(text)}: {again.format(measure)}")
        result[measure] = amount
    return result
