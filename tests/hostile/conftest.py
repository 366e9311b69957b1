"""Shared by the hostile tests: the real PostgreSQL of the contract tests, and the CLI run in-process."""

from __future__ import annotations

import pytest

from ptah.cli import main
from tests.contract.conftest import postgres_database, postgres_server, postgres_url  # noqa: F401 (fixtures)


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    """``ptah ARGV`` in this process: (exit code, stdout, stderr)."""
    with pytest.raises(SystemExit) as info:
        main([str(a) for a in argv])
    out = capsys.readouterr()
    return info.value.code, out.out, out.err
