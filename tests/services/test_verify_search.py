"""Verify (coverage, freshness, orphans) and exact search, on real SQLite files."""

from __future__ import annotations

import numpy as np
import pytest

from ptah.adapters.embedders.deterministic import DeterministicEmbedder
from ptah.core.errors import EXIT_INPUT, InputError, NotBuilt
from ptah.services.build import build
from ptah.services.search import search
from ptah.services.verify import list_generations, verify


def recorder() -> DeterministicEmbedder:
    return DeterministicEmbedder(dimension=32)


@pytest.fixture
def built(workspace):
    with workspace.project() as project:
        build(project)
    return workspace


def counts(result):
    return (
        result.rows,
        result.vectors,
        result.covered,
        result.fresh,
        result.stale,
        result.missing,
        result.orphans,
    )


# --- verify ---------------------------------------------------------------------


NEW_ROWS = [(100 + i, f"t{i}", f"b{i}") for i in range(15)]


@pytest.mark.parametrize(
    "change, found, offenders, measured",
    [
        # a fresh build verifies complete and fresh
        (lambda space: None, (10, 10, 10, 10, 0, 0, 0), ((), (), ()), (1.0, 1.0, True, True, True)),
        # an update of the source makes exactly those rows stale
        (
            lambda space: space.execute(
                "UPDATE articles SET body = 'Rewritten.' WHERE id IN (7, 3)"
            ),
            (10, 10, 10, 8, 2, 0, 0),
            (("3", "7"), (), ()),
            (1.0, 0.8, True, False, False),
        ),
        # new rows are missing, and offenders stop at ten, in source order
        (
            lambda space: space.execute(
                "INSERT INTO articles VALUES (?, ?, ?, 'published')", NEW_ROWS
            ),
            (25, 10, 10, 10, 0, 15, 0),
            ((), tuple(str(100 + i) for i in range(10)), ()),
            (10 / 25, 1.0, False, True, False),
        ),
        # the vectors of rows that left the filter are orphans
        (
            lambda space: space.write_spec(filter="status = 'published'"),
            (9, 10, 9, 9, 0, 0, 1),
            ((), (), ("9",)),
            (1.0, 1.0, True, True, False),
        ),
    ],
    ids=["fresh", "stale", "missing", "orphans"],
)
def test_verify_counts_stale_missing_and_orphaned_rows(built, change, found, offenders, measured):
    change(built)
    with built.project() as project:
        result = verify(project)
    assert counts(result) == found
    assert (result.stale_keys, result.missing_keys, result.orphan_keys) == offenders
    assert (
        result.coverage,
        result.freshness,
        result.complete,
        result.fresh_ok,
        result.ok,
    ) == measured
    assert result.built is True


def test_a_generation_never_built_has_every_row_missing_and_no_store_is_created(workspace):
    with workspace.project() as project:
        result = verify(project)
    assert counts(result) == (10, 0, 0, 0, 0, 10, 0)
    assert result.missing_keys == tuple(str(i) for i in range(1, 11))
    assert (result.built, result.coverage, result.freshness, result.ok) == (False, 0.0, None, False)
    assert not workspace.store_path.exists()


def test_an_empty_table_is_complete_with_coverage_not_applicable(workspace):
    workspace.execute("DELETE FROM articles")
    with workspace.project() as project:
        build(project)
        result = verify(project)
    assert counts(result) == (0, 0, 0, 0, 0, 0, 0)
    assert (result.coverage, result.freshness, result.ok) == (None, None, True)


def test_list_shows_declared_generations_never_built(workspace):
    workspace.write_spec(
        generations={
            "docs": "model: ptah/deterministic\n    dimension: 32",
            "other": "model: ptah/deterministic\n    dimension: 16",
        }
    )
    with workspace.project() as project:
        build(project, "docs")
        listings = list_generations(project)
        other = project.generation("other").identity.identity
    assert [
        (item.name, item.status, item.vectors, item.rows, item.coverage) for item in listings
    ] == [
        ("docs", "current", 10, 10, 1.0),
        ("other", "not built", 0, 10, 0.0),
    ]
    assert listings[1].identity == other


def test_list_shows_a_declared_generation_whose_model_is_missing(workspace):
    workspace.write_spec(
        generations={
            "docs": "model: ptah/deterministic\n    dimension: 32",
            "gone": "model: ./no-such-model-folder",
        }
    )
    with workspace.project() as project:
        listings = list_generations(project)
    assert [(item.name, item.identity, item.status) for item in listings] == [
        ("docs", listings[0].identity, "not built"),
        ("gone", "", "model unavailable"),
    ]


# --- search ---------------------------------------------------------------------


