"""External generations: vectors the table already holds, in a SQLite BLOB or JSON column and a real
pgvector column.

The table is filled with the very vectors ptah's own generation of the same
model stores, so evaluating the external generation must give that built
generation's numbers exactly.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from ptah.adapters.corpus_yaml import parse_corpus
from ptah.services.build import build
from ptah.services.evaluate import evaluate
from ptah.services.search import search
from ptah.services.verify import verify
from tests.conftest import run_cli
from tests.contract.conftest import postgres_database, postgres_server, postgres_url  # noqa: F401 (fixtures)
from tests.services.conftest import request

OWN = "model: ptah/deterministic\n    dimension: 32\n    batch_size: 4"
EXTERNAL = "vectors: {column: embedding}\n    model: ptah/deterministic\n    dimension: 32"
CORPUS = """\
version: 1
default_k: 3
cases:
  - {id: c1, query: cancel my subscription, required: ["1"]}
  - {id: c2, query: forgot password, required: ["2"], relevant: {"2": 2, "7": 1}}
  - {id: c3, query: webhook json endpoint, required: ["10"], forbidden: ["8"]}
  - {id: c4, query: invite people, required: ["4"]}
"""


def own_vectors(workspace) -> dict[str, np.ndarray]:
    """Build ptah's own generation ``own`` and return its stored vectors by key."""
    with workspace.project() as project:
        build(project, "own")
        matrix = project.matrix(project.generation("own"))
        return {key: matrix.vectors[i].copy() for i, key in enumerate(matrix.keys)}


def runs(workspace, *names, **options) -> dict[str, dict]:
    corpus = parse_corpus(CORPUS, name="c.yaml")
    with workspace.project() as project:
        report = evaluate(project, corpus, request(names=names, **options)).to_dict()
    return {r["generation"]["name"]: r for r in report["runs"]}


def ptah_in(capsys, workspace, *argv) -> tuple[int, str]:
    """``ptah ARGV --spec`` the workspace's: the exit code, and stdout and stderr as one text."""
    code, out, err = run_cli(capsys, *argv, "--spec", workspace.spec_path)
    return code, out + err


def evaluate_cli(capsys, workspace, *options) -> tuple[int, str]:
    """``ptah inference evaluate -g ext`` on CORPUS (written to ``c.yaml``): the exit code and the
    output, its lines joined (a narrow terminal wraps them)."""
    (workspace.folder / "c.yaml").write_text(CORPUS)
    code, output = ptah_in(
        capsys,
        workspace,
        "inference",
        "evaluate",
        "--corpus",
        workspace.folder / "c.yaml",
        "-g",
        "ext",
        *options,
    )
    return code, " ".join(output.split())


def pg_table(workspace, vectors, server, database, column_type: str = "vector(32)"):
    """The articles in PostgreSQL with ``embedding COLUMN_TYPE`` holding ``vectors`` (by key), the
    spec reading them there; the admin connection, open."""
    db = server.admin(database)
    db.execute("CREATE EXTENSION IF NOT EXISTS vector")
    db.execute(
        f"CREATE TABLE articles (id integer PRIMARY KEY, title text, body text, status text, "
        f"embedding {column_type})"
    )
    for row in workspace.docs:
        text = "[" + ",".join(repr(float(x)) for x in vectors[str(row[0])]) + "]"
        db.execute(f"INSERT INTO articles VALUES (%s, %s, %s, %s, %s::{column_type})", (*row, text))
    spec = workspace.spec_path.read_text()
    workspace.spec_path.write_text(spec.replace("sqlite:///source.db", server.url(database)))
    return db


@pytest.fixture
def sqlite_external(workspace):
    """The articles with an ``embedding`` BLOB column filled with generation ``own``'s vectors."""
    workspace.execute("ALTER TABLE articles ADD COLUMN embedding BLOB")
    workspace.write_spec(generations={"own": OWN, "ext": EXTERNAL}, active="own")
    vectors = own_vectors(workspace)
    workspace.execute(
        "UPDATE articles SET embedding = ? WHERE id = ?",
        [(vectors[str(row[0])].astype("<f4").tobytes(), row[0]) for row in workspace.docs],
    )
    return workspace, vectors


def test_sqlite_blob_vectors_measure_exactly_as_the_built_generation(sqlite_external):
    workspace, _ = sqlite_external
    measured = runs(workspace, "own", "ext")
    own, ext = measured["own"], measured["ext"]
    assert ext["aggregates"] == own["aggregates"]
    assert [c["results"] for c in ext["cases"]] == [c["results"] for c in own["cases"]]
    verification = ext["generation"]["verification"]
    assert (verification["rows"], verification["covered"], verification["missing"]) == (10, 10, 0)
    assert verification["freshness"] is None and verification["fresh_ok"] is None
    assert verification["freshness_note"] == "cannot be verified: the vectors are the table's"
    assert ext["generation"]["settings"]["vectors"] == {"column": "embedding"}
    with workspace.project() as project:  # search reads the same vectors
        assert search(project, "ext", ["forgot password"], 3) == search(
            project, "own", ["forgot password"], 3
        )


