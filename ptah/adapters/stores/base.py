"""What a store is: the protocols every store kind implements, its capabilities, and the checks of
stored vectors.

A store keeps generations (:class:`~ptah.adapters.stores.records.GenerationRecord`) and their
vectors, cached query vectors and, optionally, lexical indexes and a vector index
(``tests/contract/test_store_contract.py`` holds every kind to the same behaviour). A snapshot is
one consistent state: every read through it sees the same vectors however many batches a build
commits meanwhile. Callers ask ``store.capabilities`` (before a store is opened,
:func:`~ptah.adapters.stores.registry.capabilities_of`), never the store's type;
:func:`conformance_problem` says what a store lacks for the capabilities it declares.

Stored vectors can be measured when they are finite float32 values of their generation's
dimension, each under the key its row identity spells. ptah never writes anything else, so
:func:`non_finite` or :func:`misfiled` finding one means the store was changed outside ptah; both
stores check every matrix they read, and ``verify`` a generation's vectors.
"""

from __future__ import annotations

import numbers
import zlib
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager as ContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from ptah.core.corpus import COMPOSITE_KEY_SEPARATOR, join_key

if TYPE_CHECKING:
    import numpy as np

    from ptah.adapters.stores.records import GenerationRecord, Matrix


@dataclass(frozen=True)
class Capabilities:
    """The optional parts a store kind has."""

    lexical_index: bool = False  # keeps lexical indexes (:class:`LexicalIndexStore`)
    vector_index: bool = False  # builds and searches a vector index (:class:`VectorIndexStore`)


@runtime_checkable
class Snapshot(Protocol):
    """Reads from one consistent state of the store."""

    def generation(self, identity: str) -> GenerationRecord | None:
        """The generation with this identity, or None when it was never registered."""

    def generations(self) -> list[GenerationRecord]:
        """Every registered generation, oldest first."""

    def vector_count(self, identity: str) -> int:
        """How many vectors the generation has (0 when unregistered)."""

    def digests(self, identity: str) -> dict[str, tuple[str, str]]:
        """``row identity -> (key, text SHA-256)`` for every vector of the generation, no vector
        read."""

    def matrix(self, identity: str) -> Matrix:
        """The generation's vectors as one C-contiguous float32 matrix, rows by row identity (``(0,
        0)`` when unregistered); the caller owns the array. StoreDamaged for a vector that is not
        finite."""

    def vector_blocks(self, identity: str, rows: int) -> Iterator[Matrix]:
        """The same vectors as :meth:`matrix`, in its order, as consecutive blocks of ``rows`` rows
        (the last fewer, none empty; nothing when unregistered or empty) read in this snapshot while
        it is open, so the memory is one block; joined, they equal :meth:`matrix` bit for bit.
        ValueError unless ``rows`` >= 1; StoreDamaged for a vector that is not finite, in
        :meth:`matrix`'s sentence, before its block."""

    def check(self, identity: str) -> None:
        """StoreDamaged unless the store and the generation's vectors are sound (``verify``)."""

    def cached_queries(self, identity: str, texts: Iterable[str]) -> dict[str, np.ndarray]:
        """The cached float32 vectors of those ``texts`` that have a usable one under this
        generation."""


@runtime_checkable
class BlockDigests(Protocol):
    """The digests a snapshot reads a block of rows at a time, so verifying and building cost a
    block of memory whatever the generation's size. Both of ptah's stores' snapshots are ones;
    :func:`block_digests` answers for any other from :meth:`Snapshot.digests`, held whole."""

    def digests_of(self, identity: str, row_identities: list[str]) -> dict[str, tuple[str, str]]:
        """:meth:`Snapshot.digests` of those ``row_identities`` (a block of them) that have a
        vector."""

    def stored_in_order(self, identity: str) -> Generator[tuple[str, str], None, None]:
        """Every vector's ``(row identity, key)``, by row identity in code point order, streamed
        from this snapshot while it is open."""

    def held_keys(self, identity: str, keys: Iterable[str]) -> set[str]:
        """Those of ``keys`` that a vector of the generation has."""


