"""One contract, two stores: a snapshot streams a generation's vectors in blocks that join into its
matrix.

``Snapshot.vector_blocks(identity, rows)`` is what exact evaluation reads at
scale: the same vectors as ``matrix``, in its order, ``rows`` at a time, from
the same snapshot, with memory bounded by one block. Every test runs over the
SQLite file and over a real PostgreSQL (``store_kind``).
"""

from __future__ import annotations

import sqlite3
import struct
import tracemalloc

import numpy as np
import pytest

from ptah.core.errors import StoreDamaged
from tests.contract.test_store_contract import IDENTITY, OTHER, location, record  # noqa: F401 (fixture)

DIMENSION = 16


def identities(count: int) -> list[str]:
    """Row identities whose code-point order is not their insertion order (digits, capitals,
    accents, emoji)."""
    found = [f"{len(k)}:{k}" for k in (f"k{(i * 7919) % count:05d}" for i in range(count - 6))]
    return found + ["1:é", "1:Z", "1:a", "2:10", "3:a\x1fb", "1:😀"]


def stored(opened, count: int, dimension: int = DIMENSION, seed: int = 3) -> np.ndarray:
    """Register the generation and write ``count`` vectors to it in three batches; the vectors in
    write order."""
    rows = [
        (row_identity, row_identity.split(":", 1)[1], "d") for row_identity in identities(count)
    ]
    vectors = np.random.default_rng(seed).standard_normal((count, dimension)).astype(np.float32)
    vectors[0, 0], vectors[1, 1] = (
        -0.0,
        np.float32(1e-42),
    )  # a negative zero and a subnormal keep their bits
    opened.register_generation(record(dimension=dimension))
    for start in range(0, count, count // 3 + 1):
        opened.write_vectors(
            IDENTITY, rows[start : start + count // 3 + 1], vectors[start : start + count // 3 + 1]
        )
    return vectors


def joined(blocks) -> tuple[list[str], list[str], np.ndarray]:
    blocks = list(blocks)
    return (
        [key for block in blocks for key in block.keys],
        [row_identity for block in blocks for row_identity in block.row_identities],
        np.concatenate([block.vectors for block in blocks])
        if blocks
        else np.empty((0, 0), np.float32),
    )


def same_bits(first: np.ndarray, second: np.ndarray) -> bool:
    return first.shape == second.shape and np.array_equal(
        first.view(np.uint32), second.view(np.uint32)
    )


@pytest.mark.parametrize("rows", [1, 7, 64, 300, 1000])
def test_blocks_join_into_the_matrix_bit_for_bit_and_each_holds_exactly_rows(location, rows):
    with location.open() as opened:
        written = stored(opened, 300)  # in three batches, not in row identity order
        with opened.snapshot() as snapshot:
            whole = snapshot.matrix(IDENTITY)
            blocks = list(snapshot.vector_blocks(IDENTITY, rows))
    assert [len(block.keys) for block in blocks] == [rows] * (300 // rows) + (
        [300 % rows] if 300 % rows else []
    )
    for block in blocks:
        assert len(block.row_identities) == block.vectors.shape[0] == len(block.keys)
        assert block.vectors.shape[1] == DIMENSION and block.vectors.dtype == np.float32
        assert block.vectors.flags["C_CONTIGUOUS"]
    keys, row_identities, vectors = joined(blocks)
    assert (keys, row_identities) == (whole.keys, whole.row_identities)
    assert row_identities == sorted(row_identities) and row_identities[:3] == ["1:Z", "1:a", "1:é"]
    assert same_bits(vectors, whole.vectors)
    assert same_bits(
        whole.vectors, written[sorted(range(300), key=identities(300).__getitem__)]
    )  # as written


def test_an_unregistered_or_empty_generation_streams_no_block(location):
    with location.open() as opened:
        opened.register_generation(record())
        with opened.snapshot() as snapshot:
            assert list(snapshot.vector_blocks(IDENTITY, 4)) == []
            assert list(snapshot.vector_blocks(OTHER, 4)) == []


@pytest.mark.parametrize("rows", [0, -1, 2.5, "8", None, True])
def test_a_block_size_that_is_not_a_whole_number_of_at_least_one_is_refused_at_once(location, rows):
    with location.open() as opened:
        opened.register_generation(record())
        with opened.snapshot() as snapshot:
            with pytest.raises(ValueError) as raised:
                snapshot.vector_blocks(IDENTITY, rows)  # not only when the first block is read
    assert (
        str(raised.value)
        == f"blocks of vectors need a whole number of rows of at least 1, not {rows!r}"
    )


def test_a_stream_does_not_see_batches_committed_while_it_streams(location):
    with location.open() as opened:
        stored(opened, 300)
        with opened.snapshot() as snapshot:
            whole = snapshot.matrix(IDENTITY)
            stream = snapshot.vector_blocks(IDENTITY, 64)
            first = next(stream)
            with (
                location.open() as writer
            ):  # a build's batches: new rows before and after the stream's place,
                writer.write_vectors(
                    IDENTITY,
                    [("1:0", "0", "n"), ("9:zzzzzzzzz", "zzzzzzzzz", "n")],
                    np.ones((2, DIMENSION)),
                )
                writer.write_vectors(
                    IDENTITY,
                    [(whole.row_identities[200], whole.keys[200], "changed")],
                    np.full((1, DIMENSION), 5.0),
                )  # a row it has not reached, rewritten
                assert (
                    writer.delete_vectors(IDENTITY, whole.row_identities[250:260]) == 10
                )  # and some deleted
            assert (
                snapshot.vector_count(IDENTITY) == 300
            )  # another read between blocks leaves the stream whole
            keys, row_identities, vectors = joined([first, *stream])
        assert (keys, row_identities) == (whole.keys, whole.row_identities)
        assert same_bits(vectors, whole.vectors)
        with opened.snapshot() as later:
            keys, _, vectors = joined(later.vector_blocks(IDENTITY, 64))
    assert len(keys) == 292 and keys[0] == "0" and keys[-1] == "zzzzzzzzz"
    assert vectors[keys.index(whole.keys[200])].tolist() == [5.0] * DIMENSION


def test_a_stream_holds_one_block_in_memory_not_the_generation(location):
    """20,000 vectors of dimension 64 are 5 MiB: read 200 at a time, the peak is a small part of the
    matrix's."""
    with location.open() as opened:
        stored(opened, 20_000, dimension=64)
        with opened.snapshot() as snapshot:
            tracemalloc.start()
            try:
                snapshot.matrix(IDENTITY)
                _, whole = tracemalloc.get_traced_memory()
                tracemalloc.reset_peak()
                sizes = [len(block.keys) for block in snapshot.vector_blocks(IDENTITY, 200)]
                _, streamed = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
    assert sizes == [200] * 100
    assert whole > 20_000 * 64 * 4 and streamed * 10 < whole, (whole, streamed)


def damage(location, key: str, what: str) -> None:
    """Change one stored vector behind the store's back: ``nan`` at its first value, or ``short`` (3
    values)."""
    if location.kind == "sqlite":
        with sqlite3.connect(location.target) as connection:
            blob = bytearray(
                connection.execute("SELECT vector FROM vectors WHERE key = ?", (key,)).fetchone()[0]
            )
            blob[0:4] = struct.pack("<f", float("nan"))
            changed = bytes(blob if what == "nan" else blob[:12])
            connection.execute("UPDATE vectors SET vector = ? WHERE key = ?", (changed, key))
        return
    import psycopg

    from ptah.adapters.stores.pgvector_schema import vectors_table

    assert (
        what == "short"
    )  # pgvector refuses NaN and infinities on every input path (tests/hostile)
    with psycopg.connect(location.target, autocommit=True) as connection:
        connection.execute(
            f"ALTER TABLE {vectors_table(IDENTITY)} ALTER COLUMN embedding TYPE vector"
        )
        connection.execute(
            f"UPDATE {vectors_table(IDENTITY)} SET embedding = '[1,2,3]' WHERE key = %s", (key,)
        )


@pytest.mark.parametrize("what", ["nan", "short"])
def test_a_damaged_vector_stops_the_stream_with_the_matrix_sentence(location, what):
    if what == "nan" and location.kind == "pgvector":
        pytest.skip("pgvector cannot hold NaN (tests/hostile/test_damaged_pgvector_store.py)")
    with location.open() as opened:
        stored(opened, 300)
        with opened.snapshot() as snapshot:
            order = snapshot.matrix(IDENTITY).keys
        damage(location, order[150], what)
        if what == "nan":
            damage(location, order[20], what)
        with opened.snapshot() as snapshot:
            with pytest.raises(StoreDamaged) as from_matrix:
                snapshot.matrix(IDENTITY)
            yielded = []
            with pytest.raises(StoreDamaged) as from_stream:
                for block in snapshot.vector_blocks(IDENTITY, 16):
                    yielded.append(block)
    assert str(from_stream.value) == str(from_matrix.value)
    if (
        what == "nan"
    ):  # every vector counted; the blocks before the first damaged one yielded, none after
        assert (
            f"(2 of 300 vectors of generation docs hold NaN or infinite values, the first for key {order[20]!r}; "
            "ptah never writes such vectors)" in str(from_matrix.value)
        )
        assert [len(block.keys) for block in yielded] == [16]
    else:  # the block holding row 150 is the tenth
        assert [len(block.keys) for block in yielded] == [16] * 9
        assert str(from_matrix.value).endswith(
            "(a vector of generation docs is not 16 float32 values); move it aside and run `ptah inference build` "
            "again."
            if location.kind == "sqlite"
            else ": a stored vector does not have the generation's dimension, so the table was changed outside ptah; "
            "delete the rows whose vector_dims(embedding) differs and run `ptah inference build` to embed them again."
        )


def test_a_snapshot_reads_a_few_vectors_by_key_bit_for_bit_as_its_blocks_bring_them(location):
    with location.open() as opened:
        stored(opened, 300)
        # one key, two rows: a composite key (a, b) and a single key spelt "a<U+001F>b"
        shared = np.array([[0.5] * DIMENSION, [-0.25] * DIMENSION], dtype=np.float32)
        opened.write_vectors(IDENTITY, [("1:a1:b", "a\x1fb", "d")], shared[:1])
        with opened.snapshot() as snapshot:
            whole = snapshot.matrix(IDENTITY)
            found = snapshot.vectors_of(IDENTITY, ["k00000", "k00119", "é", "😀", "a\x1fb", "no"])
            nothing = snapshot.vectors_of(OTHER, ["k00000"])
    rows = dict(zip(whole.keys, whole.vectors))
    assert sorted(found) == ["k00000", "k00119", "é", "😀"]  # "a\x1fb" is the key of two rows
    for key, vector in found.items():
        assert vector.dtype == np.float32 and vector.shape == (DIMENSION,)
        assert same_bits(vector, rows[key])
    assert nothing == {}


@pytest.mark.parametrize("what", ["nan", "short"])
def test_a_damaged_vector_read_by_key_is_left_out_for_the_stream_to_report(location, what):
    if what == "nan" and location.kind == "pgvector":
        pytest.skip("pgvector cannot hold NaN (tests/hostile/test_damaged_pgvector_store.py)")
    with location.open() as opened:
        stored(opened, 300)
        with opened.snapshot() as snapshot:
            order = snapshot.matrix(IDENTITY).keys
        damage(location, order[150], what)
        with opened.snapshot() as snapshot:
            found = snapshot.vectors_of(IDENTITY, [order[150], order[3]])
            with pytest.raises(StoreDamaged):
                list(snapshot.vector_blocks(IDENTITY, 16))
    assert list(found) == [order[3]]
