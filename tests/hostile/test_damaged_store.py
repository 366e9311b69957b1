"""A damaged store: garbage in the file, a truncated file, vectors that are not finite.

``verify`` must never call a damaged store "ok", and no command may measure,
rank or list from it as if it were sound: each says the store is damaged
(exit 3) and how to rebuild without deleting anything. Every command runs
through the CLI, in this process.
"""

from __future__ import annotations

import json
import random
import sqlite3
import struct

import numpy as np
import pytest

from tests.conftest import run_cli
from tests.services.conftest import Workspace

ROWS = [
    (i, f"Article {i}", f"Body of article {i}: " + "words " * (i % 7 + 3), "published")
    for i in range(1, 241)
]
CORPUS = """\
version: 1
default_k: 5
cases:
  - id: c1
    query: Article 5
    relevant: {"5": 1}
  - id: c2
    query: Body of article 17
    relevant: {"17": 1, "18": 1}
"""
COMMANDS = {
    "verify": ["inference", "verify"],
    "evaluate": ["inference", "evaluate", "--corpus", "corpus.yaml", "--json"],
    "search": ["inference", "search", "Article 5", "-k", "3"],
    "list": ["inference", "list"],
}
REMEDY = "; move it aside and run `ptah inference build` again.\n"


@pytest.fixture
def built(tmp_path, capsys, monkeypatch):
    """240 articles built into a SQLite store (deterministic model, dimension 32), in the working
    folder."""
    space = Workspace(tmp_path)
    space.execute(
        "CREATE TABLE articles (id INTEGER PRIMARY KEY, title TEXT, body TEXT, status TEXT)"
    )
    space.execute("INSERT INTO articles VALUES (?, ?, ?, ?)", ROWS)
    space.write_spec()
    (tmp_path / "corpus.yaml").write_text(CORPUS)
    monkeypatch.chdir(tmp_path)
    assert run_cli(capsys, "inference", "build", "--quiet")[0] == 0
    return space


def ptah(capsys, command: str) -> tuple[int, str, str]:
    return run_cli(capsys, *COMMANDS[command])


def contents(path) -> list:
    """Every row of every ptah table, read afresh; raises sqlite3.Error on a file SQLite cannot
    read."""
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return [
            connection.execute(f"SELECT * FROM {t} ORDER BY rowid").fetchall()
            for t in ("migrations", "generations", "vectors", "query_cache", "lexical_indexes")
        ]
    finally:
        connection.close()


def damaged(store, what: str) -> str:
    return f"store {store} is damaged ({what}){REMEDY}"


def change(path, statement: str, parameters=()) -> int:
    """Run one statement on the store with SQLite itself, as a tool other than ptah could; the rows
    it changed."""
    connection = sqlite3.connect(path)
    with connection:
        changed = connection.execute(statement, parameters).rowcount
    connection.close()
    return changed


def _set_value(path, key: str, position: int, value: float) -> None:
    """Overwrite one float32 of a stored vector."""
    with sqlite3.connect(path) as connection:
        blob = bytearray(
            connection.execute("SELECT vector FROM vectors WHERE key = ?", (key,)).fetchone()[0]
        )
    blob[4 * position : 4 * position + 4] = struct.pack("<f", value)
    assert change(path, "UPDATE vectors SET vector = ? WHERE key = ?", (bytes(blob), key)) == 1


def refused_by(capsys, commands, expected: str) -> None:
    for command in commands:
        assert ptah(capsys, command) == (3, "", expected), command


@pytest.mark.parametrize(
    "offset, found",
    [
        (0, "SQLite: file is not a database"),  # the file header
        (100, "SQLite: database disk image is malformed"),
    ],
)  # page 1's b-tree
def test_garbage_over_the_header_or_the_first_page_is_damage_to_every_command(
    built, capsys, offset, found
):
    with open(built.store_path, "r+b") as handle:
        handle.seek(offset)
        handle.write(b"\xa5" * 100)
    refused_by(capsys, COMMANDS, damaged(built.store_path, found))


@pytest.mark.parametrize("size", [50, 4096, 0.5])
def test_a_truncated_store_is_damage_to_every_command(built, capsys, size):
    length = built.store_path.stat().st_size
    with open(built.store_path, "r+b") as handle:
        handle.truncate(int(length * size) if isinstance(size, float) else size)
    refused_by(
        capsys, COMMANDS, damaged(built.store_path, "SQLite: database disk image is malformed")
    )