@runtime_checkable
class KeyedVectors(Protocol):
    """A snapshot that reads a few vectors by key, so exact search over its streamed blocks knows a
    required row's vector before the blocks come (both of ptah's stores' snapshots are ones)."""

    def vectors_of(self, identity: str, keys: Iterable[str]) -> dict[str, np.ndarray]:
        """The float32 vector of each of ``keys`` that is the key of exactly one vector of the
        generation -- bit for bit the one its block brings -- read in this snapshot; a key two rows
        share, and a vector that is not finite or not whole, is left out."""


def block_digests(snapshot: Snapshot) -> BlockDigests:
    """``snapshot`` itself when it reads digests by blocks, else :class:`HeldDigests` over it."""
    return snapshot if isinstance(snapshot, BlockDigests) else HeldDigests(snapshot)


class HeldDigests:
    """:class:`BlockDigests` from :meth:`Snapshot.digests`, read once per generation and held (a
    store kind that reads no blocks: its memory grows with the generation, as every verification's
    did before blocks)."""

    def __init__(self, snapshot: Snapshot):
        self._snapshot = snapshot
        self._held: dict[str, dict[str, tuple[str, str]]] = {}

    def _digests(self, identity: str) -> dict[str, tuple[str, str]]:
        if identity not in self._held:
            self._held[identity] = self._snapshot.digests(identity)
        return self._held[identity]

    def digests_of(self, identity: str, row_identities: list[str]) -> dict[str, tuple[str, str]]:
        held = self._digests(identity)
        return {row: held[row] for row in row_identities if row in held}

    def stored_in_order(self, identity: str) -> Generator[tuple[str, str], None, None]:
        yield from sorted((row, key) for row, (key, _) in self._digests(identity).items())

    def held_keys(self, identity: str, keys: Iterable[str]) -> set[str]:
        return set(keys) & {key for key, _ in self._digests(identity).values()}


@runtime_checkable
class Store(Protocol):
    """Generations and their vectors, opened by a registered store kind."""

    capabilities: Capabilities
    where: (
        str  # how messages name the store: "store PATH" or "store URL" with the password redacted
    )

    def snapshot(self) -> ContextManager[Snapshot]:
        """One consistent state of the store, until the context ends."""

    def generation(self, identity: str) -> GenerationRecord | None: ...

    def generations(self) -> list[GenerationRecord]: ...

    def register_generation(self, record: GenerationRecord) -> None:
        """Record a generation, or refresh its name, versions and ``updated_at`` (``created_at``
        kept); StoreUnavailable when it is stored with another dimension."""

    def write_vectors(
        self, identity: str, rows: list[tuple[str, str, str]], vectors: np.ndarray
    ) -> None:
        """Insert or replace vectors in one transaction; ``rows`` are ``(row identity, key, text
        SHA-256)``."""

    def delete_vectors(self, identity: str, row_identities: Iterable[str]) -> int:
        """Delete the vectors of these rows in one transaction; how many were deleted."""

    def drop_generation(self, identity: str) -> int:
        """Remove a generation -- its vectors, cached queries and record -- in one transaction; how
        many vectors went (0 when it is not registered). The caller holds its build lock (``ptah
        inference prune``)."""

    def cached_queries(self, identity: str, texts: Iterable[str]) -> dict[str, np.ndarray]: ...

    def cache_queries(self, identity: str, vectors: Mapping[str, np.ndarray]) -> None:
        """Keep query vectors (text -> 1-D float32 vector) under a registered generation."""

    def build_lock(self, identity: str, name: str) -> ContextManager[None]:
        """Hold the exclusive build lock of a generation, or refuse at once (StoreUnavailable)."""

    def close(self) -> None: ...

    def __enter__(self) -> Store: ...

    def __exit__(self, *exc_info: object) -> None: ...


@runtime_checkable
class LexicalIndexStore(Store, Protocol):
    """A store that keeps the lexical channel's indexes (``capabilities.lexical_index``)."""

    def lexical_index(self, fingerprint: str, settings: str) -> bytes | None:
        """The serialised lexical index of this text fingerprint and settings, or None."""

    def save_lexical_index(
        self,
        fingerprint: str,
        settings: str,
        template_sha256: str,
        rows: int,
        vocabulary: int,
        serialized: bytes,
    ) -> None:
        """Keep a lexical index, replacing the one of the same template and settings."""


