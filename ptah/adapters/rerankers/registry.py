"""Which reranker a rerank stage's ``kind:`` names: a registry that installed packages extend.

ptah registers ``cross-encoder``, ``bi-encoder`` and ``service``. A package adds
a kind by declaring an entry point in the group ``ptah.rerankers`` that names
either a :class:`~ptah.adapters.rerankers.base.RerankerKind` object or a
function ``register(registry)`` calling ``registry.register(kind)``::

    [project.entry-points."ptah.rerankers"]
    toy = "toy_reranker:register"

Entry points are loaded once, at the first lookup, after ptah's own kinds. An
unknown kind is an :class:`InputError` (exit 2) naming the registered kinds; a
plugin that cannot be loaded, registers something that is not a kind, or
reuses a kind's name is a :class:`PluginError` (exit 3) naming its entry point,
and fails every later lookup too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ptah.adapters.embedders.base import usage_of
from ptah.adapters.rerankers.base import RerankContext, Reranker, RerankerKind
from ptah.core.errors import OperationalError, PluginError
from ptah.core.registry import KindRegistry

if TYPE_CHECKING:
    from ptah.core.spec import RerankSettings

GROUP = "ptah.rerankers"


class RerankerRegistry(KindRegistry[RerankerKind]):
    """Reranker kinds by name; ptah's and the installed plugins' registered at the first lookup.

    ``discover=False`` gives an empty registry holding only what is registered on it (tests).
    """

    hook, group = "register_rerankers", GROUP
    what, shape, protocol = "reranker kind", "a name and open(settings, context)", RerankerKind


REGISTRY = RerankerRegistry()


def reranker_kinds() -> tuple[str, ...]:
    """The names of the kinds ptah can open: its own three first, then the plugins'."""
    return REGISTRY.names()


def open_reranker(settings: RerankSettings, context: RerankContext) -> Reranker:
    """The reranker ``settings.kind`` opens, its scores checked (one finite float64 per text).

    :class:`InputError` (exit 2) for an unknown kind (naming the registered
    ones) or a setting the kind needs and lacks; what opening the kind raises
    otherwise (a missing model: exit 3).
    """
    kind = REGISTRY.get(settings.kind)
    reranker = kind.open(settings, context)
    if not isinstance(reranker, Reranker):
        raise PluginError(
            f'the reranker kind "{kind.name}" opened {reranker!r}; open() returns an object with '
            "scores(query, texts) and describe()"
        )
    return CheckedReranker(kind.name, reranker)


class CheckedReranker:
    """A reranker whose every answer is checked: one finite score per text, as float64 (a plug-in's
    too)."""

    def __init__(self, kind: str, reranker: Reranker):
        self.kind, self.reranker = kind, reranker

    def scores(self, query: str, texts: Sequence[str]) -> np.ndarray:
        try:
            scores = np.asarray(self.reranker.scores(query, texts), dtype=np.float64)
        except (TypeError, ValueError):
            raise OperationalError(f"{self._who()} gave scores that are not numbers") from None
        if scores.shape != (len(texts),):
            raise OperationalError(
                f"{self._who()} gave {scores.size} scores for {len(texts)} texts; a reranker "
                "gives one score per text"
            )
        if not np.isfinite(scores).all():
            raise OperationalError(
                f"{self._who()} gave a score that is not a finite number "
                f"({scores[~np.isfinite(scores)][0]}), so the candidates cannot be ranked on it"
            )
        return scores

    def describe(self) -> dict:
        return self.reranker.describe()

    def usage(self) -> dict | None:
        return usage_of(self.reranker)

    def _who(self) -> str:
        model = self.reranker.describe().get("model")
        return f"the {self.kind} reranker" + (f' (model "{model}")' if model else "")
