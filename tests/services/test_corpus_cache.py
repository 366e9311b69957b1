"""A corpus parsed once per content (ptah.services.corpus_cache): the same corpus as a fresh parse, always."""

from __future__ import annotations

import json
import sqlite3

import pytest

import ptah
from ptah.core.errors import CorpusError
from ptah.services import corpus_cache
from ptah.services.build import build
from ptah.services.documents import load_corpus

CORPUS = """\
version: 1
name: cached
default_k: 3
cases:
  # a comment the parse drops
  - id: cancel
    query: "how do I cancel"
    required: ["1"]
  - id: graded
    query: reset my password
    k: 5
    relevant: {"2": 2, "0042": 0.5}
    forbidden: [9]
"""


def parses(store_path) -> list[tuple[str, dict]]:
    connection = sqlite3.connect(store_path)
    try:
        rows = connection.execute("SELECT key, body FROM records WHERE kind = ?", (corpus_cache.KIND,)).fetchall()
    finally:
        connection.close()
    return [(key, json.loads(body)) for key, body in rows]


def same(a, b) -> None:
    """Equal as corpora, and in what equality leaves out: lines, path, the order of grades."""
    assert a == b
    assert a.digest == b.digest
    assert (a.name, a.description, a.default_k, a.path) == (b.name, b.description, b.default_k, b.path)
    assert [(c.line, list(c.relevant.items()), c.required, c.forbidden) for c in a.cases] == \
           [(c.line, list(c.relevant.items()), c.required, c.forbidden) for c in b.cases]


@pytest.fixture
def built(workspace):
    with workspace.project() as project:
        build(project, "docs")
    (workspace.folder / "c.yaml").write_text(CORPUS)
    return workspace


def test_a_second_read_comes_from_the_store_and_equals_a_fresh_parse(built):
    path = built.folder / "c.yaml"
    with ptah.open_project(built.spec_path) as project:
        first = project.load_corpus(path)
        [(key, body)] = parses(built.store_path)
        assert [case["id"] for case in body["cases"]] == ["cancel", "graded"]
        assert body["cases"][1]["relevant"] == [["2", 2], ["0042", 0.5]]
        second = project.load_corpus(path)
    fresh = load_corpus(path)
    same(first, fresh)
    same(second, fresh)
    assert [case.line for case in second.cases] == [6, 9]
    assert parses(built.store_path) == [(key, body)]


def test_the_parse_comes_from_the_record_not_the_file(built, monkeypatch):
    path = built.folder / "c.yaml"
    with ptah.open_project(built.spec_path) as project:
        project.load_corpus(path)

        def no_parse(*args, **kwargs):
            raise AssertionError("parsed again")

        monkeypatch.setattr("ptah.adapters.corpus_yaml.parse_corpus", no_parse)
        assert project.load_corpus(path).digest == load_corpus(path).digest


def test_a_changed_file_is_parsed_again_under_a_new_key(built):
    path = built.folder / "c.yaml"
    with ptah.open_project(built.spec_path) as project:
        before = project.load_corpus(path)
        path.write_text(CORPUS.replace("how do I cancel", "how do I cancel it"))
        after = project.load_corpus(path)
    assert after.cases[0].query == "how do I cancel it"
    assert after.digest != before.digest
    assert after.digest == load_corpus(path).digest
    assert len(parses(built.store_path)) == 2


def test_a_record_that_does_not_read_back_is_parsed_again_and_replaced(built):
    path = built.folder / "c.yaml"
    with ptah.open_project(built.spec_path) as project:
        project.load_corpus(path)
        [(key, _)] = parses(built.store_path)
        connection = sqlite3.connect(built.store_path)
        with connection:
            connection.execute("UPDATE records SET body = ? WHERE kind = ?", ('{"cases": [{"id": 1}]}', corpus_cache.KIND))
        connection.close()
        same(project.load_corpus(path), load_corpus(path))
    assert parses(built.store_path)[0][0] == key
    assert parses(built.store_path)[0][1]["cases"][0]["id"] == "cancel"


def test_a_corpus_with_problems_is_refused_every_time_and_never_kept(built):
    path = built.folder / "c.yaml"
    path.write_text(CORPUS.replace("required:", "requried:"))
    with ptah.open_project(built.spec_path) as project:
        for _ in range(2):
            with pytest.raises(CorpusError) as caught:
                project.load_corpus(path)
            assert caught.value.exit_code == 2
            assert "requried" in str(caught.value)
    assert parses(built.store_path) == []


def test_reading_a_corpus_never_creates_a_store(workspace):
    path = workspace.folder / "c.yaml"
    path.write_text(CORPUS)
    with ptah.open_project(workspace.spec_path) as project:
        same(project.load_corpus(path), load_corpus(path))
    assert not workspace.store_path.exists()


def test_a_store_that_cannot_keep_the_parse_still_reads_the_corpus(built, monkeypatch):
    from ptah.adapters.stores.record_tables import SqliteRecords
    from ptah.core.errors import StoreUnavailable

    def refuse(*args, **kwargs):
        raise StoreUnavailable("attempt to write a readonly database")

    monkeypatch.setattr(SqliteRecords, "put", refuse)
    monkeypatch.setattr(SqliteRecords, "get", refuse)
    path = built.folder / "c.yaml"
    with ptah.open_project(built.spec_path) as project:
        same(project.load_corpus(path), load_corpus(path))
    assert parses(built.store_path) == []


def test_the_judgement_record_is_read_every_time(built):
    path = built.folder / "c.yaml"
    with ptah.open_project(built.spec_path) as project:
        assert project.load_corpus(path).judgements.digest() == load_corpus(path).judgements.digest()
        (built.folder / "c.judged.yaml").write_text(
            "version: 1\ncases:\n  cancel:\n    \"7\": {grade: 0, text_sha256: \"" + "a" * 64 + "\", "
            "judged_at: \"2026-11-30T12:00:00Z\"}\n"
        )
        corpus = project.load_corpus(path)
    assert corpus.case("cancel").judged == frozenset({"7"})
    assert corpus.judgements.digest() == load_corpus(path).judgements.digest()
