"""Which judge a ``judges:`` entry's ``kind:`` names: ptah's ``encoder`` and ``chat``, and plug-ins'
kinds.

A package adds a kind by an entry point in the group ``ptah.judges`` naming a
:class:`~ptah.adapters.judges.base.JudgeKind` object or a function
``register(registry)`` (the rules of :mod:`ptah.core.registry`)::

    [project.entry-points."ptah.judges"]
    toy = "toy_judge:register"
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ptah.adapters.embedders.base import usage_of
from ptah.adapters.judges.base import Judge, JudgeContext, JudgeKind
from ptah.core.errors import PluginError
from ptah.core.registry import KindRegistry

if TYPE_CHECKING:
    from ptah.core.spec import JudgeSettings

GROUP = "ptah.judges"


class JudgeRegistry(KindRegistry[JudgeKind]):
    hook, group = "register_judges", GROUP
    what, shape, protocol = "judge kind", "a name and open(settings, context)", JudgeKind


REGISTRY = JudgeRegistry()


def judge_kinds() -> tuple[str, ...]:
    """The names of the judge kinds ptah can open: its own first, then the plugins'."""
    return REGISTRY.names()


def open_judge(name: str, settings: JudgeSettings, context: JudgeContext) -> CheckedJudge:
    """The judge ``settings.kind`` opens, its answers checked against the scale, and its
    identity."""
    kind = REGISTRY.get(settings.kind)
    judge = kind.open(settings, context)
    if not isinstance(judge, Judge):
        raise PluginError(
            f'the judge kind "{kind.name}" opened {judge!r}; open() returns an object with '
            "grades(pairs) and describe()"
        )
    return CheckedJudge(name, judge, context.scale)


class CheckedJudge:
    """A judge whose every answer is checked: a grade of the scale or None (refused), one per
    pair."""

    def __init__(self, name: str, judge: Judge, scale: tuple[float, ...]):
        self.name, self.judge, self.scale = name, judge, scale
        described = json.dumps(
            {"judge": judge.describe(), "scale": list(scale)},
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
            allow_nan=False,
        )
        self.identity = "sha256:" + hashlib.sha256(described.encode("utf-8")).hexdigest()
        self.by = f"model:{name}@{self.identity}"
        self.off_scale = 0  # answers ptah refused: not a grade of the scale

    def grades(self, pairs: Sequence[tuple[str, str]]) -> list[float | None]:
        answers = list(self.judge.grades(pairs))
        if len(answers) != len(pairs):
            raise PluginError(
                f'the judge "{self.name}" gave {len(answers)} grades for {len(pairs)} pairs; a judge '
                "gives one grade (or None) per pair"
            )
        checked = [
            None
            if grade is None
            or isinstance(grade, bool)
            or not isinstance(grade, (int, float))
            or math.isnan(grade)
            or float(grade) not in self.scale
            else float(grade)
            for grade in answers
        ]
        self.off_scale += sum(
            1 for grade, kept in zip(answers, checked) if grade is not None and kept is None
        )
        return checked

    def describe(self) -> dict:
        return self.judge.describe()

    def usage(self) -> dict | None:
        return usage_of(self.judge)