@runtime_checkable
class VectorIndexSnapshot(Snapshot, Protocol):
    """A snapshot of a store with a vector index."""

    def export(self) -> str:
        """This snapshot's id, for ``snapshot(like=…)`` while this one is open."""

    def index(self, identity: str) -> dict | None:
        """The generation's index as ``{name, kind, m, ef_construction, operator_class}``, or
        None."""

    def nearest(
        self, identity: str, vectors: np.ndarray, limits: list[int], ef_search: int
    ) -> list[list[tuple[str, float]]]:
        """Each query's nearest ``(key, score)`` rows through the index."""


@runtime_checkable
class VectorIndexStore(Store, Protocol):
    """A store that builds and searches a vector index (``capabilities.vector_index``)."""

    def snapshot(
        self, like: VectorIndexSnapshot | None = None
    ) -> ContextManager[VectorIndexSnapshot]:
        """One consistent state; ``like``: an open snapshot whose state this one shares."""

    def create_hnsw_index(self, identity: str, m: int, ef_construction: int) -> dict:
        """(Re)build the generation's HNSW cosine index; its description."""


def conformance_problem(store: object) -> str | None:
    """What ``store`` lacks to be a :class:`Store` with the capabilities it declares; None when
    nothing."""
    capabilities = getattr(store, "capabilities", None)
    if not isinstance(capabilities, Capabilities):
        return "it has no capabilities (a ptah.adapters.stores.base.Capabilities)"
    needed = [(Store, "a Store")]
    if capabilities.lexical_index:
        needed.append(
            (LexicalIndexStore, "a LexicalIndexStore, as it declares capabilities.lexical_index")
        )
    if capabilities.vector_index:
        needed.append(
            (VectorIndexStore, "a VectorIndexStore, as it declares capabilities.vector_index")
        )
    for protocol, name in needed:
        if not isinstance(store, protocol):
            missing = sorted(
                member for member in _members(protocol) if getattr(store, member, None) is None
            )
            return f"it is not {name}: it lacks {', '.join(missing)}"
    return None


def _members(protocol: type) -> set[str]:
    """The attributes and methods a protocol (with its protocol bases) names."""
    names: set[str] = set()
    for cls in protocol.__mro__:
        if cls is Protocol or cls is object or not getattr(cls, "_is_protocol", False):
            continue
        names.update(
            name
            for name in vars(cls)
            if not name.startswith("_") or name in ("__enter__", "__exit__")
        )
        names.update(getattr(cls, "__annotations__", {}))
    return names


@dataclass(frozen=True)
class StoreKind:
    """A kind of store.

    ``claims(value)``: whether a ``store:`` value (after ``${VAR}``
    expansion) is this kind's. ``open(location, create)``: the store at
    ``location`` (the value as the specification resolved it); with
    ``create=False`` None when nothing was ever stored there, and nothing
    is created.
    """

    name: str
    capabilities: Capabilities
    claims: Callable[[str], bool]
    open: Callable[[str, bool], Store | None]


VECTOR_DTYPE = np.dtype("<f4")
# Rows checked per step: bounds the temporary flags beside the matrix.
READ_BLOCK = 8192


def non_finite(vectors: np.ndarray, keys: Sequence[str]) -> tuple[int, str | None]:
    """How many rows of ``vectors`` hold NaN or an infinity, and the first such row's key.

    Checked :data:`READ_BLOCK` rows at a time, so the temporary is one block's
    flags, not a copy of the matrix.
    """
    count, first = 0, None
    for start in range(0, vectors.shape[0], READ_BLOCK):
        bad = ~np.isfinite(vectors[start : start + READ_BLOCK]).all(axis=1)
        if bad.any():
            count += int(bad.sum())
            if first is None:
                first = keys[start + int(np.argmax(bad))]
    return count, first


def non_finite_text(count: int, total: int, name: str, first: str | None) -> str:
    """What :func:`non_finite` found, in words."""
    return (
        f"{count} of {total} vectors of generation {name} hold NaN or infinite values, the first for key {first!r}; "
        "ptah never writes such vectors"
    )


