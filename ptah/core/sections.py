"""Sections: the parts of a report, each computed from the evaluation's context, in order.

A section has a ``name``; ``compute(context)`` returns its typed, frozen result (or None: nothing
to report), which later sections read as ``context.results[name]``; ``gates(context)`` the gates
it contributes, once every section has computed. ptah's own sections (the runs' evidence, the
verdicts against a baseline, p95 times, stale judgements, the side-by-side comparison, excerpts)
and a plugin's come in through the door (hook ``register_sections``), in the order registered.

A plugin section's result is written in the report under ``sections.NAME`` by its ``to_dict()``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ptah.core.registry import Registry

if TYPE_CHECKING:
    from ptah.core.corpus import Corpus
    from ptah.core.report import Gate, Report, Run
    from ptah.core.request import EvaluationRequest


class Context(Protocol):
    """What every section may read: the corpus, the request, the measured runs, the baseline
    (re-scored from its rankings; None without one) and the results of the sections before."""

    @property
    def corpus(self) -> Corpus: ...

    @property
    def request(self) -> EvaluationRequest: ...

    @property
    def runs(self) -> tuple[Run, ...]: ...

    @property
    def baseline(self) -> Report | None: ...

    @property
    def results(self) -> Mapping[str, Any]: ...


@runtime_checkable
class Section(Protocol):
    """A part of the report (see the module docs)."""

    name: str

    def compute(self, context: Any) -> Any: ...

    def gates(self, context: Any) -> Sequence[Gate]: ...


SECTIONS: Registry[Section] = Registry("report section", hook="register_sections")


def register_section(section: Section) -> Section:
    """Add a section after those registered; its name must be new."""
    return SECTIONS.register(section.name, section)


def sections() -> tuple[Section, ...]:
    """Every registered section, in the order registered."""
    return tuple(SECTIONS)
