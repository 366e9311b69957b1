"""Run as the program, ptah skips the garbage collector's last pass over every object at exit (ptah.cli.main)."""

from __future__ import annotations

import subprocess
import sys

import pytest

SCRIPT = """
import atexit, gc, sys
atexit.register(lambda: print("frozen", gc.get_freeze_count() > 0))  # runs after what main registers
from ptah.cli import main
argv = sys.argv[1:]
sys.argv = ["ptah", "--version"]
main(None if argv == ["program"] else ["--version"])
"""


@pytest.mark.parametrize("how, frozen", [("program", True), ("called", False)])
def test_only_the_program_skips_the_last_collection(how, frozen):
    done = subprocess.run([sys.executable, "-c", SCRIPT, how], capture_output=True, text=True)
    assert (done.returncode, done.stdout.splitlines()[-1], done.stderr) == (0, f"frozen {frozen}", "")