def key_of(identity: str) -> str | None:
    """The key a row identity spells (its length-prefixed components joined as a corpus joins them);
    None when ``identity`` is not a row identity."""
    components, at = [], 0
    while at < len(identity):
        colon = identity.find(":", at)
        length = identity[at:colon]
        if colon < 0 or not (length.isascii() and length.isdigit()):
            return None
        at = colon + 1 + int(length)
        if at > len(identity):
            return None
        components.append(identity[colon + 1 : at])
    return join_key(components) if components else None


def misfiled(keys: Sequence[str], row_identities: Sequence[str]) -> tuple[int, str | None]:
    """How many rows are stored under a key other than the one their row identity spells, and the
    first such key.

    A vector whose key was changed to another row's would be ranked as that
    row: measured, it raises or lowers recall with no vector out of place.
    Compared a block at a time, as one key column's identities and then as
    composite keys' (split at U+001F), before row by row (a component holding
    U+001F splits wrongly, so only :func:`key_of` settles a row that differs).
    """
    identities = list(row_identities)
    if [f"{len(key)}:{key}" for key in keys] == identities:
        return 0, None
    # row_identity(key.split(U+001F)) (ptah.core.provenance) inlined: a call a row would double the
    # cost
    if [
        "".join([f"{len(c)}:{c}" for c in key.split(COMPOSITE_KEY_SEPARATOR)]) for key in keys
    ] == identities:
        return 0, None
    wrong = [key for key, identity in zip(keys, identities) if key_of(identity) != key]
    return len(wrong), (wrong[0] if wrong else None)


def one_row_each(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """``key -> row identity`` of the ``(key, row identity)`` pairs whose key no other pair has."""
    rows: dict[str, str] = {}
    shared = set()
    for key, row_identity in pairs:
        if key in rows:
            shared.add(key)
        rows[key] = row_identity
    return {key: row_identity for key, row_identity in rows.items() if key not in shared}


def misfiled_text(count: int, total: int, name: str, first: str | None) -> str:
    """What :func:`misfiled` found, in words."""
    return (
        f"{count} of {total} vectors of generation {name} are stored under a key that is not their row's, "
        f"the first under key {first!r}; ptah never writes such keys"
    )


def block_rows(rows: int) -> int:
    """``rows`` for a snapshot's ``vector_blocks``: a whole number of at least 1, else
    ValueError."""
    if isinstance(rows, bool) or not isinstance(rows, numbers.Integral) or rows < 1:
        raise ValueError(
            f"blocks of vectors need a whole number of rows of at least 1, not {rows!r}"
        )
    return int(rows)


def sound_blocks(
    blocks: Iterable[Matrix], name: str, damaged: Callable[[str], Exception]
) -> Iterator[Matrix]:
    """``blocks`` of generation ``name`` as they come while every vector is finite and under its own
    row's key.

    At the first block holding NaN or an infinity, or a key another row
    identity spells, that block and the rest are read without being yielded,
    to count them all, and ``damaged(what was found, in words)`` is raised
    (non-finite vectors first): a stream of blocks reports damage in the same
    sentence as the whole matrix (which is one block).
    """
    bad = [0, 0]
    first: list[str | None] = [None, None]
    total = 0
    for block in blocks:
        total += len(block.keys)
        for kind, (found, key) in enumerate(
            (non_finite(block.vectors, block.keys), misfiled(block.keys, block.row_identities))
        ):
            first[kind] = key if found and not bad[kind] else first[kind]
            bad[kind] += found
        if not any(bad):
            yield block
    if bad[0]:
        raise damaged(non_finite_text(bad[0], total, name, first[0]))
    if bad[1]:
        raise damaged(misfiled_text(bad[1], total, name, first[1]))


def usable_query_vector(
    blob: bytes, dimension: int | None, crc32: int | None = None
) -> np.ndarray | None:
    """A cached query vector as float32; None (to embed it again) unless it is ``dimension`` finite
    values whose CRC-32 is ``crc32`` (when one was kept)."""
    if (
        dimension is None
        or not isinstance(blob, bytes)
        or len(blob) != dimension * VECTOR_DTYPE.itemsize
    ):
        return None
    if crc32 is not None and zlib.crc32(blob) != crc32:
        return None
    vector = np.frombuffer(blob, dtype=VECTOR_DTYPE).astype(np.float32)
    return vector if np.isfinite(vector).all() else None