def test_json_array_text_reads_like_the_blob(sqlite_external):
    workspace, vectors = sqlite_external
    workspace.execute(
        "UPDATE articles SET embedding = ? WHERE id = ?",
        [
            (json.dumps([float(x) for x in vectors[str(row[0])]]), row[0])
            for row in workspace.docs[:5]
        ],
    )
    measured = runs(workspace, "own", "ext")
    assert measured["ext"]["aggregates"] == measured["own"]["aggregates"]


def test_null_vectors_are_missing_rows_refused_unless_allow_stale(sqlite_external, capsys):
    workspace, _ = sqlite_external
    workspace.execute("UPDATE articles SET embedding = NULL WHERE id IN (3, 9)")
    with workspace.project() as project:
        result = verify(project, "ext")
    assert (result.rows, result.covered, result.missing, result.missing_keys) == (
        10,
        8,
        2,
        ("3", "9"),
    )
    code, output = evaluate_cli(capsys, workspace)
    assert code == 3
    assert (
        'generation "ext" is not complete and fresh: 2 of 10 rows have no vector (e.g. 3, 9). Fill the table\'s '
        "missing vectors, or pass --allow-stale"
    ) in output
    code, output = ptah_in(capsys, workspace, "inference", "verify", "ext")
    assert code == 1
    assert "  freshness  cannot be verified: the vectors are the table's\n" in output
    assert output.endswith("not ok: 2 rows without a vector; fill them in the table\n")
    assert runs(workspace, "ext", allow_stale=True)["ext"]["generation"]["rows"] == 8


def test_a_column_without_any_vector_has_nothing_to_measure(sqlite_external, capsys):
    workspace, _ = sqlite_external
    workspace.execute("UPDATE articles SET embedding = NULL")
    with workspace.project() as project:
        assert (verify(project, "ext").covered, verify(project, "ext").missing) == (0, 10)
    code, output = evaluate_cli(capsys, workspace, "--allow-stale")
    assert code == 3
    assert (
        'generation "ext" has no vector to measure: none of the 10 rows passing the filter holds one in column '
        "embedding"
    ) in output


def test_mixed_dimensions_are_refused_naming_rows(sqlite_external, capsys):
    workspace, _ = sqlite_external
    workspace.execute(
        "UPDATE articles SET embedding = ? WHERE id IN (4, 6)", (np.ones(31, "<f4").tobytes(),)
    )
    code, output = evaluate_cli(capsys, workspace)
    assert code == 2
    assert (
        "column embedding holds vectors of 2 dimensions (31: 2 rows, 32: 8 rows); 2 rows differ from the 32 of "
        "most, e.g. the rows with keys '4', '6'"
    ) in output


@pytest.mark.parametrize(
    "value, why",
    [
        (b"\x00\x00\x80", "1 rows hold a BLOB of 3 bytes"),
        ("[1, NaN]", "1 rows hold a component that is not a finite number"),
        (
            np.array([1, np.inf], "<f4").tobytes(),
            "1 rows hold a component that is not a finite number",
        ),
        ("not json", "1 rows hold text that is not a JSON array of numbers"),
        (7.5, "1 rows hold a value of type float"),
    ],
)
def test_unreadable_vectors_are_refused(sqlite_external, capsys, value, why):
    workspace, _ = sqlite_external
    workspace.execute("UPDATE articles SET embedding = ? WHERE id = 5", (value,))
    code, output = ptah_in(capsys, workspace, "inference", "search", "-g", "ext", "password")
    assert code == 2
    assert f"column embedding cannot be read as vectors: {why}" in output and "keys '5'" in output


def test_build_is_refused(sqlite_external, capsys):
    workspace, _ = sqlite_external
    code, output = ptah_in(capsys, workspace, "inference", "build", "ext")
    assert code == 2
    assert "its vectors are the table's; nothing to build" in output


@pytest.mark.parametrize("field", ["text: '{title}'", "document_prefix: 'passage: '"])
def test_fields_that_shape_row_text_are_refused_beside_vectors(workspace, capsys, field):
    workspace.write_spec(generations={"ext": EXTERNAL + "\n    " + field}, active="ext")
    code, output = ptah_in(capsys, workspace, "inference", "search", "-g", "ext", "password")
    assert code == 2
    assert "has no effect beside vectors:" in output


def test_the_filter_applies_and_a_hostile_one_is_refused_before_any_vector_is_read(
    sqlite_external, capsys
):
    workspace, _ = sqlite_external
    workspace.write_spec(
        generations={"own": OWN, "ext": EXTERNAL}, active="own", filter="status = 'published'"
    )
    assert runs(workspace, "ext")["ext"]["generation"]["rows"] == 9
    workspace.write_spec(
        generations={"own": OWN, "ext": EXTERNAL},
        active="own",
        filter="1); DROP TABLE articles; --",
    )
    code, output = ptah_in(capsys, workspace, "inference", "search", "-g", "ext", "password")
    assert code == 2 and "source.filter" in output
    workspace.write_spec(generations={"own": OWN, "ext": EXTERNAL}, active="own")
    assert runs(workspace, "ext")["ext"]["generation"]["rows"] == 10  # the table is still there


