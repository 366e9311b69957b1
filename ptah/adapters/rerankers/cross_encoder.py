"""The ``cross-encoder`` reranker: a sentence-transformers ``CrossEncoder`` loaded offline on the
CPU.

``model:`` is found as a generation's model is (:func:`resolve_model`: a local
folder, an installed model package, the Hugging Face cache; missing: exit 3).
The score of a pair is the model's one logit, before any activation the model
names: a sigmoid is monotone, so it would rank alike, but it rounds confident
scores to the same float32 1.0 and so makes ties the logits do not have.
Pairs are scored ``batch_size`` at a time in the texts' order, one library
call a batch, so a batch never depends on the texts' lengths.
"""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from pathlib import Path

import numpy as np

from ptah.adapters.embedders.base import installed_versions
from ptah.adapters.embedders.resolve import default_cache_dir, model_digest, resolve_model
from ptah.adapters.embedders.sentence_transformers import offline_and_quiet
from ptah.adapters.rerankers.base import RerankContext, batches
from ptah.core.errors import InputError, ModelUnavailable
from ptah.core.plugins import describe_exception
from ptah.core.spec import RerankSettings

KIND = "cross-encoder"
LIBRARIES = ("sentence-transformers", "transformers", "torch")


class CrossEncoderKind:
    name = KIND
    service = False

    def check(self, settings: RerankSettings, written: AbstractSet[str]) -> list[tuple[str, str]]:
        """What ``settings`` lack, as (field, message) pairs."""
        if settings.model is None:
            return [
                (
                    "model",
                    "missing; a cross-encoder needs model: (a local folder, an installed model "
                    "package or a cached Hugging Face name)",
                )
            ]
        return []

    def open(self, settings: RerankSettings, context: RerankContext) -> CrossEncoderReranker:
        if not settings.model:
            raise InputError(
                "the cross-encoder reranker needs model: a local folder, an installed model package "
                "or a Hugging Face name in the local cache"
            )
        path = resolve_model(settings.model, context.root, context.env)
        return CrossEncoderReranker(
            settings, path, model_digest(path, default_cache_dir(context.env))
        )


class CrossEncoderReranker:
    """A cross-encoder with one output, loaded from ``path``; scores are its logits as float64."""

    def __init__(self, settings: RerankSettings, path: Path, digest: str):
        self.settings, self.path, self.digest = settings, path, digest
        offline_and_quiet()
        try:
            import sentence_transformers
            import torch
            from sentence_transformers import CrossEncoder
        except ImportError as exc:
            raise ModelUnavailable(
                f"sentence-transformers cannot be imported ({describe_exception(exc)}); install "
                "ptah's dependencies"
            ) from None
        # the logits, whatever activation the model's configuration names (the argument's name
        # before 4.0 differs)
        old = int(sentence_transformers.__version__.split(".")[0]) < 4
        activation = {
            "default_activation_function" if old else "activation_fn": torch.nn.Identity()
        }
        try:
            self.model = CrossEncoder(str(path), device="cpu", local_files_only=True, **activation)
            labels = self.model.num_labels
        except Exception as exc:  # the library's load failures have no common base class
            raise ModelUnavailable(
                f'model "{settings.model}" at {path} could not be loaded as a cross-encoder: '
                f"{describe_exception(exc)}"
            ) from None
        if labels != 1:
            raise ModelUnavailable(
                f'model "{settings.model}" at {path} gives {labels} scores a pair; a reranker '
                "needs a cross-encoder with one"
            )

    def scores(self, query: str, texts: Sequence[str]) -> np.ndarray:
        scores = np.zeros(len(texts), dtype=np.float64)
        for batch in batches(len(texts), self.settings.batch_size):
            pairs = [(query, texts[i]) for i in batch]
            scores[batch.start : batch.stop] = self.model.predict(
                pairs, batch_size=len(pairs), convert_to_numpy=True, show_progress_bar=False
            )
        return scores

    def describe(self) -> dict:
        return {
            "kind": KIND,
            "model": self.settings.model,
            "model_digest": self.digest,
            "versions": installed_versions(*LIBRARIES),
        }
