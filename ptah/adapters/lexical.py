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
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from ptah.core.errors import CapabilityUnavailable, StoreDamaged

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
    """Everything a BM25 score depends on besides the text: tokenizer, parameters, library
    version."""
    return {
        "format": FORMAT,
        "library": "bm25s",
        "version": _bm25s_version(),
        "method": METHOD,
        "k1": K1,
        "b": B,
        "tokenizer": {
            "lower": True,
            "pattern": TOKEN_PATTERN,
            "stopwords": STOPWORDS,
            "stemmer": None,
        },
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

    return bm25s.tokenize(
        list(texts),
        lower=True,
        token_pattern=TOKEN_PATTERN,
        stopwords=STOPWORDS,
        return_ids=False,
        show_progress=False,
    )


@dataclass
class LexicalIndex:
    """A BM25 index over rows, in document order ``keys``, built from the text with
    ``fingerprint``."""

    keys: list[str]
    fingerprint: str
    settings: dict
    retriever: Any  # bm25s.BM25 (bm25s ships no types)

    @property
    def vocabulary(self) -> int:
        return len(self.retriever.vocab_dict)

    def scores(self, queries: Sequence[str]) -> np.ndarray:
        """The BM25 score of every query against every row: float32, shape ``(len(queries),
        len(keys))``."""
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
        meta = {
            "format": FORMAT,
            "settings": self.settings,
            "fingerprint": self.fingerprint,
            "keys": self.keys,
        }
        buffer = io.BytesIO()
        with tempfile.TemporaryDirectory(prefix="ptah-bm25-") as folder:
            self.retriever.save(folder, show_progress=False)
            with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
                archive.writestr(_META, json.dumps(meta, ensure_ascii=False))
                for path in sorted(Path(folder).iterdir()):
                    archive.write(path, path.name)
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, blob: bytes, where: str, limit: int) -> LexicalIndex:
        """Read a serialised index; ``StoreDamaged`` naming ``where`` when it is damaged: not a ZIP
        of this format, unpacking to more than ``limit`` bytes (see :func:`unpacked_limit`; read at
        most that far), arrays whose size is not their header's, or postings that name a document or
        token the index does not have."""
        import bm25s

        try:
            with (
                zipfile.ZipFile(io.BytesIO(blob)) as archive,
                tempfile.TemporaryDirectory(prefix="ptah-bm25-") as folder,
            ):
                members = {name: data for name, data in _unpacked(archive, limit)}
                meta = json.loads(members.pop(_META).decode("utf-8"))
                if meta.get("format") != FORMAT:
                    raise _Damage(f"has format {meta.get('format')!r}")
                for name, data in members.items():
                    if name.endswith(".npy"):
                        _check_npy(name, data)
                    (Path(folder) / name).write_bytes(data)
                retriever = bm25s.BM25.load(folder, show_progress=False)
            index = cls(
                keys=list(meta["keys"]),
                fingerprint=meta["fingerprint"],
                settings=meta["settings"],
                retriever=retriever,
            )
            index._check()
        except (
            zipfile.BadZipFile,
            KeyError,
            ValueError,
            TypeError,
            AttributeError,
            OSError,
            EOFError,
            zlib.error,
        ) as exc:
            raise StoreDamaged(
                f"{where} is damaged: its stored lexical index {_shown(exc)}; delete that index's row "
                "from its lexical_indexes table, and the next evaluate builds it again."
            ) from None
        return index

    def _check(self) -> None:
        """_Damage unless the postings (bm25s's CSC arrays: one column per token) fit the keys and
        the vocabulary, so no score reads outside them."""
        if not all(isinstance(key, str) for key in self.keys) or not isinstance(
            self.fingerprint, str
        ):
            raise _Damage("has keys or a fingerprint that are not text")
        scores, vocabulary = self.retriever.scores, self.retriever.vocab_dict
        data, indices, indptr = (np.asarray(scores[name]) for name in ("data", "indices", "indptr"))
        if scores["num_docs"] != len(self.keys) or indptr.ndim != 1 or len(indptr) < 1:
            raise _Damage("does not fit its keys")
        # bm25s's vocabulary also holds "" with the id after the last column, which no query token
        # can name
        ids = np.fromiter((id_ for token, id_ in vocabulary.items() if token != ""), dtype=np.int64)
        if ids.size and (ids.min() < 0 or ids.max() >= len(indptr) - 1):
            raise _Damage("names a token it has no postings for")
        if (
            indptr[0] != 0
            or (np.diff(indptr) < 0).any()
            or indptr[-1] != len(data)
            or len(indices) != len(data)
            or (indices.size and (indices.min() < 0 or indices.max() >= len(self.keys)))
            or not np.isfinite(data).all()
        ):
            raise _Damage("has postings out of range")


