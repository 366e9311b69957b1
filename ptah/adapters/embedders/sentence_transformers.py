"""The sentence-transformers embedder. torch is imported only when one is built.

The model is loaded offline from :func:`resolve_model`'s folder
(``HF_HUB_OFFLINE=1`` and ``TRANSFORMERS_OFFLINE=1`` are set before the
import), on the CPU, with the generation's ``max_seq_length``; texts are
encoded in batches of ``batch_size`` with the generation's prefixes, and
normalised by the library when ``normalize`` is true.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from ptah.adapters.embedders.base import as_matrix, installed_versions
from ptah.adapters.embedders.resolve import model_digest, resolve_model
from ptah.core.errors import ModelUnavailable
from ptah.core.spec import GenerationSettings

KIND = "sentence-transformers"
LIBRARIES = ("sentence-transformers", "torch", "transformers")
RESERVED_PREFIX = (
    "ptah/"  # ptah's own models; never looked for on disk or in the Hugging Face cache
)


class SentenceTransformersKind:
    """The default kind: any model outside ``ptah/``, found offline; its identity is the model
    folder's digest."""

    name = KIND
    loads_model = True  # seconds to load: open_embedder says "loading NAME …" first

    def claims(self, settings: GenerationSettings) -> bool:
        return not settings.model.startswith(RESERVED_PREFIX) and settings.service is None

    def identity_parts(
        self, settings: GenerationSettings, root: str, *, cache_dir: Path | None = None
    ) -> dict:
        return {"digest": model_digest(resolve_model(settings.model, root), cache_dir)}

    def open(self, settings: GenerationSettings, root: str) -> SentenceTransformerEmbedder:
        return SentenceTransformerEmbedder(settings, root)

    def versions(self) -> dict[str, str | None]:
        return installed_versions(*LIBRARIES)


def _first_sentence(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def offline_and_quiet() -> None:
    """Before loading a model with the Hugging Face libraries: never reach the network, and draw
    none of their bars or notices (ptah draws its own progress; theirs would garble it). The
    variables act when the libraries are imported; one imported already (by the caller, or a test)
    is told directly, unless the user chose otherwise in the environment."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    if (
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1") == "1"
        and "huggingface_hub" in sys.modules
    ):
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
    if (
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error") == "error"
        and "transformers" in sys.modules
    ):
        from transformers.utils import logging

        logging.set_verbosity_error()
        logging.disable_progress_bar()


class SentenceTransformerEmbedder:
    """A sentence-transformers model, loaded offline on the CPU."""

    def __init__(self, settings: GenerationSettings, root: str, *, model_path: Path | None = None):
        self.settings = settings
        self.model_path = (
            model_path if model_path is not None else resolve_model(settings.model, root)
        )
        offline_and_quiet()
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise ModelUnavailable(
                f"sentence-transformers cannot be imported ({_first_sentence(exc)}); install ptah's dependencies"
            ) from None
        try:
            self.model = SentenceTransformer(
                str(self.model_path), device="cpu", local_files_only=True
            )
            if settings.max_seq_length is not None:
                self.model.max_seq_length = settings.max_seq_length
            # renamed in sentence-transformers 5.x; the old name warns there and is all 3.x/4.x have
            measure = (
                getattr(self.model, "get_embedding_dimension", None)
                or self.model.get_sentence_embedding_dimension
            )
            dimension = measure()
        except Exception as exc:  # the library's load failures have no common base class
            raise ModelUnavailable(
                f'model "{settings.model}" at {self.model_path} could not be loaded: {_first_sentence(exc)}'
            ) from None
        if not dimension:
            raise ModelUnavailable(
                f'model "{settings.model}" at {self.model_path} does not state its dimension'
            )
        self.dimension = int(dimension)

    def embed_documents(
        self, texts: Sequence[str], progress: Callable[[int], None] | None = None
    ) -> np.ndarray:
        """The texts' vectors; with ``progress``, encoded one model batch at a time, longest texts
        first (the batches the library's own length sort makes), and ``progress(rows done)`` told
        after each."""
        prefix = self.settings.document_prefix
        if progress is None or not texts:
            return self._encode(texts, prefix)
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        vectors = np.empty((len(texts), self.dimension), dtype=np.float32)
        size = self.settings.batch_size
        for start in range(0, len(order), size):
            chunk = order[start : start + size]
            vectors[chunk] = self._encode([texts[i] for i in chunk], prefix)
            progress(start + len(chunk))
        return vectors

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, self.settings.query_prefix)

    def _encode(self, texts: Sequence[str], prefix: str) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vectors = self.model.encode(
            [prefix + text for text in texts],
            batch_size=self.settings.batch_size,
            normalize_embeddings=self.settings.normalize,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return as_matrix(vectors, self.dimension)
