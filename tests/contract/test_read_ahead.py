"""The pgvector snapshot reads the next block of vectors on a thread while the caller scores the one
it holds.

What a caller must still be able to count on: the blocks in order, an error
from a later block raised to it after the earlier blocks, and a snapshot it
can use again the moment it stops reading early (an exact search's second
pass reads only the first blocks), with no reading thread left behind.
"""

from __future__ import annotations

import threading
import time
from itertools import islice

import pytest

from ptah.adapters.stores.pgvector_snapshot import _read_ahead
from ptah.core.errors import StoreUnavailable
from tests.contract.test_store_contract import IDENTITY, location  # noqa: F401 (fixture)
from tests.contract.test_vector_blocks_contract import joined, same_bits, stored


def readers() -> int:
    return sum(thread.name == "ptah-read-ahead" for thread in threading.enumerate())


@pytest.fixture
def postgres(location):  # noqa: F811 (the fixture imported above)
    if location.kind != "pgvector":
        pytest.skip("only the pgvector snapshot reads ahead")
    return location


def test_a_caller_stopping_after_two_blocks_finds_the_snapshot_free_and_no_reader_left(postgres):
    with postgres.open() as opened:
        stored(opened, 300)
        with opened.snapshot() as snapshot:
            whole = snapshot.matrix(IDENTITY)
            first = list(islice(snapshot.vector_blocks(IDENTITY, 16), 2))
            assert readers() == 0
            assert snapshot.vector_count(IDENTITY) == 300  # the connection answers at once
            again = list(
                snapshot.vector_blocks(IDENTITY, 16)
            )  # and streams the whole from the start
    assert [len(block.keys) for block in first] == [16, 16] and first[0].keys == whole.keys[:16]
    keys, _, vectors = joined(again)
    assert keys == whole.keys and same_bits(vectors, whole.vectors)


def test_what_reading_a_later_block_raises_reaches_the_caller_after_the_blocks_before_it():
    def blocks():
        yield "first"
        yield "second"
        raise StoreUnavailable("the store went away.")

    taken = []
    with pytest.raises(StoreUnavailable) as raised:
        for block in _read_ahead(blocks()):
            taken.append(block)
    assert taken == ["first", "second"] and str(raised.value) == "the store went away."
    assert readers() == 0


def test_a_reader_waiting_on_a_full_queue_ends_when_the_caller_closes_the_stream():
    read = []

    def blocks():
        for number in range(100):
            read.append(number)
            yield number

    stream = _read_ahead(blocks())
    assert next(stream) == 0
    while len(read) < 3:  # 1 waits in the queue, 2 in the reader's hand
        time.sleep(0.01)
    stream.close()
    assert readers() == 0
    assert read == [0, 1, 2]  # none read after it was told to stop