def unpacked_limit(keys: Sequence[str], texts: Sequence[str]) -> int:
    """The most bytes a serialised index of these rows can unpack to, with room: each posting (at
    most one per three characters of text) is 8 bytes, each token's vocabulary entry at most 12
    bytes a character; a ZIP whose members claim more (a ZIP bomb) is damaged."""
    return 2**20 + 32 * (sum(map(len, texts)) + sum(map(len, keys)) + len(keys))


def _unpacked(archive: zipfile.ZipFile, limit: int) -> Iterable[tuple[str, bytes]]:
    """The archive's files (no folders), decompressed at most ``limit`` bytes in all; _Damage past
    that."""
    left = limit
    for info in archive.infolist():
        if "/" in info.filename:
            continue
        with archive.open(info) as member:
            data = member.read(left + 1)  # inflated step by step: never more than asked
        left -= len(data)
        if left < 0:
            raise _Damage(f"unpacks to more than {limit:,} bytes")
        yield info.filename, data


def _check_npy(name: str, data: bytes) -> None:
    """_Damage unless ``data`` is a .npy file holding exactly the bytes its header's shape says,
    without pickle."""
    from numpy.lib import format as npy

    stream = io.BytesIO(data)
    version = npy.read_magic(stream)
    if version != (1, 0):  # what numpy.save writes for bm25s's arrays
        raise _Damage(f"has an array {name} of .npy version {version}")
    shape, _, dtype = npy.read_array_header_1_0(stream)
    if (
        dtype.hasobject
        or int(np.prod(shape, dtype=object)) * dtype.itemsize != len(data) - stream.tell()
    ):
        raise _Damage(f"has an array {name} whose size is not its header's")


class _Damage(ValueError):
    """What :meth:`LexicalIndex.from_bytes` found, in words that follow "its stored lexical
    index"."""


def _shown(exc: BaseException) -> str:
    """Why an index did not read back, quoting at most a short line of what a library said."""
    if isinstance(exc, _Damage):
        return str(exc)
    said = str(exc).splitlines()[0][:120] if str(exc) else ""
    return f"does not read ({type(exc).__name__}{': ' + said if said else ''})"


def build_index(keys: Sequence[str], texts: Sequence[str], fingerprint: str) -> LexicalIndex:
    """A BM25 index of ``texts`` (document i is the row with key ``keys[i]``)."""
    values = settings()
    import bm25s

    retriever = bm25s.BM25(method=METHOD, k1=K1, b=B)
    tokens = tokenize(texts) if texts else []
    if any(tokens):
        retriever.index(tokens, show_progress=False)
    # bm25s cannot index no token: an empty table, or texts of stop words only, has an empty
    # vocabulary
    else:
        retriever.scores = {
            "data": np.zeros(0, np.float32),
            "indices": np.zeros(0, np.int32),
            "indptr": np.zeros(1, np.int32),
            "num_docs": len(texts),
        }
        retriever.vocab_dict = {}
        retriever.nonoccurrence_array = None
    return LexicalIndex(
        keys=list(keys), fingerprint=fingerprint, settings=values, retriever=retriever
    )
