"""A store whose records were changed outside ptah, on both stores: never measured, never an
internal error.

A vector moved under another row's key, a generation's settings that are not
JSON, a stored dimension no model gives (10^12 would allocate terabytes), a
lexical index whose postings point outside it or that unpacks to gigabytes:
each is one sentence, exit 3, for every command that reads it. A leftover
parsed-corpus record (the parse cache is gone) is never used.
"""

from __future__ import annotations

import hashlib
import importlib
import io
import json
import sqlite3
import zipfile
from pathlib import Path

import numpy as np
import psycopg
import pytest

from ptah.adapters.lexical import unpacked_limit
from ptah.adapters.stores.base import key_of, misfiled
from ptah.adapters.stores.pgvector_schema import vectors_table
from ptah.core.spec import redact_url
from tests.conftest import run_cli
from tests.contract.conftest import make_workspace
from tests.services.conftest import DOCS, Workspace

CORPUS = """\
version: 1
default_k: 3
cases:
  - {id: cancel, query: cancel a subscription, relevant: {"1": 1}}
  - {id: invoices, query: export invoices as PDF, relevant: {"3": 1}}
"""
VERIFY = ("inference", "verify")
EVALUATE = ("inference", "evaluate", "--corpus", "corpus.yaml", "--json")
SEARCH = ("inference", "search", "cancel", "-k", "3")
LIST = ("inference", "list")
LEXICAL = (*EVALUATE, "--channel", "lexical")


class Built:
    """The published DOCS built into one store kind, in the working folder; SQL on that store as
    another tool."""

    def __init__(self, space, kind: str, url: str | None):
        self.space, self.kind, self.url = space, kind, url
        with space.project() as project:
            self.table = vectors_table(project.generation().identity.identity)

    def change(
        self, sqlite_statement: str, postgres_statement: str | None = None, parameters=()
    ) -> int:
        """Run a statement on the store (``{vectors}``: the generation's vectors table); the rows it
        changed."""
        if self.kind == "sqlite":
            connection = sqlite3.connect(self.space.store_path)
            with connection:
                changed = connection.execute(
                    sqlite_statement.replace("{vectors}", "vectors"), parameters
                ).rowcount
            connection.close()
            return changed
        statement = (
            (postgres_statement or sqlite_statement)
            .replace("{vectors}", self.table)
            .replace("?", "%s")
        )
        with psycopg.connect(self.url, autocommit=True) as connection:
            return connection.execute(statement, parameters).rowcount

    def lexical_blob(self) -> bytes:
        lexical = "lexical_indexes" if self.kind == "sqlite" else "ptah_lexical_indexes"
        if self.kind == "sqlite":
            with sqlite3.connect(self.space.store_path) as connection:
                return connection.execute(f"SELECT serialized FROM {lexical}").fetchone()[0]
        with psycopg.connect(self.url) as connection:
            return bytes(connection.execute(f"SELECT serialized FROM {lexical}").fetchone()[0])

    def replace_lexical(self, blob: bytes) -> None:
        table = "lexical_indexes" if self.kind == "sqlite" else "ptah_lexical_indexes"
        assert self.change(f"UPDATE {table} SET serialized = ?", None, (blob,)) == 1

    def damaged(self, what: str, remedy: str) -> str:
        """The one sentence each store says."""
        if self.kind == "sqlite":
            return f"store {self.space.store_path} is damaged ({what}); move it aside and run `ptah inference build` again.\n"
        return f"store {redact_url(self.url)} is damaged: {what}; {remedy}\n"


@pytest.fixture(params=["sqlite", "pgvector"])
def built(request, tmp_path, capsys, monkeypatch) -> Built:
    url = request.getfixturevalue("postgres_url") if request.param == "pgvector" else None
    space = make_workspace(tmp_path / "project", url)
    (space.folder / "corpus.yaml").write_text(CORPUS)
    monkeypatch.chdir(space.folder)
    assert run_cli(capsys, "inference", "build", "--quiet")[0] == 0
    return Built(space, request.param, url)


