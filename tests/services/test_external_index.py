"""Index search of an external generation: the index the table already has on its column, in a real
PostgreSQL.

The table holds generation ``own``'s very vectors (ten rows), so an index
that finds every row (HNSW at ef_search 40; IVFFlat with one list) must
give ``own``'s exact numbers, and ``--search both`` an ANN recall of 1.
"""

from __future__ import annotations

import numpy as np
import pytest

from ptah.core.request import SearchOptions
from tests.contract.conftest import postgres_database, postgres_server, postgres_url  # noqa: F401 (fixtures)
from tests.services.test_external_vectors import (
    evaluate_cli,
    pg_table,
    ptah_in,
    runs,
    sqlite_external,  # noqa: F401 (a fixture)
)


@pytest.fixture
def pg_external(sqlite_external, postgres_server, postgres_database):
    """The articles in PostgreSQL with ``embedding vector(32)`` holding ``own``'s vectors; the spec
    reads them there."""
    workspace, vectors = sqlite_external
    db = pg_table(workspace, vectors, postgres_server, postgres_database)
    yield workspace, db
    db.close()


def test_hnsw_index_of_the_table_is_searched_and_measured_against_exact(pg_external, capsys):
    workspace, db = pg_external
    db.execute(
        "CREATE INDEX articles_embedding_hnsw ON articles USING hnsw (embedding vector_cosine_ops)"
    )
    exact = runs(workspace, "own")["own"]
    both = runs(workspace, "ext", search=SearchOptions("both"))["ext"]
    assert both["search"] == {
        "channel": "vector",
        "mode": "both",
        "similarity": "cosine",
        "ranking": both["search"]["ranking"],
        "index": {
            "name": "articles_embedding_hnsw",
            "kind": "hnsw",
            "m": 16,
            "ef_construction": 64,
            "operator_class": "vector_cosine_ops",
            "table": "articles",
            "column": "embedding",
        },
        "ef_search": 40,
    }
    assert {k: both["aggregates"][k] for k in ("recall", "mrr", "ndcg")} == {
        k: exact["aggregates"][k] for k in ("recall", "mrr", "ndcg")
    }
    assert both["aggregates"]["ann"]["recall"]["value"] == 1.0
    assert [c["ann"]["recall"] for c in both["cases"]] == [1.0, 1.0, 1.0, 1.0]
    code, output = evaluate_cli(capsys, workspace, "--search", "index", "--ef-search", "10")
    assert code == 1  # case c3 leaks its forbidden key, as in exact search
    assert (
        "searched with index articles_embedding_hnsw (hnsw, m 16, ef_construction 64) at ef_search 10"
        in output
    )


def test_ivfflat_index_searches_the_servers_probes(pg_external, capsys):
    workspace, db = pg_external
    db.execute(
        "CREATE INDEX articles_ivf ON articles USING ivfflat (embedding vector_cosine_ops) WITH (lists = 1)"
    )
    exact = runs(workspace, "own")["own"]
    both = runs(workspace, "ext", search=SearchOptions("both"))["ext"]
    assert both["search"]["index"] == {
        "name": "articles_ivf",
        "kind": "ivfflat",
        "lists": 1,
        "probes": 1,
        "operator_class": "vector_cosine_ops",
        "table": "articles",
        "column": "embedding",
    }
    assert "ef_search" not in both["search"]
    assert both["aggregates"]["recall"] == exact["aggregates"]["recall"]
    assert both["aggregates"]["ann"]["recall"]["value"] == 1.0
    code, output = evaluate_cli(capsys, workspace, "--search", "index")
    assert code == 1 and "searched with index articles_ivf (ivfflat, lists 1) at probes 1" in output
    code, output = evaluate_cli(capsys, workspace, "--search", "index", "--ef-search", "10")
    assert code == 2
    assert (
        "--ef-search applies to HNSW; the index articles_ivf on table articles, column embedding is IVFFlat (it "
        "searches the server's ivfflat.probes lists)"
    ) in output