def expected_ranking(workspace, query: str, rows) -> list[tuple[str, float]]:
    """The ranking by the formula: float32 cosine of unit vectors, score descending then key
    ascending."""
    embedder = recorder()
    documents = embedder.embed_documents([workspace.text(row) for row in rows])
    (query_vector,) = embedder.embed_queries([query])
    scores = documents @ query_vector
    return sorted(
        ((str(row[0]), float(score)) for row, score in zip(rows, scores)),
        key=lambda e: (-e[1], e[0]),
    )


def test_ties_are_broken_by_key_ascending(built):
    built.execute(
        "INSERT INTO articles VALUES (?, ?, ?, 'published')",
        [(12, "Twin", "Same text."), (11, "Twin", "Same text.")],
    )
    with built.project() as project:
        build(project)
        (ranked,) = search(project, None, ["twin same text"], 2)
    assert [key for key, _ in ranked] == ["11", "12"]
    assert ranked[0][1] == ranked[1][1]


def test_all_queries_of_a_call_are_answered_in_order_and_k_beyond_n_returns_all(built):
    queries = ["reset password", "webhooks json endpoint", "api tokens"]
    with built.project() as project:
        results = search(project, None, queries, 50)
    assert [ranked[0][0] for ranked in results] == ["2", "10", "8"]
    assert [len(ranked) for ranked in results] == [10, 10, 10]
    expected = expected_ranking(built, "webhooks json endpoint", built.docs)
    assert [key for key, _ in results[1]] == [key for key, _ in expected]
    # float32 products may differ in the last bit with the BLAS kernel's summation order.
    assert np.allclose(
        [score for _, score in results[1]], [score for _, score in expected], rtol=0, atol=1e-6
    )


def test_the_matrix_is_read_once_per_project(built, monkeypatch):
    from ptah.adapters.stores.sqlite import StoreSnapshot

    reads = []
    original = StoreSnapshot.matrix
    monkeypatch.setattr(
        StoreSnapshot,
        "matrix",
        lambda self, identity: reads.append(identity) or original(self, identity),
    )
    with built.project() as project:
        search(project, None, ["billing"], 1)
        search(project, None, ["password"], 1)
        assert reads == [project.generation().identity.identity]


def test_unnormalised_vectors_are_normalised_at_search(workspace):
    workspace.write_spec(
        generations={"docs": "model: ptah/deterministic\n    dimension: 32\n    normalize: false"}
    )
    with workspace.project() as project:
        build(project)
        (ranked,) = search(project, None, ["export invoices from billing"], 10)
    expected = expected_ranking(workspace, "export invoices from billing", workspace.docs)
    assert [key for key, _ in ranked] == [key for key, _ in expected]
    assert np.allclose(
        [score for _, score in ranked], [score for _, score in expected], rtol=0, atol=1e-6
    )


def test_search_refuses_k_below_one_and_a_generation_never_built(workspace):
    with workspace.project() as project:
        with pytest.raises(InputError, match="at least 1") as raised:
            search(project, None, ["x"], 0)
        assert raised.value.exit_code == EXIT_INPUT
        with pytest.raises(
            NotBuilt, match="has not been built with its current settings"
        ) as raised:
            search(project, None, ["x"], 3)
        assert raised.value.exit_code == 3


MINILM_ROWS = [
    (
        1,
        "Cancelling your subscription",
        "To stop paying, open the billing page and choose cancel plan.",
    ),
    (
        2,
        "Resetting a forgotten password",
        "Click 'forgot password' on the sign-in screen to get a reset email.",
    ),
    (3, "Shipping times", "Orders leave our warehouse within two business days."),
    (
        4,
        "Adding a teammate",
        "Workspace admins can invite colleagues by email from the members page.",
    ),
    (5, "Dark mode", "Switch the interface to a dark theme under appearance settings."),
    (6, "Refund policy", "Purchases can be refunded within thirty days of the order."),
]


def test_the_real_minilm_model_finds_a_paraphrase_first(workspace):
    workspace.execute("DELETE FROM articles")
    workspace.execute("INSERT INTO articles VALUES (?, ?, ?, 'published')", MINILM_ROWS)
    workspace.write_spec(
        generations={"minilm": "model: sentence-transformers/all-MiniLM-L6-v2"}, active="minilm"
    )
    queries = [
        "I can't log in because I don't remember my passphrase",
        "how do I stop being charged every month",
        "can I get my money back",
        "make the screen colours darker",
    ]
    with workspace.project() as project:
        summary = build(project)
        results = search(project, None, queries, 3)
        result = verify(project)
    assert (summary.rows, summary.embedded, summary.dimension) == (6, 6, 384)
    assert [ranked[0][0] for ranked in results] == ["2", "1", "6", "5"]
    assert all(0.3 < ranked[0][1] <= 1.0001 and ranked[0][1] > ranked[1][1] for ranked in results)
    assert result.ok