def test_the_identity_holds_no_database_url_and_changes_with_the_column(sqlite_external):
    workspace, _ = sqlite_external
    with workspace.project() as project:
        parts = project.generation("ext").identity.parts
    assert parts["format"] == "ptah-external@1"
    assert parts["vectors"] == {"table": "articles", "column": "embedding"}
    assert "source.db" not in json.dumps(parts)


def test_postgres_pgvector_column_measures_exactly_as_the_built_generation(
    sqlite_external, postgres_server, postgres_database, capsys
):
    workspace, vectors = sqlite_external
    pg_table(workspace, vectors, postgres_server, postgres_database).close()
    measured = runs(workspace, "own", "ext")
    own, ext = measured["own"], measured["ext"]
    assert ext["aggregates"] == own["aggregates"]
    assert [c["results"] for c in ext["cases"]] == [c["results"] for c in own["cases"]]
    with postgres_server.admin(postgres_database) as db:
        db.execute("UPDATE articles SET embedding = NULL WHERE id = 9")
        db.execute("ALTER TABLE articles ADD COLUMN other vector")
        db.execute("UPDATE articles SET other = '[1,2]'::vector WHERE id = 2")
        db.execute("UPDATE articles SET other = '[1,2,3]'::vector WHERE id <> 2")
    with workspace.project() as project:
        assert verify(project, "ext").missing_keys == ("9",)
    workspace.spec_path.write_text(
        workspace.spec_path.read_text().replace("column: embedding", "column: other")
    )
    code, output = ptah_in(capsys, workspace, "inference", "search", "-g", "ext", "password")
    assert code == 2
    assert (
        "column other holds vectors of 2 dimensions (2: 1 rows, 3: 9 rows); 1 rows differ from the 3 of most, "
        "e.g. the rows with keys '2'"
    ) in output


def test_minilm_vectors_in_the_example_table_measure_exactly_as_its_built_generation(tmp_path):
    """The bundled example, with the real MiniLM: its own generation's vectors copied into a BLOB
    column."""
    import sqlite3

    from ptah.services.project import open_project
    from tests.cli.conftest import CORPUS as SUPPORT
    from tests.cli.conftest import copy_example

    spec = copy_example(tmp_path) / "ptah.yaml"
    spec.write_text(
        spec.read_text().replace(
            "\ngenerations:\n",
            "\ngenerations:\n  production:\n    vectors: "
            "{column: embedding}\n    model: sentence-transformers/all-MiniLM-L6-v2\n    max_seq_length: 256\n",
            1,
        )
    )
    with open_project(str(spec)) as project:
        build(project, "title-body")
        matrix = project.matrix(project.generation("title-body"))
        pairs = [
            (matrix.vectors[i].astype("<f4").tobytes(), key) for i, key in enumerate(matrix.keys)
        ]
    with sqlite3.connect(tmp_path / "support.db") as db:
        db.execute("ALTER TABLE articles ADD COLUMN embedding BLOB")
        db.executemany("UPDATE articles SET embedding = ? WHERE id = ?", pairs)
    db.close()
    corpus = parse_corpus(SUPPORT.read_text(), name="support.yaml")
    with open_project(str(spec)) as project:
        report = evaluate(project, corpus, request(names=("title-body", "production"))).to_dict()
    own, production = report["runs"]
    assert production["aggregates"] == own["aggregates"]
    assert [c["results"] for c in production["cases"]] == [c["results"] for c in own["cases"]]
    assert production["generation"]["verification"]["coverage"] == 1.0


def test_list_shows_the_columns_coverage_and_index_is_refused(sqlite_external, capsys):
    workspace, _ = sqlite_external
    workspace.execute("UPDATE articles SET embedding = NULL WHERE id = 3")
    runs(
        workspace, "ext", allow_stale=True
    )  # the store now holds the external generation's query cache
    code, output = ptah_in(capsys, workspace, "inference", "list", "--json")
    assert code == 0
    listed = {entry["name"]: entry for entry in json.loads(output)}
    ext = listed["ext"]
    assert (
        ext["status"],
        ext["vectors"],
        ext["rows"],
        ext["covered"],
        ext["coverage"],
        ext["dimension"],
    ) == ("external (the table's vectors)", 9, 10, 9, 0.9, 32)
    assert [entry["name"] for entry in json.loads(output)].count(
        "ext"
    ) == 1  # its cache record is not listed apart
    code, output = ptah_in(capsys, workspace, "inference", "list")
    assert code == 0 and "ext   external (the table's vectors)" in output
    code, output = ptah_in(capsys, workspace, "inference", "index", "ext", "--hnsw")
    assert code == 2
    assert (
        'generation "ext" reads its vectors from column embedding of the source table: its vectors are the '
        "table's; ptah uses the table's own index (evaluate --search index) and builds none"
    ) in output
