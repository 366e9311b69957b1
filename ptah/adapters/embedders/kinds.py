"""ptah's own embedder kinds, registered through the door (:mod:`ptah.core.plugins`)."""

from __future__ import annotations

from collections.abc import Callable

from ptah.core.plugins import hookimpl


@hookimpl
def register_embedders(register: Callable) -> None:
    from ptah.adapters.embedders.deterministic import DeterministicKind
    from ptah.adapters.embedders.onnx_backend import OnnxKind
    from ptah.adapters.embedders.openai_compatible import OpenAICompatibleKind
    from ptah.adapters.embedders.sentence_transformers import SentenceTransformersKind

    register(DeterministicKind())
    register(OpenAICompatibleKind())
    register(OnnxKind())
    register(SentenceTransformersKind(), default=True)
