"""What ``ptah serve`` needs of a record store beyond add/put/get/items, on SQLite and on PostgreSQL
alike: a page of a kind after a key, removing a record, and the one-server-per-store lock."""

from __future__ import annotations

import pytest

from ptah.core.errors import StoreUnavailable
from ptah_serve.records import open_records


@pytest.fixture(params=["sqlite", "pgvector"])
def location(request, tmp_path) -> str:
    return (
        request.getfixturevalue("postgres_url")
        if request.param == "pgvector"
        else str(tmp_path / ".ptah" / "ptah.db")
    )


def test_a_page_is_the_records_after_a_key_in_the_order_first_added_and_a_removed_record_is_gone(
    location,
):
    records = open_records(location)
    try:
        for key in ("c", "a", "d", "b"):
            records.add("evaluation", key, key.upper())
        records.add("token", "x", "X")
        assert records.page("evaluation", None, 3) == [("c", "C"), ("a", "A"), ("d", "D")]
        assert records.page("evaluation", "a", 5) == [("d", "D"), ("b", "B")]
        assert records.page("evaluation", "b", 5) == []
        assert records.page("evaluation", "nope", 5) == []
        assert (
            records.page("evaluation", "x", 5) == []
        )  # a key of another kind is no place in this one
        assert (records.remove("evaluation", "d"), records.remove("evaluation", "d")) == (
            True,
            False,
        )
        assert records.page("evaluation", "a", 5) == [("b", "B")]
    finally:
        records.close()


def test_one_server_lock_per_store_refused_at_once_and_free_again_once_released(location):
    first, second = open_records(location), open_records(location)
    try:
        with first.server_lock():
            with pytest.raises(StoreUnavailable) as refused:
                with second.server_lock():
                    pass
            assert str(refused.value).startswith(
                "another ptah serve is running on this store (pid "
            )
            assert str(refused.value).endswith("); stop it first: one server per store.")
        with second.server_lock():  # released by the first: the next server starts
            pass
    finally:
        first.close()
        second.close()
