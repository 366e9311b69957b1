"""The bundled example, built once per test session with the real MiniLM model (both generations)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_cli

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "support"
CORPUS = REPO / "corpora" / "support.yaml"  # the example's corpus
BASELINE = EXAMPLE / "baseline.json"  # its checked-in report


def evaluate(project: Path, *extra, corpus: Path = CORPUS) -> list:
    """The command line of ``ptah inference evaluate`` of ``project`` (a folder holding ptah.yaml) on ``corpus``."""
    return ["inference", "evaluate", "--spec", project / "ptah.yaml", "--corpus", corpus, *extra]


@pytest.fixture(scope="session")
def example_project(tmp_path_factory) -> Path:
    """A copy of examples/support with generations title-body and body-only built (shared: restore what you change)."""
    folder = tmp_path_factory.mktemp("support")
    for name in ("ptah.yaml", "make_db.py", "articles.jsonl"):
        shutil.copy(EXAMPLE / name, folder / name)
    subprocess.run([sys.executable, str(folder / "make_db.py")], check=True, capture_output=True)
    for name in ("title-body", "body-only"):
        assert run_cli(None, "inference", "build", name, "--spec", folder / "ptah.yaml", "--quiet").code == 0
    return folder
