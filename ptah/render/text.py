"""Values as they read on a terminal: from files and databases made visible, numbers and deltas
formatted.

Every case id, query, key, path, generation, table or column name and every
message that may quote one passes through :func:`plain` or :func:`markup` on
its way to a terminal (see :mod:`ptah.core.visible` for what is escaped and
how); files ptah writes (reports, runs, pages) hold the exact values.
"""

from __future__ import annotations

import re

from ptah.core.compared import Interval
from ptah.core.flips import completions, mean_completions
from ptah.core.measures import Measure
from ptah.core.report import CaseResult, Run
from ptah.core.visible import visible

# What rich reads as a tag, with the backslashes before it: ``[bold]``, ``\\[/red]`` (see
# :func:`markup`).
_TAG = re.compile(r"(\\*)(\[[a-z#/@][^\[]*?])")


def plain(value: object) -> str:
    """``value`` as one line for ``typer.echo``: controls, newlines included, written as escapes."""
    return visible(str(value))


def markup(value: object) -> str:
    """``value`` as one line for rich: controls escaped, and ``[…]`` kept from reading as markup.

    Escaped as ``rich.markup.escape`` escapes, without importing rich: a backslash before each tag,
    the backslashes already there doubled, and a trailing lone backslash doubled so that it escapes
    nothing that follows."""
    text = _TAG.sub(lambda found: found.group(1) * 2 + "\\" + found.group(2), visible(str(value)))
    return text + "\\" if text.endswith("\\") and not text.endswith("\\\\") else text


def unmarked(text: str) -> str:
    """Markup as plain text: its tags dropped and each escaped tag its text, the backslashes before
    a tag halved (what :func:`markup` escaped reads as the value again)."""
    return _TAG.sub(
        lambda found: (
            "\\" * (len(found.group(1)) // 2) + found.group(2) * (len(found.group(1)) % 2)
        ),
        text,
    )


def number(value: float | None) -> str:
    """A measure's value: four decimals, or ``N/A``."""
    return "N/A" if value is None else f"{value:.4f}"


def bounded(value: float | None, high: float | None) -> str:
    """A mean's judged value and, where the holes move it, its value with every hole relevant, the
    smaller first (nDCG's can be below the judged value): ``0.5000..0.7500``."""
    if high is None or value is None or high == value:
        return number(value)
    return f"{min(value, high):.4f}..{max(value, high):.4f}"


def ranged(value: float | None, bounds: tuple[float, float] | None) -> str:
    """A value and, where the holes move it, the least and the greatest it takes however they are
    judged (:func:`ptah.core.flips.completions`): ``0.8503..1.0000``; the value alone where they do
    not move it."""
    if value is None or bounds is None or f"{bounds[0]:.4f}" == f"{bounds[1]:.4f}":
        return number(value)
    return f"{bounds[0]:.4f}..{bounds[1]:.4f}"


def case_range(case: CaseResult, name: str) -> str:
    """A case's value of measure ``name`` and its interval however its holes are judged
    (:func:`ranged`); a report that does not list the holes has only the two bounds
    (:func:`bounded`)."""
    if case.holes is None:
        return bounded(case.values.get(name), (case.highs or {}).get(name))
    return ranged(case.values.get(name), completions(case, Measure.parse(name)))


def mean_range(run: Run, name: str) -> str:
    """A run's mean of measure ``name`` and its interval however the holes of its cases are judged;
    a report that does not list the holes has only the two bounds (:func:`bounded`)."""
    mean = run.means[name]
    if any(case.holes is None for case in run.cases):
        return bounded(mean.value, mean.high)
    return ranged(mean.value, mean_completions(run.cases, Measure.parse(name)))


def signed(value: float | None) -> str:
    """A difference with its sign, four decimals: ``+0.0625``, or ``N/A``."""
    return "N/A" if value is None else f"{value:+.4f}"


def interval(found: Interval | None) -> str:
    """An interval of differences as the files write it: ``[-0.1875, +0.0000]``, or ``N/A``."""
    return "N/A" if found is None else f"[{found.low:+.4f}, {found.high:+.4f}]"


def milliseconds(value: float | None, *, sign: bool = False) -> str:
    """A time in milliseconds, ``544.1 ms`` (``+180.2 ms`` with ``sign``): one decimal, two under 1
    ms so that a fast stage does not read 0; ``N/A`` when it was not timed."""
    if value is None:
        return "N/A"
    places = 1 if abs(value) >= 1 else 2
    return f"{value:{'+' if sign else ''},.{places}f} ms"


def delta(value: float | None) -> str:
    """A signed difference in rich markup: green when up, red when down, dim when none; ``N/A`` when
    undefined."""
    if value is None:
        return "N/A"
    colour = "green" if value > 0 else "red" if value < 0 else "dim"
    return f"[{colour}]{signed(value)}[/{colour}]"
