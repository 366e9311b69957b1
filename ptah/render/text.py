"""Values as they read on a terminal: from files and databases made visible, numbers and deltas formatted.

Every case id, query, key, path, generation, table or column name and every
message that may quote one passes through :func:`plain` or :func:`markup` on
its way to a terminal (see :mod:`ptah.core.visible` for what is escaped and
how); files ptah writes (reports, runs, pages) hold the exact values.
"""

from __future__ import annotations

from ptah.core.visible import visible


def plain(value: object) -> str:
    """``value`` as one line for ``typer.echo``: controls, newlines included, written as escapes."""
    return visible(str(value))


def markup(value: object) -> str:
    """``value`` as one line for rich: controls escaped, and ``[…]`` kept from reading as markup."""
    from rich.markup import escape  # here, so that a command printing no table (``--json``) never imports rich

    return escape(visible(str(value)))


def number(value: float | None) -> str:
    """A measure's value: four decimals, or ``N/A``."""
    return "N/A" if value is None else f"{value:.4f}"


def bounded(value: float | None, high: float | None) -> str:
    """A measure's value and, where the holes move it, its high bound: ``0.5000..0.7500`` (low..high)."""
    if high is None or value is None or high == value:
        return number(value)
    return f"{value:.4f}..{high:.4f}"


def delta(value: float | None) -> str:
    """A signed difference in rich markup: green when up, red when down, dim when none; ``N/A`` when undefined."""
    if value is None:
        return "N/A"
    colour = "green" if value > 0 else "red" if value < 0 else "dim"
    return f"[{colour}]{value:+.4f}[/{colour}]"
