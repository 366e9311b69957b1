"""scripts/setup chooses torch's build: the CPU index by default, another by PTAH_TORCH_INDEX
(README, Quickstart)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

SETUP = Path(__file__).resolve().parents[1] / "scripts" / "setup"
CPU = "torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"


def torch_args(index: str | None) -> tuple[str, str, float]:
    env = {k: v for k, v in os.environ.items() if k != "PTAH_TORCH_INDEX"}
    if index is not None:
        env["PTAH_TORCH_INDEX"] = index
    started = time.monotonic()
    done = subprocess.run(
        [str(SETUP), "--torch-args"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout, done.stderr, time.monotonic() - started


def test_a_chosen_index_is_used_as_given():
    stdout, stderr, _ = torch_args("https://download.pytorch.org/whl/cu128")
    assert (stdout, stderr) == (
        "torch==2.13.0 --index-url https://download.pytorch.org/whl/cu128\n",
        "",
    )


def test_default_means_pips_configured_index():
    stdout, stderr, _ = torch_args("default")
    assert (stdout, stderr) == ("torch==2.13.0\n", "")


def test_the_cpu_index_by_default_else_a_quick_fallback_that_says_so():
    stdout, stderr, seconds = torch_args(None)
    if stdout == CPU + "\n":  # a machine that reaches download.pytorch.org
        assert stderr == ""
    # this machine sees PyPI only: torch from the configured index, said on stderr, within the
    # probe's bound
    else:
        assert stdout == "torch==2.13.0\n"
        assert stderr == (
            "setup: https://download.pytorch.org/whl/cpu cannot be reached; "
            "installing torch==2.13.0 from pip's configured index\n"
        )
    assert seconds < 15
