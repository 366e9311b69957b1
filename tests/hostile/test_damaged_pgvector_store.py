"""A pgvector store changed outside ptah, on the real PostgreSQL server.

pgvector itself refuses NaN and infinities on every input path, so what can
reach a generation's table is limited; this proves that, and that what can
be written (a vector of another dimension once the column's type is loosened,
garbage in the query cache's ``bytea``) is never measured.
"""

from __future__ import annotations

import json

import numpy as np
import psycopg
import pytest

from ptah.adapters.stores.pgvector_schema import encode_rows, vectors_table
from ptah.core.spec import redact_url
from tests.conftest import run_cli
from tests.contract.conftest import make_workspace

CORPUS = """\
version: 1
default_k: 3
cases:
  - id: cancel
    query: cancel a subscription
    relevant: {"1": 1}
  - id: invoices
    query: export invoices as PDF
    relevant: {"3": 1}
"""


@pytest.fixture
def pg_built(tmp_path, postgres_url, capsys, monkeypatch):
    """The ten DOCS built into a pgvector store (deterministic model, dimension 32); (workspace,
    table name)."""
    space = make_workspace(tmp_path / "project", postgres_url)
    (space.folder / "corpus.yaml").write_text(CORPUS)
    monkeypatch.chdir(space.folder)
    assert run_cli(capsys, "inference", "build", "--quiet")[0] == 0
    with space.project() as project:
        identity = project.generation().identity.identity
    return space, vectors_table(identity)


def test_nan_and_infinities_cannot_enter_a_generation_table(pg_built, postgres_url):
    _, table = pg_built
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        for text in ("NaN", "Infinity", "-Infinity"):
            with pytest.raises(psycopg.DataError):
                connection.execute(
                    f"UPDATE {table} SET embedding = %s::vector WHERE key = '1'",
                    ("[" + ",".join([text] + ["0"] * 31) + "]",),
                )
        for value in (np.nan, np.inf, -np.inf):
            vector = np.zeros((1, 32), dtype=np.float32)
            vector[0, 5] = value
            with pytest.raises(psycopg.DataError):
                with connection.cursor().copy(f"COPY {table} FROM STDIN (FORMAT BINARY)") as copy:
                    copy.write(encode_rows([("2:99", "99", "0" * 64)], vector))
        big = "[" + ",".join(["3e38"] * 32) + "]"
        with pytest.raises(psycopg.DataError):  # arithmetic that overflows float32
            connection.execute(
                f"UPDATE {table} SET embedding = %s::vector + %s::vector WHERE key = '1'",
                (big, big),
            )
        non_finite = connection.execute(
            f"SELECT count(*) FROM {table} WHERE 'NaN'::real = ANY(embedding::real[]) "
            "OR 'Infinity'::real = ANY(embedding::real[]) OR '-Infinity'::real = ANY(embedding::real[])"
        ).fetchone()[0]
    assert non_finite == 0


def test_a_vector_of_another_dimension_is_damage_to_every_command(pg_built, postgres_url, capsys):
    space, table = pg_built
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute(f"ALTER TABLE {table} ALTER COLUMN embedding TYPE vector")
        connection.execute(f"UPDATE {table} SET embedding = '[1,2,3]' WHERE key = '4'")
    with space.project() as project:
        identity = project.generation().identity.identity
    where = f"store {redact_url(postgres_url)}"
    expected = (
        f": generation {identity}: a stored vector does not have the generation's dimension, so the table was changed "
        "outside ptah; delete the rows whose vector_dims(embedding) differs and run `ptah inference build` to embed "
        "them again.\n"
    )
    for argv in (["verify"], ["evaluate", "--corpus", "corpus.yaml"], ["search", "cancel"]):
        code, out, err = run_cli(capsys, "inference", *argv)
        assert (code, out) == (3, ""), argv
        assert err.startswith(where) and err.endswith(expected), (argv, err)


def test_a_sound_pgvector_store_still_verifies(pg_built, capsys):
    code, out, err = run_cli(capsys, "inference", "verify")
    assert (code, err) == (0, "")
    assert out.endswith("ok: complete and fresh\n")


@pytest.mark.parametrize(
    "blob",
    [
        np.full(32, np.nan, "<f4").tobytes(),
        np.full(32, np.inf, "<f4").tobytes(),
        np.ones(31, "<f4").tobytes(),
        b"",
    ],
    ids=["nan", "inf", "short", "empty"],
)
def test_a_cached_query_vector_that_cannot_be_used_is_embedded_again(
    pg_built, postgres_url, capsys, blob
):
    argv = ("inference", "evaluate", "--corpus", "corpus.yaml", "--json")
    code, first, err = run_cli(capsys, *argv)
    assert code == 0, err
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        changed = connection.execute(
            "UPDATE ptah_query_cache SET vector = %s WHERE query = 'cancel a subscription'", (blob,)
        ).rowcount
    assert changed == 1
    code, second, err = run_cli(capsys, *argv)
    assert code == 0, err
    runs = [json.loads(report)["runs"][0] for report in (first, second)]
    assert runs[1]["cases"] == runs[0]["cases"]
    assert runs[1]["generation"]["queries_from_cache"] == 1
    with psycopg.connect(postgres_url) as connection:
        stored = connection.execute(
            "SELECT vector FROM ptah_query_cache WHERE query = 'cancel a subscription'"
        ).fetchone()[0]
    assert len(stored) == 128 and np.isfinite(np.frombuffer(stored, "<f4")).all()