@pytest.mark.parametrize(
    "index, mode, message",
    [
        (
            "CREATE INDEX articles_l2 ON articles USING hnsw (embedding vector_l2_ops)",
            "index",
            "table articles, column embedding: its index articles_l2 (hnsw, vector_l2_ops) ranks by another measure than "
            "cosine, the similarity ptah scores with (vector_cosine_ops or halfvec_cosine_ops); evaluate with --search exact",
        ),
        (
            None,
            "both",
            "table articles, column embedding has no HNSW or IVFFlat index to search (no index at all); create "
            "one with USING hnsw (embedding vector_cosine_ops), or evaluate with --search exact",
        ),
        (
            "CREATE INDEX articles_btree ON articles (embedding)",
            "index",
            "has no HNSW or IVFFlat index to search (only articles_btree (btree))",
        ),
    ],
)
def test_an_index_of_another_operator_class_or_no_index_on_the_column_is_refused(
    pg_external, capsys, index, mode, message
):
    workspace, db = pg_external
    if index is not None:
        db.execute(index)
    code, output = evaluate_cli(capsys, workspace, "--search", mode)
    assert code == 2 and message in output


def test_inner_product_is_accepted_only_on_unit_length_vectors(pg_external, capsys):
    workspace, db = pg_external
    db.execute("CREATE INDEX articles_ip ON articles USING hnsw (embedding vector_ip_ops)")
    exact = runs(workspace, "own")["own"]
    index = runs(workspace, "ext", search=SearchOptions("index"))["ext"]
    assert index["search"]["index"]["operator_class"] == "vector_ip_ops"
    assert index["aggregates"]["recall"] == exact["aggregates"]["recall"]
    assert [c["results"][0]["key"] for c in index["cases"]] == [
        c["results"][0]["key"] for c in exact["cases"]
    ]
    db.execute(
        "UPDATE articles SET embedding = (SELECT array_agg(x * 2)::vector FROM unnest(embedding::real[]) x) "
        "WHERE id = 5"
    )  # twice as long: inner product no longer ranks as cosine
    code, output = evaluate_cli(capsys, workspace, "--search", "index")
    assert code == 2
    assert (
        "table articles, column embedding: its index articles_ip (hnsw, vector_ip_ops) ranks by another measure "
        "than cosine, the similarity ptah scores with (vector_cosine_ops or halfvec_cosine_ops); inner product "
        "would rank as cosine only if every vector were unit length, and some are not; evaluate with --search "
        "exact"
    ) in output


def test_a_sqlite_source_has_no_index(sqlite_external, capsys):
    workspace, _ = sqlite_external
    code, output = evaluate_cli(capsys, workspace, "--search", "index")
    assert code == 2
    assert (
        'generation "ext" reads column embedding of table articles in sqlite:///source.db, where no vector index '
        "exists to search; evaluate it with --search exact"
    ) in output


def test_the_filter_applies_to_the_index_search_and_a_hostile_one_is_refused(pg_external, capsys):
    workspace, db = pg_external
    db.execute(
        "CREATE INDEX articles_embedding_hnsw ON articles USING hnsw (embedding vector_cosine_ops)"
    )
    url_spec = workspace.spec_path.read_text()
    workspace.spec_path.write_text(
        url_spec.replace("  key_fields:", "  filter: \"title NOT LIKE '%roadmap%'\"\n  key_fields:")
    )
    index = runs(workspace, "ext", search=SearchOptions("both"))["ext"]
    assert index["generation"]["rows"] == 9
    assert all(r["key"] != "9" for c in index["cases"] for r in c["results"])
    assert index["aggregates"]["ann"]["recall"]["value"] == 1.0
    workspace.spec_path.write_text(
        url_spec.replace("  key_fields:", '  filter: "1); DROP TABLE articles; --"\n  key_fields:')
    )
    code, output = evaluate_cli(capsys, workspace, "--search", "index")
    assert code == 2 and "source.filter" in output
    assert db.execute("SELECT count(*) FROM articles").fetchone()[0] == 10


