"""A NUL character in any text of a corpus is refused where it is written.

PostgreSQL text cannot hold a NUL, so a query or key with one would work on
the SQLite store and fail on pgvector; the loader refuses it, and both
stores accept the same corpora.
"""

from __future__ import annotations

import pytest

from tests.conftest import run_cli

NUL_MESSAGE = "holds a NUL character (\\x00), which a PostgreSQL store cannot keep; remove it"


@pytest.mark.parametrize(
    ("case", "where"),
    [
        (
            '  - id: c1\n    query: "a\\0b"\n    required: ["1"]\n',
            'corpus.yaml:5: case "c1": query',
        ),
        ('  - id: "c\\01"\n    query: q\n    required: ["1"]\n', "corpus.yaml:4: id"),
        (
            '  - id: c1\n    query: q\n    required: ["1\\0"]\n',
            'corpus.yaml:6: case "c1": required',
        ),
        (
            '  - id: c1\n    query: q\n    relevant: {"1\\0": 1}\n',
            'corpus.yaml:6: case "c1": relevant',
        ),
        (
            '  - id: c1\n    query: q\n    required: ["1"]\n    forbidden: ["\\x002"]\n',
            'corpus.yaml:7: case "c1": forbidden',
        ),
    ],
    ids=["query", "id", "required", "relevant", "forbidden"],
)
def test_a_nul_in_a_corpus_is_refused_with_its_place(tmp_path, monkeypatch, capsys, case, where):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "corpus.yaml").write_text("version: 1\ndefault_k: 10\ncases:\n" + case)
    code, out, err = run_cli(capsys, "corpus", "validate", "corpus.yaml")
    assert (code, out) == (2, "")
    assert err.splitlines() == [f"{where}: {NUL_MESSAGE}", "1 of 1 corpus files invalid"]


def test_a_nul_in_the_corpus_name_is_refused_too(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "corpus.yaml").write_text(
        'version: 1\nname: "x\\0"\ndefault_k: 10\ncases:\n  - {id: c, query: q, required: ["1"]}\n'
    )
    code, _, err = run_cli(capsys, "corpus", "validate", "corpus.yaml")
    assert code == 2
    assert err.splitlines()[0] == f"corpus.yaml:2: name: {NUL_MESSAGE}"
