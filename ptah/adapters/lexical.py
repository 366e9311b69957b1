"""The lexical channel's index: BM25 over the rows' text, with the ``bm25s`` library.

What is indexed: the text a generation's template renders for each source row
(the same text that generation embeds), one document per row, ordered by row
identity.

Tokens (``bm25s.tokenize``, documents and queries alike): lower-cased; split
on the regular expression ``(?u)\\b\\w\\w+\\b`` (words of two or more word
characters, scikit-learn's default); bm25s's English stop words removed; no
stemming. Scoring: BM25 as Lucene computes it (``method="lucene"``), k1 = 1.5,
b = 0.75 -- bm25s's defaults. A query with no indexed token scores 0 against
every row. Scores are float32, as bm25s computes them.

The index lives in the store, keyed by the *text fingerprint* of what it
indexes and by :data:`SETTINGS` (so a new tokenizer, BM25 parameter or bm25s
version builds a new index). The fingerprint is ``sha256:`` + the SHA-256 of
the lines ``json([row_identity, text_sha256]) + "\\n"`` (UTF-8, compact JSON,
non-ASCII as itself), sorted by row identity: any row added, removed or whose
text changed gives a new fingerprint, and nothing else does. An index is
rebuilt only then.

Serialised form (``ptah-bm25@1``): a ZIP archive holding what
``bm25s.BM25.save`` writes and ``ptah.json`` (the format, the settings, the
fingerprint and the keys in document order); read back with
``bm25s.BM25.load``. Arrays are stored without pickle.

``bm25s`` is imported lazily; it needs numpy (and uses scipy when present), never torch.
"""

from __future__ import annotations

import hashlib
import io
import json
import tempfile
import zipfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from ptah.core.errors import CapabilityUnavailable, StoreUnavailable

FORMAT = "ptah-bm25@1"
TOKEN_PATTERN = r"(?u)\b\w\w+\b"
STOPWORDS = "en"
METHOD, K1, B = "lucene", 1.5, 0.75
_META = "ptah.json"


def _bm25s_version() -> str:
    try:
        return metadata.version("bm25s")
    except metadata.PackageNotFoundError:
        raise CapabilityUnavailable(
            "the lexical channel needs the bm25s library, which is not installed; run `pip install bm25s`."
        ) from None


def settings() -> dict:
    """Everything a BM25 score depends on besides the text: tokenizer, parameters, library version."""
    return {
        "format": FORMAT,
        "library": "bm25s",
        "version": _bm25s_version(),
        "method": METHOD,
        "k1": K1,
        "b": B,
        "tokenizer": {"lower": True, "pattern": TOKEN_PATTERN, "stopwords": STOPWORDS, "stemmer": None},
    }


def settings_key(values: dict) -> str:
    """The canonical JSON of :func:`settings`, as the store keys indexes by it."""
    return json.dumps(values, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def text_fingerprint(pairs: Iterable[tuple[str, str]]) -> str:
    """The fingerprint of ``(row identity, text SHA-256)`` pairs (see the module docs)."""
    digest = hashlib.sha256()
    for identity, text_sha256 in sorted(pairs):
        line = json.dumps([identity, text_sha256], separators=(",", ":"), ensure_ascii=False) + "\n"
        digest.update(line.encode("utf-8"))
    return "sha256:" + digest.hexdigest()


def tokenize(texts: Sequence[str]) -> list[list[str]]:
    """``texts`` as bm25s tokenizes them here (see the module docs)."""
    import bm25s

    return bm25s.tokenize(list(texts), lower=True, token_pattern=TOKEN_PATTERN, stopwords=STOPWORDS,
                          return_ids=False, show_progress=False)


@dataclass
class LexicalIndex:
    """A BM25 index over rows, in document order ``keys``, built from the text with ``fingerprint``."""

    keys: list[str]
    fingerprint: str
    settings: dict
    retriever: Any  # bm25s.BM25 (bm25s ships no types)

    @property
    def vocabulary(self) -> int:
        return len(self.retriever.vocab_dict)

    def scores(self, queries: Sequence[str]) -> np.ndarray:
        """The BM25 score of every query against every row: float32, shape ``(len(queries), len(keys))``."""
        matrix = np.zeros((len(queries), len(self.keys)), dtype=np.float32)
        if not self.keys:
            return matrix
        for i, tokens in enumerate(tokenize(queries)):
            ids = self.retriever.get_tokens_ids(tokens)
            if ids:
                matrix[i] = self.retriever.get_scores_from_ids(ids)
        return matrix

    def to_bytes(self) -> bytes:
        """The serialised index (see the module docs)."""
        meta = {"format": FORMAT, "settings": self.settings, "fingerprint": self.fingerprint, "keys": self.keys}
        buffer = io.BytesIO()
        with tempfile.TemporaryDirectory(prefix="ptah-bm25-") as folder:
            self.retriever.save(folder, show_progress=False)
            with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
                archive.writestr(_META, json.dumps(meta, ensure_ascii=False))
                for path in sorted(Path(folder).iterdir()):
                    archive.write(path, path.name)
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, blob: bytes, where: str) -> "LexicalIndex":
        """Read a serialised index; ``StoreUnavailable`` naming ``where`` when it is damaged."""
        import bm25s

        try:
            with zipfile.ZipFile(io.BytesIO(blob)) as archive, tempfile.TemporaryDirectory(prefix="ptah-bm25-") as folder:
                meta = json.loads(archive.read(_META).decode("utf-8"))
                if meta.get("format") != FORMAT:
                    raise ValueError(f"format {meta.get('format')!r}")
                for name in archive.namelist():
                    if name != _META and "/" not in name:
                        (Path(folder) / name).write_bytes(archive.read(name))
                retriever = bm25s.BM25.load(folder, show_progress=False)
        except (zipfile.BadZipFile, KeyError, ValueError, OSError) as exc:
            raise StoreUnavailable(f"{where}: the stored lexical index is damaged ({exc}); delete the store to rebuild it.") from None
        return cls(keys=list(meta["keys"]), fingerprint=meta["fingerprint"], settings=meta["settings"], retriever=retriever)


def build_index(keys: Sequence[str], texts: Sequence[str], fingerprint: str) -> LexicalIndex:
    """A BM25 index of ``texts`` (document i is the row with key ``keys[i]``)."""
    values = settings()
    import bm25s

    retriever = bm25s.BM25(method=METHOD, k1=K1, b=B)
    tokens = tokenize(texts) if texts else []
    if any(tokens):
        retriever.index(tokens, show_progress=False)
    else:  # bm25s cannot index no token: an empty table, or texts of stop words only, has an empty vocabulary
        retriever.scores = {"data": np.zeros(0, np.float32), "indices": np.zeros(0, np.int32),
                            "indptr": np.zeros(1, np.int32), "num_docs": len(texts)}
        retriever.vocab_dict = {}
        retriever.nonoccurrence_array = None
    return LexicalIndex(keys=list(keys), fingerprint=fingerprint, settings=values, retriever=retriever)
