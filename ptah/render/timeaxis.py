"""A time axis for the SVG charts of the trend page and the server's page: x placed by time, labels
that never overlap.

The points are placed by their time (UTC) between the first and the last;
one point alone sits in the middle. Each distinct time gets a label -- its
date (``2026-12-02``), or, when every point falls on one day, its time of day
(``14:05``, ``14:05:09`` when they span under ten minutes) with the day in the
axis caption -- and labels are kept left to right only where a label fits
beside the last one kept (:data:`CHARACTER_PX` per character, generous for
the charts' 11 px sans-serif, and :data:`GAP_PX` between), and where it does
not repeat it. Labels are in the SVG's own units, so a chart scaled to a
narrow window keeps them apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape

CHARACTER_PX = 7.0
GAP_PX = 10.0


@dataclass(frozen=True)
class TimeAxis:
    """Where a time goes on a chart whose plot starts at ``left`` and is ``width`` wide."""

    times: tuple[datetime, ...]  # every distinct time, in UTC, oldest first
    left: float
    width: float

    def x(self, when: datetime) -> float:
        start, end = self.times[0].timestamp(), self.times[-1].timestamp()
        if end == start:
            return self.left + self.width / 2
        return self.left + (when.timestamp() - start) / (end - start) * self.width

    @property
    def one_day(self) -> bool:
        return self.times[0].date() == self.times[-1].date()

    def label(self, when: datetime) -> str:
        if not self.one_day:
            return when.strftime("%Y-%m-%d")
        short = (self.times[-1] - self.times[0]).total_seconds() < 600
        return when.strftime("%H:%M:%S" if short else "%H:%M")

    def ticks(self) -> list[tuple[float, str]]:
        """(x, label) of each label kept: left to right, each clear of the one before and unlike
        it."""
        kept: list[tuple[float, str]] = []
        for when in self.times:
            x, text = self.x(when), self.label(when)
            if kept:
                before, shown = kept[-1]
                room = (len(text) + len(shown)) / 2 * CHARACTER_PX + GAP_PX
                if text == shown or x - before < room:
                    continue
            kept.append((x, text))
        return kept

    def svg(self, y: float) -> str:
        """The labels at baseline ``y`` (class ``x-tick``, each a tick mark above it) and the
        caption below them."""
        parts = [
            f'<line x1="{x:.1f}" y1="{y - 14:.1f}" x2="{x:.1f}" y2="{y - 10:.1f}" stroke="#8a93a5"/>'
            f'<text class="x-tick" x="{x:.1f}" y="{y:.1f}" text-anchor="middle">{escape(text)}</text>'
            for x, text in self.ticks()
        ]
        caption = f"time of day, UTC, {self.times[0]:%Y-%m-%d}" if self.one_day else "date, UTC"
        parts.append(
            f'<text class="x-caption" x="{self.left + self.width / 2:.1f}" y="{y + 15:.1f}" '
            f'text-anchor="middle" fill="#5b6578">{caption}</text>'
        )
        return "".join(parts)


def time_axis(times: Sequence[datetime], left: float, width: float) -> TimeAxis:
    """The axis through ``times`` (a time without a zone is read as UTC); at least one time."""
    utc = {
        (when if when.tzinfo is not None else when.replace(tzinfo=UTC)).astimezone(UTC)
        for when in times
    }
    return TimeAxis(tuple(sorted(utc)), left, width)
