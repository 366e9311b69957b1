"""An evaluation printed to a pipe is never wrapped; on an 80-column terminal it is laid out, never
cut.

Both run the real ``ptah`` in another process: once with stdout a pipe (as a
CI log reads it), once with stdout a pseudo-terminal of 80 columns.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios

import pytest

from tests.cli.test_inference_cli import TEXT, spec  # noqa: F401 (the fixture: a table of three rows)
from tests.conftest import spec_yaml

FIRST = "title-and-body-with-a-rather-long-generation-name"
SECOND = "body-only-with-another-rather-long-generation-name"
DETERMINISTIC = {"model": "ptah/deterministic", "dimension": 16}
SPEC = spec_yaml(
    text=TEXT,
    active=FIRST,
    generations={FIRST: DETERMINISTIC, SECOND: {**DETERMINISTIC, "text": "{body}"}},
)
CORPUS = """\
version: 1
default_k: 2
cases:
  - {id: cancel-a-subscription-from-the-billing-page, query: "cancel billing", relevant: {"1": 1}}
  - {id: reset-a-forgotten-password-with-the-link, query: "reset link", relevant: {"2": 1}}
  - {id: export-every-invoice-as-a-pdf-file, query: "export pdf invoices", relevant: {"3": 2, "1": 1}}
"""
INTERVAL = re.compile(r"[+-]\d\.\d{4}\.\.[+-]\d\.\d{4}")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@pytest.fixture
def evaluate_argv(spec, tmp_path, cli):  # noqa: F811 (the fixture imported above)
    spec.write_text(SPEC)
    for name in (FIRST, SECOND):
        assert cli("inference", "build", name, "--spec", spec, "--quiet").code == 0
    corpus = tmp_path / "corpus.yaml"
    corpus.write_text(CORPUS)
    return [
        sys.executable,
        "-m",
        "ptah",
        "inference",
        "evaluate",
        "--corpus",
        str(corpus),
        "-g",
        FIRST,
        "-g",
        SECOND,
        "--spec",
        str(spec),
    ]


def test_a_pipe_gets_every_line_whole(evaluate_argv):
    done = subprocess.run(
        evaluate_argv,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "80"},
    )  # even a COLUMNS of 80 wraps nothing in a pipe
    assert (done.returncode, done.stderr) == (0, "")
    lines = done.stdout.splitlines()
    assert max(len(line) for line in lines) > 120  # long lines, each left whole
    (header,) = [line for line in lines if line.startswith("side by side against")]
    assert header.endswith("else Monte Carlo, marked ~)")
    headlines = [line for line in lines if line.startswith(f"  {SECOND} vs ") and "(95% CI" in line]
    assert len(headlines) == 3 and all(
        line.endswith(" a query") for line in headlines
    )  # ..., 1 tied), +x ms p50 …
    assert sum(FIRST in line for line in lines) >= 4 and sum(SECOND in line for line in lines) >= 4
    assert (
        len(INTERVAL.findall(done.stdout)) == 6
    )  # the candidate's three intervals, in its table and its sentences
    assert "…" not in done.stdout.replace("…\n", "\n").replace(
        "… model", " model"
    )  # identities are shown cut


def terminal_output(argv: list[str], columns: int) -> str:
    """What ``argv`` prints to a pseudo-terminal ``columns`` wide (styles removed)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    process = subprocess.Popen(
        argv, stdout=slave, stderr=slave, env={**os.environ, "COLUMNS": str(columns)}
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the other end closed: the process is done
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    assert process.wait(timeout=120) == 0
    return ANSI.sub("", b"".join(chunks).decode("utf-8")).replace("\r\n", "\n")


def test_an_80_column_terminal_gets_every_name_and_interval_whole(evaluate_argv):
    shown = terminal_output(evaluate_argv, 80)
    lines = shown.splitlines()
    assert max(len(line) for line in lines) <= 80
    cut = re.sub(
        r"sha256:[0-9a-f]{12}…", "", shown
    )  # the identities' prefixes are meant to be short
    assert "…" not in cut
    assert sum(FIRST in line for line in lines) >= 4 and sum(SECOND in line for line in lines) >= 4
    assert len(INTERVAL.findall(shown)) == 6
    for case in (
        "cancel-a-subscription-from-the-billing-page",
        "export-every-invoice-as-a-pdf-file",
    ):
        assert sum(case in line for line in lines) == 2  # one table of cases per run


def test_inference_list_is_stacked_on_a_terminal_too_narrow_for_its_table(evaluate_argv):
    spec = evaluate_argv[-1]
    listed = subprocess.run(
        [sys.executable, "-m", "ptah", "inference", "list", "--spec", spec, "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    identities = {
        listing["name"]: listing["identity"][:19] for listing in json.loads(listed.stdout)
    }
    shown = terminal_output([sys.executable, "-m", "ptah", "inference", "list", "--spec", spec], 80)
    assert shown.splitlines() == [
        line
        for name in (FIRST, SECOND)
        for line in (
            name,
            f"    status current  identity {identities[name]}  model ptah/deterministic",
            "    vectors 3  rows 3  coverage 100.00%",
        )
    ]
    wide = terminal_output([sys.executable, "-m", "ptah", "inference", "list", "--spec", spec], 200)
    assert wide.splitlines()[0].split() == [
        "NAME",
        "STATUS",
        "IDENTITY",
        "MODEL",
        "VECTORS",
        "ROWS",
        "COVERAGE",
    ]
