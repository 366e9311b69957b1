"""The bundled example, built once per test session with the real MiniLM model (both
generations)."""

from __future__ import annotations

import os
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


HEAVY = ("torch", "sentence_transformers", "transformers")

# what a warm evaluate (every query vector cached, tables to a pipe) needs none of: the model's
# libraries, statistics beyond numpy, schema checks, HTTP, the terminal's styling, the add-ons'
# server and cluster, another database's driver
NOT_ON_A_WARM_EVALUATE = (
    *HEAVY,
    "onnxruntime",
    "scipy",
    "sklearn",
    "jsonschema",
    "jsonschema_rs",
    "httpx",
    "rich",
    "starlette",
    "uvicorn",
    "ray",
    "psycopg",
)


def ptah_process(
    *argv, cwd: Path | None = None, path: Path | None = None, heavy: tuple[str, ...] = HEAVY
) -> subprocess.CompletedProcess:
    """The ptah CLI in a new process, ``path`` first on PYTHONPATH; prints those of the modules
    ``heavy`` it imported last on stderr."""
    script = (
        "import sys\nfrom ptah.cli import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit as exit:\n    code = exit.code\n"
        f"heavy = sorted(m for m in {heavy!r} if m in sys.modules)\n"
        "print('exit', code, 'heavy', heavy, file=sys.stderr)\nraise SystemExit(code)\n"
    )
    before = [os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []
    env = os.environ | (
        {"PYTHONPATH": os.pathsep.join([str(path), *before])} if path is not None else {}
    )
    return subprocess.run(
        [sys.executable, "-c", script, *map(str, argv)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )


def python_with_add_ons(script: str, *argv) -> subprocess.CompletedProcess:
    """``python -c script ARGV`` in a new process with this repository and its add-ons' sources
    first on PYTHONPATH: what an installed checkout imports, whatever copy the environment holds."""
    add_ons = [str(REPO / "packages" / name / "src") for name in ("ptah-serve", "ptah-ray")]
    paths = [str(REPO), *add_ons, *filter(None, [os.environ.get("PYTHONPATH")])]
    return subprocess.run(
        [sys.executable, "-c", script, *map(str, argv)],
        capture_output=True,
        text=True,
        env=os.environ | {"PYTHONPATH": os.pathsep.join(paths)},
        timeout=300,
    )


def evaluate(project: Path, *extra, corpus: Path = CORPUS) -> list:
    """The command line of ``ptah inference evaluate`` of ``project`` (a folder holding ptah.yaml)
    on ``corpus``."""
    return ["inference", "evaluate", "--spec", project / "ptah.yaml", "--corpus", corpus, *extra]


def copy_example(folder: Path) -> Path:
    """examples/support in ``folder``: its ptah.yaml, and its source database made by its
    make_db.py."""
    for name in ("ptah.yaml", "make_db.py", "articles.jsonl"):
        shutil.copy(EXAMPLE / name, folder / name)
    subprocess.run([sys.executable, str(folder / "make_db.py")], check=True, capture_output=True)
    return folder


@pytest.fixture(scope="session")
def example_project(tmp_path_factory) -> Path:
    """A copy of examples/support with generations title-body and body-only built (shared: restore
    what you change)."""
    folder = copy_example(tmp_path_factory.mktemp("support"))
    for name in ("title-body", "body-only"):
        assert (
            run_cli(
                None, "inference", "build", name, "--spec", folder / "ptah.yaml", "--quiet"
            ).code
            == 0
        )
    return folder