def cases_of(result) -> tuple[int, list, str]:
    """An evaluate's exit code, each run's cases and stderr (the report's time aside)."""
    code, out, err = result
    return code, [run["cases"] for run in json.loads(out)["runs"]], err


def refused(capsys, expected: str, *commands) -> None:
    for argv in commands:
        assert run_cli(capsys, *argv) == (3, "", expected), argv


def test_a_vector_moved_under_another_rows_key_is_damage_found_by_verify(built, capsys):
    code, before, _ = run_cli(capsys, *EVALUATE)
    assert code == 0
    assert json.loads(before)["runs"][0]["cases"][0]["results"][0]["key"] == "1"
    # rows 1 and 2 trade keys: row 1's vector ("Cancel a subscription") would rank as row 2, every
    # vector intact
    assert built.change("UPDATE {vectors} SET key = '1' WHERE key = '2'", None) == 1
    assert built.change("UPDATE {vectors} SET key = '2' WHERE row_identity = '1:1'", None) == 1
    what = (
        "2 of 10 vectors of generation docs are stored under a key that is not their row's, the first under key "
        "'2'; ptah never writes such keys"
    )
    refused(
        capsys,
        built.damaged(
            what,
            f"delete those rows from table {built.table} and run `ptah inference build` "
            "to embed them again.",
        ),
        VERIFY,
        EVALUATE,
        SEARCH,
    )


def test_settings_that_are_not_json_are_damage_to_every_command(built, capsys):
    # PostgreSQL keeps jsonb, always JSON: the damage there is JSON that is not an object
    assert (
        built.change(
            "UPDATE generations SET settings = '{\"model\": '",
            "UPDATE ptah_generations SET settings = '[1, 2]'",
        )
        == 1
    )
    what = "the settings of generation 'docs' do not read as a JSON object"
    refused(
        capsys,
        built.damaged(
            what,
            "it was changed outside ptah: restore ptah_generations from a backup, or "
            "build into a new store.",
        ),
        VERIFY,
        EVALUATE,
        SEARCH,
        LIST,
    )


def test_a_dimension_no_model_gives_is_damage_to_every_command_and_allocates_nothing(built, capsys):
    dimension = 10**12 if built.kind == "sqlite" else 2**31 - 1  # PostgreSQL's column is an integer
    assert (
        built.change(
            "UPDATE generations SET dimension = ?",
            "UPDATE ptah_generations SET dimension = ?",
            (dimension,),
        )
        == 1
    )
    what = f"generation 'docs' is recorded with dimension {dimension}, which no model gives (1 to 65,536)"
    refused(
        capsys,
        built.damaged(
            what,
            "it was changed outside ptah: restore ptah_generations from a backup, or "
            "build into a new store.",
        ),
        VERIFY,
        EVALUATE,
        SEARCH,
        LIST,
    )


def _rezipped(blob: bytes, **members: bytes) -> bytes:
    """The serialised index with ``members`` (by file name, ``.`` as ``_``) replaced or added."""
    replaced = {name.replace("_", "."): data for name, data in members.items()}
    out = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(blob)) as source,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target,
    ):
        for name in source.namelist():
            target.writestr(name, replaced.pop(name, None) or source.read(name))
        for name, data in replaced.items():
            target.writestr(name, data)
    return out.getvalue()


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def _members(blob: bytes) -> dict[str, np.ndarray]:
    with zipfile.ZipFile(io.BytesIO(blob)) as archive:
        return {
            name: np.load(io.BytesIO(archive.read(name)))
            for name in archive.namelist()
            if name.endswith(".npy")
        }