HALF_ERROR = (
    2.0**-10
)  # bound on a cosine score's change when a unit vector is rounded to float16 (see below)


@pytest.mark.parametrize("column_type", ["halfvec(32)", "vector(32)"])
def test_half_precision_vectors_rank_as_the_built_generation(
    sqlite_external, postgres_server, postgres_database, column_type
):
    """A halfvec column (or, where the server's pgvector predates halfvec, 0.7, a vector column
    holding the same float16-rounded values a halfvec hands back) ranks every case as the built
    generation does.

    Rounding to float16 moves each component by at most 2^-11 of itself, so a unit vector moves by
    at most 2^-11 and, scaled back to unit length, by at most 2^-10; a cosine with a unit query
    moves as much. So each score is asserted within 2^-10 (+1e-6 for float32 arithmetic) of the
    built generation's, and -- since no two rows of these cases score within 2 x 2^-10 of each other
    at the ranks that count -- the same keys in the same order, hence exactly the same recall, MRR
    and nDCG means.
    """
    workspace, vectors = sqlite_external
    with postgres_server.admin(postgres_database) as db:
        db.execute("CREATE EXTENSION IF NOT EXISTS vector")
        version = db.execute(
            "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
        ).fetchone()[0]
    half = column_type.startswith("halfvec")
    if half and tuple(int(part) for part in version.split(".")[:2]) < (0, 7):
        pytest.skip(
            f"pgvector {version} has no halfvec type (0.7 added it); the vector(32) case holds its values"
        )
    rounded = {
        key: vector if half else vector.astype(np.float16).astype(np.float32)
        for key, vector in vectors.items()
    }
    with pg_table(workspace, rounded, postgres_server, postgres_database, column_type) as db:
        if half:
            db.execute(
                "CREATE INDEX articles_half ON articles USING hnsw (embedding halfvec_cosine_ops)"
            )
    measured = runs(workspace, "own", "ext")
    own, ext = measured["own"], measured["ext"]
    assert {k: ext["aggregates"][k] for k in ("recall", "mrr", "ndcg")} == {
        k: own["aggregates"][k] for k in ("recall", "mrr", "ndcg")
    }
    for own_case, ext_case in zip(own["cases"], ext["cases"]):
        assert [r["key"] for r in ext_case["results"]] == [r["key"] for r in own_case["results"]]
        assert (
            max(
                abs(a["score"] - b["score"])
                for a, b in zip(ext_case["results"], own_case["results"])
            )
            <= HALF_ERROR + 1e-6
        )
    if half:
        index = runs(workspace, "ext", search=SearchOptions("both"))["ext"]
        assert index["search"]["index"]["operator_class"] == "halfvec_cosine_ops"
        assert index["aggregates"]["ann"]["recall"]["value"] == 1.0


def test_a_query_model_of_another_dimension_is_refused_naming_the_column(pg_external, capsys):
    workspace, _ = pg_external
    workspace.spec_path.write_text(
        workspace.spec_path.read_text().replace(
            "vectors: {column: embedding}\n    model: ptah/deterministic\n    dimension: 32",
            "vectors: {column: embedding}\n    model: ptah/deterministic\n    dimension: 16",
        )
    )
    expected = (
        'generation "ext": column embedding holds vectors of dimension 32, and its model ptah/deterministic '
        "embeds the queries at dimension 16; name the model that made the column's vectors"
    )
    code, output = evaluate_cli(capsys, workspace)
    assert code == 2 and expected in output
    code, output = ptah_in(capsys, workspace, "inference", "search", "-g", "ext", "password")
    assert code == 2 and expected in " ".join(output.split())
