"""The server's records behave the same in every store kind that keeps them: ``ptah serve`` keeps
tokens, corpora and evaluations there, on SQLite and on PostgreSQL alike; another kind is refused."""

from __future__ import annotations

import threading

import pytest

from ptah.adapters.stores.base import Capabilities, StoreKind
from ptah.adapters.stores.registry import register, unregister
from ptah.core.errors import CapabilityUnavailable
from ptah_serve.records import TABLES, open_records


@pytest.fixture(params=["sqlite", "pgvector"])
def location(request, tmp_path) -> str:
    return (
        request.getfixturevalue("postgres_url")
        if request.param == "pgvector"
        else str(tmp_path / ".ptah" / "ptah.db")
    )


def test_records_add_put_get_list_in_the_order_first_added(location):
    records = open_records(location)
    try:
        assert records.add("token", "b", '{"n": 1}') is True
        assert records.add("token", "b", "other") is False  # the first body stays
        assert records.add("token", "a", "é \u202e ∑") is True
        records.put("token", "b", '{"n": 2}')  # replaced, keeping its place
        records.put("corpus", "c", "x" * 1_000_000)
        assert records.get("token", "b") == '{"n": 2}'
        assert records.get("token", "zz") is None
        assert records.items("token") == [("b", '{"n": 2}'), ("a", "é \u202e ∑")]
        assert records.get("corpus", "c") == "x" * 1_000_000
    finally:
        records.close()
    reopened = open_records(location)  # a second process sees what the first committed
    try:
        assert reopened.items("token") == [("b", '{"n": 2}'), ("a", "é \u202e ∑")]
    finally:
        reopened.close()


def test_records_take_calls_from_many_threads(location):
    records = open_records(location)
    try:

        def work(thread: int) -> None:
            for index in range(20):
                records.put("evaluation", f"{thread}-{index}", str(index))
                assert records.get("evaluation", f"{thread}-{index}") == str(index)

        threads = [threading.Thread(target=work, args=(number,)) for number in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(records.items("evaluation")) == 160
    finally:
        records.close()


def test_a_store_kind_that_keeps_no_records_is_refused_in_one_sentence():
    register(StoreKind("toy", Capabilities(), lambda value: value.startswith("toy:"), None))
    try:
        with pytest.raises(CapabilityUnavailable) as raised:
            open_records("toy:somewhere")
    finally:
        unregister("toy")
    assert str(raised.value) == 'the store kind "toy" keeps no records, which the server needs.'
    assert (raised.value.exit_code, sorted(TABLES)) == (3, ["pgvector", "sqlite"])
