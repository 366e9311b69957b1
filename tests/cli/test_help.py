"""Help and docs derived from the Typer app itself: a command or option added later is checked
without a list to update.

Every group and command is walked from ``ptah.cli.app``; each must answer
``--help`` with exit 0 and show every option it declares; every command must be
in the Commands table (docs/commands.md) and every option documented in the
README or a page under docs/.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from ptah.cli import app

ROOT = Path(__file__).resolve().parents[2]
DOCS = {
    page.relative_to(ROOT).as_posix(): page.read_text(encoding="utf-8")
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
}


def walk(command, path: tuple[str, ...] = ()):
    """``(path, command)`` for the command and every group and command under it, depth first."""
    yield path, command
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from walk(sub, (*path, name))


TREE = list(walk(typer.main.get_command(app)))
COMMANDS = [(path, command) for path, command in TREE if not hasattr(command, "commands")]
OPTIONS = [
    (path, param)
    for path, command in COMMANDS
    for param in command.params
    if param.param_type_name == "option" and not param.hidden
]


def spellings(option) -> list[str]:
    return [*option.opts, *option.secondary_opts]


def mentions(text: str, word: str) -> bool:
    """Whether ``word`` occurs in ``text`` as a whole word: ``--m`` is not in ``--max-drop``, nor
    ``-k`` in ``--k``."""
    return re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text) is not None


def label(path: tuple[str, ...]) -> str:
    return " ".join(("ptah", *path))


def test_the_walk_finds_every_command():
    assert len(COMMANDS) >= 10
    assert {
        ("inference", "evaluate"),
        ("inference", "index"),
        ("corpus", "export-qrels"),
        ("import", "beir"),
    } <= {path for path, _ in COMMANDS}


@pytest.mark.parametrize("path, command", TREE, ids=[label(path) for path, _ in TREE])
def test_every_group_and_command_answers_help_with_its_options_and_commands(path, command, cli):
    code, out, err = cli(*path, "--help")
    assert (code, err) == (0, "")
    assert f"Usage: {label(path)} [OPTIONS]" in out
    hidden_in_help = [
        word
        for param in command.params
        if param.param_type_name == "option" and not param.hidden
        for word in spellings(param)
        if not mentions(out, word)
    ]
    assert hidden_in_help == []
    missing = [name for name in getattr(command, "commands", {}) if not mentions(out, name)]
    assert missing == []


@pytest.mark.parametrize(
    "path", [path for path, _ in COMMANDS], ids=[label(path) for path, _ in COMMANDS]
)
def test_every_command_is_in_the_commands_table(path):
    assert f"`{label(path)}" in DOCS["docs/commands.md"], (
        f"{label(path)} is not in docs/commands.md's table"
    )


@pytest.mark.parametrize(
    "path, option", OPTIONS, ids=[f"{label(path)} {option.opts[0]}" for path, option in OPTIONS]
)
def test_every_option_is_documented_in_the_readme_or_docs(path, option):
    assert any(mentions(text, word) for text in DOCS.values() for word in spellings(option)), (
        f"{label(path)} {'/'.join(spellings(option))} is not documented in README.md or docs/"
    )


def test_help_imports_neither_numpy_nor_the_report():
    """``ptah --help`` (and a command's help) builds every command without numpy, the report's
    modules or a model's libraries: they are imported by the commands that use them."""
    from tests.cli.conftest import HEAVY, ptah_process

    modules = (*HEAVY, "numpy", "ptah.core.report", "ptah.core.estimate", "ptah._api")
    for argv in (["--help"], ["corpus", "validate", "--help"]):
        result = ptah_process(*argv, heavy=modules)
        assert result.stderr.strip().splitlines()[-1] == "exit 0 heavy []", argv


def test_the_command_line_asks_openblas_threads_to_sleep_unless_told_otherwise():
    """Before numpy is imported, the CLI sets ``OPENBLAS_THREAD_TIMEOUT`` to OpenBLAS's least (its
    threads sleep as soon as a product is done, not after a tenth of a second of spinning); a value
    the user set stays."""
    script = (
        "import os, sys\nfrom ptah.cli import main\n"
        "try:\n    main(['--version'])\nexcept SystemExit:\n    pass\n"
        "print(os.environ.get('OPENBLAS_THREAD_TIMEOUT'), 'numpy' in sys.modules)\n"
    )
    unset = {key: value for key, value in os.environ.items() if key != "OPENBLAS_THREAD_TIMEOUT"}
    for given, expected in ({}, "4 False"), ({"OPENBLAS_THREAD_TIMEOUT": "28"}, "28 False"):
        done = subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            env=unset | given,
            timeout=300,
        )
        assert (done.returncode, done.stdout.splitlines()[-1]) == (0, expected), done.stderr
