"""Evaluate's memory does not grow with cases x rows.

2,400 cases over 50,000 rows: one score matrix of every case against every
row is 480 MB of float32, and ranking it copied it. Scored a block of cases
at a time (``ptah.core.ranking``), the same evaluation needs a few hundred MB
above what it needs for 10 cases. The proof runs ``evaluate`` in a child
process whose address space is capped (``RLIMIT_AS``) at the 10-case run's
peak plus 400 MiB -- less than the whole matrix alone -- and checks it
finishes with every case measured, and measured as the 10-case run measured
its first 10. No timing is involved: an allocation past the cap fails.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest

from tests.conftest import run_cli
from tests.services.conftest import Workspace

ROWS, CASES, HEADROOM = 50_000, 2_400, 400 * 1024 * 1024
# Runs the CLI in a child process (not tests.conftest.run_cli: the cap must not bind pytest) under
# an optional address-space cap; writes how it ended and the process's peak virtual size.
CHILD = """
import json, resource, sys
cap = int(sys.argv[2])
if cap:
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
ended = {}
try:
    from ptah.cli import main
    main(sys.argv[3:])
except SystemExit as exc:
    ended["code"] = exc.code
except MemoryError:
    ended["code"] = "MemoryError"
for line in open("/proc/self/status"):
    if line.startswith("VmPeak:"):
        ended["vmpeak"] = int(line.split()[1]) * 1024
with open(sys.argv[1], "w") as handle:
    json.dump(ended, handle)
"""


def corpus(cases: int) -> str:
    rng = random.Random(5)
    lines = ["version: 1", "default_k: 10", "cases:"]
    for i in range(cases):
        query = " ".join(f"w{rng.randrange(3000)}" for _ in range(rng.randrange(3, 12)))
        required = f', required: ["{rng.randrange(1, ROWS + 1)}"]' if i % 3 == 0 else ""
        lines.append(
            f'  - {{id: c{i}, query: "{query}", relevant: {{"{rng.randrange(1, ROWS + 1)}": 1}}{required}}}'
        )
    return "\n".join(lines) + "\n"


@pytest.fixture
def large(tmp_path, capsys) -> Workspace:
    """50,000 rows of 9-40 random words, built with the deterministic 128-d embedder; corpora of 10
    and 2,400 cases."""
    space = Workspace(tmp_path)
    rng = random.Random(3)
    space.execute(
        "CREATE TABLE articles (id INTEGER PRIMARY KEY, title TEXT, body TEXT, status TEXT)"
    )
    space.execute(
        "INSERT INTO articles VALUES (?, ?, ?, ?)",
        [
            (
                i,
                f"w{rng.randrange(3000)}",
                " ".join(f"w{rng.randrange(3000)}" for _ in range(rng.randrange(8, 40))),
                "p",
            )
            for i in range(1, ROWS + 1)
        ],
    )
    space.write_spec(
        generations={"docs": "model: ptah/deterministic\n    dimension: 128\n    batch_size: 8192"}
    )
    (tmp_path / "small.yaml").write_text(corpus(10))
    (tmp_path / "large.yaml").write_text(corpus(CASES))
    code, _, err = run_cli(capsys, "inference", "build", "--spec", space.spec_path, "--quiet")
    assert (code, err) == (0, "")
    return space


def evaluate(space: Workspace, corpus_name: str, cap: int = 0) -> tuple[dict, dict]:
    """``evaluate --json`` in a child process (capped at ``cap`` bytes of address space): how it
    ended, the report."""
    ended_path = space.folder / "ended.json"
    child = subprocess.run(
        [
            sys.executable,
            "-c",
            CHILD,
            str(ended_path),
            str(cap),
            "inference",
            "evaluate",
            "--spec",
            str(space.spec_path),
            "--corpus",
            str(space.folder / corpus_name),
            "--json",
        ],
        capture_output=True,
        text=True,
    )
    ended = json.loads(ended_path.read_text())
    assert ended["code"] == 1, (
        ended,
        child.stderr[-2000:],
    )  # required keys missed: a finished negative verdict
    return ended, json.loads(child.stdout)


def test_evaluate_scores_many_cases_in_memory_that_cannot_hold_their_score_matrix(large):
    small, small_report = evaluate(large, "small.yaml")
    cap = small["vmpeak"] + HEADROOM
    assert CASES * ROWS * 4 > HEADROOM  # the whole matrix alone would not fit under the cap

    ended, report = evaluate(large, "large.yaml", cap)
    assert ended["vmpeak"] <= cap
    [run] = report["runs"]
    assert len(run["cases"]) == CASES
    assert run["aggregates"]["recall"]["denominator"] == CASES
    # The first 10 cases are measured as they were alone, where one block held them all.
    assert run["cases"][:10] == small_report["runs"][0]["cases"]
