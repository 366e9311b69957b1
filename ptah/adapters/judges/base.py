"""What ``ptah corpus judge-model`` calls: a :class:`Judge` grades (query, judging text) pairs; a
:class:`JudgeKind` opens one from a judge's settings (``judges:`` of the specification)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ptah.adapters.embedders.base import Embedder
    from ptah.core.spec import JudgeSettings


@dataclass(frozen=True)
class JudgeContext:
    """What a kind may need besides its settings: ``root`` (the specification's folder), ``env`` (a
    service's key variable is read from it), ``embedder`` (a generation's name -> its opened
    embedder) and ``scale`` (the grades the corpus uses, ascending, 0 first: a judge answers one of
    them)."""

    root: str
    env: Mapping[str, str]
    embedder: Callable[[str], Embedder]
    scale: tuple[float, ...]


@runtime_checkable
class Judge(Protocol):
    """Grades pairs. One member is optional, for judges that ask a service (read through
    :func:`ptah.adapters.embedders.base.usage_of`): ``usage()``, a JSON dict of what was asked since
    the last call (``requests``, ``retries``, ``prompt_tokens``...)."""

    def grades(self, pairs: Sequence[tuple[str, str]]) -> list[float | None]:
        """One grade of the context's scale per ``(query, judging text)`` pair, in order; None for
        an answer the judge refused (it is counted, never recorded)."""
        ...

    def describe(self) -> dict:
        """What grades, as JSON values: ``kind`` and whatever decides the grades (a model's digest,
        a prompt's digest, the thresholds). The judge's identity is the digest of it and the
        scale."""
        ...


@runtime_checkable
class JudgeKind(Protocol):
    """One kind of judge (``encoder``, ``chat`` or a plug-in's), named by ``kind:``."""

    name: str

    def open(self, settings: JudgeSettings, context: JudgeContext) -> Judge:
        """The judge, loaded; :class:`ptah.core.errors.InputError` (exit 2) for a setting it lacks,
        an :class:`~ptah.core.errors.OperationalError` (exit 3) when what it needs cannot be had."""
        ...
