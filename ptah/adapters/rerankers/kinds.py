"""ptah's own reranker kinds, registered through the door (:mod:`ptah.core.plugins`)."""

from __future__ import annotations

from collections.abc import Callable

from ptah.core.plugins import hookimpl


@hookimpl
def register_rerankers(register: Callable) -> None:
    from ptah.adapters.rerankers.bi_encoder import BiEncoderKind
    from ptah.adapters.rerankers.cross_encoder import CrossEncoderKind
    from ptah.adapters.rerankers.service import ServiceKind

    register(CrossEncoderKind())
    register(BiEncoderKind())
    register(ServiceKind())