def test_a_lexical_index_that_points_outside_itself_or_unpacks_to_gigabytes_is_damage(
    built, capsys
):
    code, first, _ = run_cli(capsys, *LEXICAL)
    assert code == 0
    pristine = built.lexical_blob()
    arrays = _members(pristine)
    limit = unpacked_limit([str(row[0]) for row in DOCS], [Workspace.text(row) for row in DOCS])
    remedy = "delete that index's row from its lexical_indexes table, and the next evaluate builds it again."
    where = (
        f"store {built.space.store_path}"
        if built.kind == "sqlite"
        else f"store {redact_url(built.url)}"
    )
    cases = {
        "has postings out of range": _rezipped(
            pristine, indices_csc_index_npy=_npy(arrays["indices.csc.index.npy"] + 1000)
        ),
        "names a token it has no postings for": _rezipped(
            pristine, indptr_csc_index_npy=_npy(arrays["indptr.csc.index.npy"][:3])
        ),
        "has an array data.csc.index.npy whose size is not its header's": _rezipped(
            pristine, data_csc_index_npy=_npy(arrays["data.csc.index.npy"])[:-4]
        ),
        f"unpacks to more than {limit:,} bytes": _rezipped(
            pristine, data_csc_index_npy=bytes(64 * 2**20)
        ),
        "does not read (BadZipFile: File is not a zip file)": b"PK" + bytes(100),
    }
    for why, blob in cases.items():
        built.replace_lexical(blob)
        expected = f"{where} is damaged: its stored lexical index {why}; {remedy}\n"
        assert run_cli(capsys, *LEXICAL) == (3, "", expected), why
    built.replace_lexical(pristine)
    assert cases_of(run_cli(capsys, *LEXICAL)) == cases_of((0, first, ""))


def test_a_leftover_parsed_corpus_record_is_never_used(tmp_path, capsys, monkeypatch):
    """The store once kept each corpus's parse under the SHA-256 of the loader and the file; a
    record forged there (another relevant row) must change nothing: the file is what is measured."""
    space = make_workspace(tmp_path, None)
    (space.folder / "corpus.yaml").write_text(CORPUS)
    monkeypatch.chdir(space.folder)
    assert run_cli(capsys, "inference", "build", "--quiet")[0] == 0
    measured = cases_of(run_cli(capsys, *EVALUATE))
    forged = {
        "name": "corpus.yaml",
        "description": None,
        "default_k": 3,
        "cases": [
            {
                "id": "cancel",
                "query": "cancel a subscription",
                "k": 3,
                "required": [],
                "relevant": [["8", 1]],
                "forbidden": [],
                "line": 4,
            }
        ],
    }
    loader = hashlib.sha256()
    for name in ("ptah.adapters.corpus_yaml", "ptah.adapters.yaml_nodes", "ptah.core.corpus"):
        loader.update(Path(importlib.import_module(name).__file__).read_bytes())
    key = hashlib.sha256(loader.hexdigest().encode() + b"\0" + CORPUS.encode()).hexdigest()
    with sqlite3.connect(space.store_path) as connection:
        connection.execute(
            "INSERT INTO records (kind, key, body, updated_at) VALUES ('corpus-parse', ?, ?, '')",
            (key, json.dumps(forged)),
        )
    assert cases_of(run_cli(capsys, *EVALUATE)) == measured


def test_each_key_is_checked_against_the_identity_it_is_stored_with():
    sep = "\x1f"
    keys = ["5", f"acme{sep}2", f"a{sep}b{sep}c", f"a{sep}b{sep}c", "ü😀"]
    identities = [
        "1:5",
        "4:acme1:2",
        f"3:a{sep}b1:c",
        f"1:a3:b{sep}c",
        "2:ü😀",
    ]  # U+001F inside a component too
    assert misfiled(keys, identities) == (0, None)
    assert [key_of(identity) for identity in identities] == keys
    assert misfiled(keys[::-1], identities) == (4, "ü😀")
    for forged in (
        "",
        "5",
        "2:5",
        "1:",
        "x:5",
        "٣:abc",
        "1:51:",
    ):  # not row identities (Arabic-Indic 3 too)
        assert misfiled(["5"], [forged]) == (1, "5"), forged
