"""A small built project for the file-I/O hostile tests: SQLite source, deterministic embedder, a
corpus."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from tests.cli.test_inference_cli import ROWS, SPEC  # the same three-row project
from tests.conftest import run_cli

REPO = Path(__file__).resolve().parents[2]
CORPUS = """\
version: 1
default_k: 2
cases:
  - {id: c1, query: "cancel my plan", relevant: {"1": 1}}
  - {id: c2, query: "reset password", relevant: {"2": 1}}
"""
_ENV = {**os.environ, "PYTHONPATH": str(REPO)}


def make_project(folder: Path) -> Path:
    """``folder`` with source.db, ptah.yaml and corpus.yaml, its generation built."""
    connection = sqlite3.connect(folder / "source.db")
    with connection:
        connection.execute("CREATE TABLE articles (id INTEGER PRIMARY KEY, title TEXT, body TEXT)")
        connection.executemany("INSERT INTO articles VALUES (?, ?, ?)", ROWS)
    connection.close()
    (folder / "ptah.yaml").write_text(SPEC)
    (folder / "corpus.yaml").write_text(CORPUS)
    assert run_cli(None, "inference", "build", "--spec", folder / "ptah.yaml", "--quiet").code == 0
    return folder


def beir_dataset(folder: Path) -> Path:
    folder.mkdir()
    (folder / "corpus.jsonl").write_text(
        '{"_id": "d1", "title": "A", "text": "alpha"}\n{"_id": "d2", "text": "beta"}\n'
    )
    (folder / "queries.jsonl").write_text('{"_id": "q1", "text": "alpha?"}\n')
    (folder / "qrels").mkdir()
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    return folder


def evaluate(project: Path, *extra) -> list[str]:
    return [
        "inference",
        "evaluate",
        "--spec",
        str(project / "ptah.yaml"),
        "--corpus",
        str(project / "corpus.yaml"),
        *[str(e) for e in extra],
    ]


def python_process(*argv, timeout: float = 60, **options) -> subprocess.CompletedProcess:
    """``python ARGV`` in a child process that sees this checkout, killed after ``timeout`` seconds
    (a hang fails the test)."""
    return subprocess.run(
        [sys.executable, *[str(a) for a in argv]],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=_ENV,
        **options,
    )


def ptah_process(*argv, timeout: float = 60, **options) -> subprocess.CompletedProcess:
    """``python -m ptah ARGV`` in a child process, killed after ``timeout`` seconds."""
    return python_process("-m", "ptah", *argv, timeout=timeout, **options)


def ptah_popen(*argv) -> subprocess.Popen:
    """``python -m ptah ARGV`` started in a child process, stdout discarded, stderr piped (text)."""
    return subprocess.Popen(
        [sys.executable, "-m", "ptah", *[str(a) for a in argv]],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=_ENV,
    )
