"""A deterministic embedder for tests and examples: hashed bag of words.

Algorithm ``ptah-deterministic@1`` (the generation identity records it with
the dimension):

1. the prefix is put before the text, then the text is lower-cased and cut
   into word tokens (Python ``re`` ``\\w+``); with ``max_seq_length`` only the
   first that many tokens count; a text with no token counts one token, the
   empty string, so no text is an empty bag of words;
2. each token is hashed with BLAKE2b (8-byte digest, person ``ptah-det1``); the
   digest read little-endian gives bit 0 as the sign (+1 / -1) and the rest,
   modulo the dimension, as the bucket;
3. the signed counts are summed per bucket (float64) and, when ``normalize``,
   the vector is scaled to unit length (a vector whose counts cancel out to
   all zeros stays zero); the result is float32.

Texts that share words therefore share buckets, so retrieval over these
vectors is meaningful, and the vectors are the same in every process and on
every platform. Every call is recorded in :attr:`DeterministicEmbedder.calls`
so a test can prove that a cache hit skipped the model -- the first
:data:`RECORDED_TEXTS` texts only, so a build of millions of rows does not
keep them all.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

from ptah.adapters.embedders.base import as_matrix, l2_normalize
from ptah.core.spec import DEFAULT_DETERMINISTIC_DIMENSION, DETERMINISTIC_MODEL, GenerationSettings

ALGORITHM = "ptah-deterministic@1"
_TOKEN = re.compile(r"\w+")
RECORDED_TEXTS = 100_000  # texts kept in ``calls``; later calls are embedded and not recorded


@lru_cache(maxsize=65_536)
def _bucket(token: str, dimension: int) -> tuple[int, float]:
    digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8, person=b"ptah-det1").digest()
    value = int.from_bytes(digest, "little")
    return (value >> 1) % dimension, (1.0 if value & 1 else -1.0)


class DeterministicEmbedder:
    """Hashed bag-of-words vectors; records every text it is asked to embed."""

    def __init__(
        self,
        dimension: int = DEFAULT_DETERMINISTIC_DIMENSION,
        normalize: bool = True,
        query_prefix: str = "",
        document_prefix: str = "",
        max_seq_length: int | None = None,
    ):
        if dimension < 1:
            raise ValueError("dimension must be at least 1")
        self.dimension = dimension
        self.normalize = normalize
        self.query_prefix = query_prefix
        self.document_prefix = document_prefix
        self.max_seq_length = max_seq_length
        self.calls: list[tuple[str, list[str]]] = []
        self._recorded = 0

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self._record("documents", texts)
        return self._embed(texts, self.document_prefix)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        self._record("queries", texts)
        return self._embed(texts, self.query_prefix)

    def _record(self, kind: str, texts: Sequence[str]) -> None:
        if self._recorded < RECORDED_TEXTS:
            self.calls.append((kind, list(texts)))
            self._recorded += len(texts)

    def embedded_texts(self, kind: str = "documents") -> list[str]:
        """Every text of one kind embedded so far, in order (of the first
        :data:`RECORDED_TEXTS`)."""
        return [text for call_kind, texts in self.calls if call_kind == kind for text in texts]

    def _embed(self, texts: Sequence[str], prefix: str) -> np.ndarray:
        matrix = np.zeros((len(texts), self.dimension), dtype=np.float64)
        for row, text in enumerate(texts):
            tokens = _TOKEN.findall((prefix + text).lower())
            if self.max_seq_length is not None:
                tokens = tokens[: self.max_seq_length]
            for token in tokens or [""]:
                bucket, sign = _bucket(token, self.dimension)
                matrix[row, bucket] += sign
        vectors = as_matrix(matrix, self.dimension)
        return l2_normalize(vectors) if self.normalize else vectors


class DeterministicKind:
    """The kind for the model ``ptah/deterministic``; its identity is the algorithm and the
    dimension."""

    name = DETERMINISTIC_MODEL

    def claims(self, settings: GenerationSettings) -> bool:
        return settings.model == DETERMINISTIC_MODEL and settings.service is None

    def identity_parts(
        self, settings: GenerationSettings, root: str, *, cache_dir: Path | None = None
    ) -> dict:
        return {
            "algorithm": ALGORITHM,
            "dimension": settings.dimension or DEFAULT_DETERMINISTIC_DIMENSION,
        }

    def open(self, settings: GenerationSettings, root: str) -> DeterministicEmbedder:
        return DeterministicEmbedder(
            settings.dimension or DEFAULT_DETERMINISTIC_DIMENSION,
            settings.normalize,
            settings.query_prefix,
            settings.document_prefix,
            settings.max_seq_length,
        )

    def versions(self) -> dict[str, str | None]:
        return {}  # numpy and hashlib only, and ptah itself (recorded for every kind)