def test_verify_is_ok_only_when_every_row_of_the_store_is_as_built(built, capsys):
    """100 bytes of garbage into every page of the store, one page at a time.

    ``verify`` may say "ok" only when the store's contents still read exactly
    as built (the garbage fell on unused bytes); otherwise it says the store
    is damaged. ``evaluate`` either measures exactly what it measured before
    or says the store is damaged. No command ends any other way.
    """
    code, report, _ = ptah(
        capsys, "evaluate"
    )  # caches the query vectors, so they are in the store too
    assert code == 0
    measured = [run["cases"] for run in json.loads(report)["runs"]]
    assert not built.store_path.with_name(
        "ptah.db-wal"
    ).exists()  # every commit is in the file itself
    pristine = built.store_path.read_bytes()
    rows = contents(built.store_path)
    page = 4096
    garbage = random.Random(9).randbytes(100)
    verdicts = {"ok": 0, "damaged": 0}
    for start in range(0, len(pristine), page):
        broken = bytearray(pristine)
        broken[start + 900 : start + 1000] = garbage
        built.store_path.with_name("ptah.db-wal").unlink(
            missing_ok=True
        )  # what the last evaluate wrote
        built.store_path.write_bytes(bytes(broken))
        code, out, err = ptah(capsys, "verify")
        if code == 0:
            assert out.endswith("ok: complete and fresh\n") and err == ""
            assert contents(built.store_path) == rows, (
                f"verify said ok on a store damaged at byte {start + 900}"
            )
            verdicts["ok"] += 1
        else:
            assert (code, out) == (3, "")
            assert err.startswith(f"store {built.store_path} is damaged (SQLite") and err.endswith(
                REMEDY
            )
            verdicts["damaged"] += 1
        code, out, err = ptah(capsys, "evaluate")
        if code == 0:
            assert [run["cases"] for run in json.loads(out)["runs"]] == measured
        else:
            assert (code, out) == (3, "")
            assert err.startswith(f"store {built.store_path} is damaged (") and err.endswith(REMEDY)
        for command in ("search", "list"):
            code, out, err = ptah(capsys, command)
            assert code == 0 or (
                code == 3 and err.startswith(f"store {built.store_path} is damaged (")
            ), (command, err)
    assert verdicts["damaged"] >= len(pristine) // page // 2, verdicts  # most pages are in use


@pytest.mark.parametrize(
    "bits",
    [0x7FC00000, 0xFFC00001, 0x7F800000, 0xFF800000],
    ids=["nan", "negative-nan", "inf", "-inf"],
)
def test_a_vector_that_is_not_finite_is_never_measured(built, capsys, bits):
    value = struct.unpack("<f", struct.pack("<I", bits))[0]
    _set_value(built.store_path, "17", 0, value)
    _set_value(built.store_path, "5", 31, value)
    expected = damaged(
        built.store_path,
        "2 of 240 vectors of generation docs hold NaN or infinite values, the first for key '5'; "
        "ptah never writes such vectors",
    )
    refused_by(capsys, ("verify", "evaluate", "search"), expected)


def test_a_vector_of_the_wrong_size_is_damage(built, capsys):
    assert (
        change(
            built.store_path, "UPDATE vectors SET vector = substr(vector, 1, 64) WHERE key = '9'"
        )
        == 1
    )
    expected = damaged(built.store_path, "a vector of generation docs is not 32 float32 values")
    refused_by(capsys, ("verify", "evaluate", "search"), expected)


def test_a_vector_changed_in_place_fails_its_crc(built, capsys):
    _set_value(built.store_path, "9", 3, 0.125)  # finite, the right size: only the CRC-32 tells
    expected = damaged(
        built.store_path,
        "1 of 240 vectors of generation docs differ from what ptah wrote (their CRC-32 does not match), "
        "the first for key '9'",
    )
    refused_by(capsys, ("verify",), expected)


def test_a_key_that_is_not_utf8_is_damage_and_its_bytes_are_not_echoed(built, capsys):
    assert (
        change(
            built.store_path, "UPDATE vectors SET key = CAST(x'1b5b324aff' AS TEXT) WHERE key = '9'"
        )
        == 1
    )
    refused_by(
        capsys,
        ("evaluate", "search"),
        damaged(built.store_path, "SQLite: a stored text is not UTF-8"),
    )


@pytest.mark.parametrize("value", [np.nan, np.inf, 0.5], ids=["nan", "inf", "finite-but-changed"])
def test_a_cached_query_vector_that_cannot_be_trusted_is_embedded_again(built, capsys, value):
    code, first, _ = ptah(capsys, "evaluate")
    assert code == 0
    blob = np.full(32, value, "<f4").tobytes()
    assert (
        change(
            built.store_path, "UPDATE query_cache SET vector = ? WHERE query = 'Article 5'", (blob,)
        )
        == 1
    )
    code, second, _ = ptah(capsys, "evaluate")
    assert code == 0
    assert [run["cases"] for run in json.loads(second)["runs"]] == [
        run["cases"] for run in json.loads(first)["runs"]
    ]
    assert json.loads(second)["runs"][0]["generation"]["queries_from_cache"] == 1
    connection = sqlite3.connect(built.store_path)
    blob = connection.execute(
        "SELECT vector FROM query_cache WHERE query = 'Article 5'"
    ).fetchone()[0]
    connection.close()
    assert np.isfinite(np.frombuffer(blob, "<f4")).all() and len(blob) == 128
