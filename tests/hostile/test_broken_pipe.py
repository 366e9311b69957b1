"""A reader that leaves early (``ptah … | head -1``) ends ptah with 141, never 1 ("negative
verdict").

Real subprocesses with a real pipe: the parent reads the first line of a
long output and closes its end, as ``head -1`` does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.hostile.files_project import REPO, make_project

CASES = 3_000  # a table of about 200 KB: far more than a pipe's buffer holds


def ptah(*argv, cwd) -> subprocess.Popen:
    """``python -m ptah ARGV`` in a child process of this checkout, stdout and stderr piped."""
    env = {**os.environ, "COLUMNS": "120", "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-m", "ptah", *map(str, argv)],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


@pytest.fixture
def project(tmp_path):
    """The built three-row project, with a corpus of 3,000 cases."""
    make_project(tmp_path)
    lines = ["version: 1", "default_k: 1", "cases:"]
    for number in range(CASES):
        lines += [
            f"  - id: case-{number:05d}",
            f"    query: question {number}",
            f'    required: ["{number % 3 + 1}"]',
        ]
    (tmp_path / "corpus.yaml").write_text("\n".join(lines) + "\n")
    return tmp_path


def test_evaluate_whose_reader_leaves_after_one_line_exits_141_without_a_word(project):
    report = project / "report.json"
    process = ptah(
        "inference", "evaluate", "--corpus", "corpus.yaml", "--output", report, cwd=project
    )
    first = process.stdout.readline()
    process.stdout.close()
    errors = process.stderr.read()
    assert process.wait(timeout=120) == 141
    assert first.startswith(b"verdict: FAIL (exit 1)")  # the summary comes first
    assert errors == b""
    assert (
        json.loads(report.read_text())["corpus"]["cases"] == CASES
    )  # what was written to files is whole


def test_a_reader_gone_before_the_first_byte_is_141_too(project):
    process = ptah("inference", "evaluate", "--corpus", "corpus.yaml", "--json", cwd=project)
    process.stdout.close()
    errors = process.stderr.read()
    assert process.wait(timeout=120) == 141
    assert errors == b""


def test_a_whole_output_read_keeps_the_verdict_exit_code(project):
    process = ptah("inference", "evaluate", "--corpus", "corpus.yaml", cwd=project)
    out, errors = process.communicate(timeout=120)
    assert process.returncode == 1  # at k 1, the deterministic ranking misses required keys
    assert out.decode().splitlines()[-1].startswith("verdict: FAIL")
    assert errors == b""
