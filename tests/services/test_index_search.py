"""Index search without a server: the options, the ANN recall, and the refusal on the SQLite
store."""

from __future__ import annotations

import pytest

from ptah.cli.words import COMMAND_LINE
from ptah.core.errors import EXIT_INPUT, EXIT_OPERATIONAL, CapabilityUnavailable, InputError
from ptah.core.request import DEFAULT_EF_SEARCH, SearchOptions
from ptah.services.channels.index import ann_recall, check_search
from ptah.services.index_search import build_index


def test_search_options_default_to_exact_and_ef_search_40():
    options = SearchOptions()
    assert (options.mode, options.uses_index, options.effective_ef_search) == (
        "exact",
        False,
        DEFAULT_EF_SEARCH,
    )
    assert SearchOptions("both", 200).effective_ef_search == 200


@pytest.mark.parametrize(
    ("mode", "ef_search", "message"),
    [
        ("fast", None, "search: must be one of exact, index, both, not 'fast'."),
        ("exact", 40, "ef_search: applies to index search; search in mode index or both."),
        ("index", 1001, "ef_search: must be a whole number from 1 to 1,000, not 1001."),
        ("both", True, "ef_search: must be a whole number from 1 to 1,000, not True."),
    ],
)
def test_bad_search_options_are_exit_2(mode, ef_search, message):
    with pytest.raises(InputError) as raised:
        SearchOptions(mode, ef_search)
    assert (str(raised.value), raised.value.exit_code) == (message, EXIT_INPUT)


def test_ann_recall_is_the_share_of_the_exact_top_k_returned():
    exact = [("a", 0.9), ("b", 0.8), ("c", 0.7)]
    assert ann_recall(["a", "b", "c"], exact, {}) == 1.0
    assert ann_recall(["c", "a", "x"], exact, {"x": 0.5}) == 2 / 3
    assert ann_recall(["x"], exact, {"x": 0.5}) == 0.0
    assert ann_recall([], exact, {}) == 0.0
    assert ann_recall(["a"], [], {}) is None  # nothing to find: N/A, never 0 or 1


def test_a_row_tied_with_the_exact_cutoff_counts_as_a_hit():
    exact = [("a", 0.9), ("b", 0.7)]
    assert ann_recall(["a", "z"], exact, {"a": 0.9, "z": 0.7}) == 1.0
    assert (
        ann_recall(["a", "z", "b"], exact, {"a": 0.9, "z": 0.7, "b": 0.7}) == 1.0
    )  # capped at the exact count


def test_the_sqlite_store_refuses_index_search_and_index_building(workspace):
    with workspace.project() as project:
        check_search(project, SearchOptions())  # exact: fine
        for mode in ("index", "both"):
            with pytest.raises(CapabilityUnavailable) as raised:
                check_search(project, SearchOptions(mode))
            assert raised.value.exit_code == EXIT_OPERATIONAL
            assert raised.value.said(COMMAND_LINE) == (
                f"--search {mode} needs a vector index, and the SQLite store has none; keep the "
                "generations in PostgreSQL with pgvector (store: postgresql://…) and build one "
                "with `ptah inference index NAME --hnsw`, or evaluate with --search exact."
            )
            assert str(raised.value) == (
                f"search={mode} needs a vector index, and the SQLite store has none; keep the "
                "generations in PostgreSQL with pgvector (store: postgresql://…) and build one "
                'with Project.index("NAME"), or evaluate with search=exact.'
            )
        with pytest.raises(CapabilityUnavailable) as raised:
            check_search(project, SearchOptions("both"), ["vector", "hybrid"])
        assert raised.value.said(COMMAND_LINE) == (
            "--search both applies to the vector channel; the hybrid channel fuses the exact vector "
            "ranking, so run it with --search exact (or evaluate the index on --channel vector)."
        )
        with pytest.raises(CapabilityUnavailable, match="^the SQLite store has no vector index;"):
            build_index(project)
        with pytest.raises(InputError) as refused:
            build_index(project, m=1)
        assert str(refused.value) == "m must be a whole number from 2 to 100, not 1."
        assert (
            refused.value.said(COMMAND_LINE) == "--m must be a whole number from 2 to 100, not 1."
        )
