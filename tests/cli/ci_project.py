"""A small built project for the CI outputs' tests: two deterministic generations, a corpus, a
baseline.

Generation ``docs`` (dimension 16) misses a required key of case c1 (it
ranks 2nd at k = 1); generation ``small`` (dimension 2) also fails c2 (key
'2' ranked 2nd, forbidden '3' at rank 1), so a run of ``small`` against the
baseline ``base.json`` (made with ``docs``) has c2 now failing: recall falls
from 0.8333 to 0.5000.
"""

from __future__ import annotations

from pathlib import Path

from tests.cli.test_inference_cli import TEXT
from tests.conftest import run_cli, spec_yaml
from tests.hostile.files_project import make_project

SPEC = spec_yaml(
    text=TEXT,
    generations={
        "docs": {"model": "ptah/deterministic", "dimension": 16},
        "small": {"model": "ptah/deterministic", "dimension": 2},
    },
)
CORPUS = """\
version: 1
default_k: 1
cases:
  - {id: c1, query: "cancel my plan", required: ["1", "2"]}
  - id: c2
    query: "reset password"
    required: ["2"]
    forbidden: ["3", "1"]
  - {id: c3, query: "pdf invoices", relevant: {"3": 1}}
"""


def make_ci_project(folder: Path) -> Path:
    """``folder`` with source.db, ptah.yaml, corpus.yaml, both generations built and base.json
    (``docs``'s report)."""
    make_project(folder)  # the three-row source, generation docs built
    (folder / "ptah.yaml").write_text(SPEC)
    (folder / "corpus.yaml").write_text(CORPUS)
    assert (
        run_cli(None, "inference", "build", "small", "--spec", folder / "ptah.yaml", "--quiet").code
        == 0
    )
    assert (
        run_cli(
            None, *evaluate(folder, "-g", "docs", "--output", folder / "base.json", "--json")
        ).code
        == 1
    )
    return folder


def evaluate(folder: Path, *extra) -> list:
    return [
        "inference",
        "evaluate",
        "--spec",
        folder / "ptah.yaml",
        "--corpus",
        folder / "corpus.yaml",
        *extra,
    ]
