"""Every shell command in README.md runs as written, in order, after the quickstart, from the repository root.

What counts as a command: every indented code block (four spaces) and every
fenced block marked ``sh``, ``bash``, ``shell`` or ``console``. Fenced YAML,
Python, TOML and the like are files, not commands, and are not run.

Order: the blocks of the "## Quickstart" section first, then every other block
in document order (the blocks above the Quickstart included: they show what
the quickstart sets up). They run in ONE bash process, so ``source
.venv/bin/activate`` in the Quickstart carries over, exactly as in a reader's
shell. Continuation lines (ending in ``\\``) join their command.

Exit codes: a command exits 0 unless a comment at its end says ``# exit N``
(``... --max-recall-drop 0.02   # exit 1``); any other code fails this test,
naming the README line.

The convention for a block that cannot run here: put the HTML comment

    <!-- readme-test: skip REASON -->

on the last non-blank line before the block (``REASON`` says why: it installs
into .venv, serves until stopped, needs a download, is a synopsis with
placeholders). Such a block is listed as skipped in the test's output, never
silently dropped.

Where it runs: a scratch copy of the working tree (tracked and untracked files
that git does not ignore -- what a fresh clone of this commit holds), made a
git repository with one commit, with ``.venv`` linked to this checkout's (so
``scripts/quickstart`` finds it set up and does not reinstall). Nothing in the
checkout is written. The whole README takes about 3-5 minutes (the bundled
example is built with the real model, twice): it is marked ``slow``; .ci/run
runs it with everything else.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
SKIP = re.compile(r"<!--\s*readme-test:\s*skip\b(?P<reason>[^>]*?)\s*-->")
FENCE = re.compile(r"^\s*(```+|~~~+)\s*([\w+-]*)")
SHELL_FENCES = {"sh", "bash", "shell", "console"}
EXPECTED_EXIT = re.compile(r"#\s*exit\s+(\d+)\b")
TIMEOUT_S = 1800


@dataclass
class Block:
    line: int  # 1-based line of its first command
    lines: list[tuple[int, str]]  # (line number, text without the indent)
    section: str
    skip: str | None  # the reason, when marked


@dataclass
class Command:
    line: int
    text: str
    expected: int


def blocks(text: str) -> list[Block]:
    """The README's shell blocks, with their section and skip marker (see the module docs)."""
    found: list[Block] = []
    lines = text.splitlines()
    section, fence, shell, current = "", None, False, None
    previous = ""  # the last non-blank line outside a block: where a skip marker is read
    for number, line in enumerate(lines, 1):
        if fence is not None:  # inside a fenced block
            if line.strip().startswith(fence):
                if shell:
                    found.append(current)
                fence, current = None, None
            elif shell:
                current.lines.append((number, line.strip()))
            continue
        if current is not None:  # inside an indented block: it goes on over indented and blank lines
            if line.startswith("    ") or not line.strip():
                current.lines.append((number, line[4:]))
                continue
            found.append(current)
            current = None
        match = FENCE.match(line)
        if match:
            fence, shell = match.group(1), match.group(2).lower() in SHELL_FENCES
            current = Block(number + 1, [], section, _skip(previous)) if shell else None
            previous = ""  # a marker belongs to the block right after it
            continue
        if line.startswith("    ") and line.strip() and starts_code(lines, number):
            current = Block(number, [(number, line[4:])], section, _skip(previous))
            previous = ""
            continue
        if line.startswith("#"):
            section = line.lstrip("#").strip()
        if line.strip():
            previous = line
    if current is not None:
        found.append(current)
    return found


def starts_code(lines: list[str], number: int) -> bool:
    """An indented line starts a code block after a blank line, unless the paragraph before is a list item's."""
    if number < 2 or lines[number - 2].strip():
        return False
    for earlier in reversed(lines[: number - 2]):
        if earlier.strip():
            return not re.match(r"^\s*([-*+]|\d+\.)\s", earlier) and not re.match(r"^ {1,3}\S", earlier)
    return True


def _skip(previous: str) -> str | None:
    match = SKIP.search(previous)
    return None if match is None else match.group("reason").strip() or "(no reason)"


def commands(block: Block) -> list[Command]:
    """The block's commands: continuation lines joined, comment lines dropped, ``# exit N`` read."""
    found: list[Command] = []
    pending: list[str] = []
    start = 0
    for number, text in block.lines:
        if not pending:
            if not text.strip() or text.lstrip().startswith("#"):
                continue
            start = number
        pending.append(text)
        if text.rstrip().endswith("\\"):
            continue
        joined = "\n".join(pending)
        expected = EXPECTED_EXIT.search(pending[-1])
        found.append(Command(start, joined, int(expected.group(1)) if expected else 0))
        pending = []
    assert not pending, f"README.md:{start}: a command ends in a continuation"
    return found


def ordered(found: list[Block]) -> list[Block]:
    quickstart = [block for block in found if block.section == "Quickstart"]
    return quickstart + [block for block in found if block.section != "Quickstart"]


def script(found: list[Block]) -> str:
    """One bash script: each command, then a check of its exit code naming its README line."""
    parts = ["set -u"]
    for block in ordered(found):
        if block.skip is not None:
            continue
        for command in commands(block):
            label = f"README.md:{command.line}"
            parts.append(f"echo {shlex.quote('$ ' + command.text.splitlines()[0])} >&2")
            parts.append(command.text)
            parts.append(
                f'__rc=$?; if [ "$__rc" != {command.expected} ]; then echo "{label}: exit $__rc, expected '
                f'{command.expected}" >&2; exit 99; fi'
            )
    return "\n".join(parts) + "\n"


def scratch_copy(target: Path) -> None:
    """The working tree as a fresh clone would hold it, a git repository, with .venv linked."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, check=True).stdout.split(b"\0")
    for name in filter(None, listed):
        source = REPO / os.fsdecode(name)
        if not source.is_file() or source.is_symlink():
            continue
        destination = target / os.fsdecode(name)
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_bytes(source.read_bytes())
        destination.chmod(source.stat().st_mode & 0o777)
    (target / ".venv").symlink_to(REPO / ".venv")
    for argv in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-q", "-m", "a fresh clone"]):
        subprocess.run(argv, cwd=target, check=True, env=git_env())


def git_env() -> dict:
    names = {"GIT_AUTHOR_NAME": "README test", "GIT_AUTHOR_EMAIL": "readme@test.invalid",
             "GIT_COMMITTER_NAME": "README test", "GIT_COMMITTER_EMAIL": "readme@test.invalid"}
    return {key: value for key, value in os.environ.items() if key != "PTAH_SPEC"} | names


def test_the_quickstart_is_found_and_every_block_that_runs_holds_a_command():
    found = blocks(README.read_text(encoding="utf-8"))
    assert [commands(block)[0].text for block in found if block.section == "Quickstart"][:2] == [
        "./scripts/quickstart          # sets up .venv, builds the bundled example, runs the main job on it",
        "python -m pytest              # the tests (what .ci/run runs)",
    ]
    assert all(commands(block) for block in found if block.skip is None)


def test_exit_codes_and_continuations_are_read():
    text = "## Quickstart\n\nSome words:\n\n    ptah a \\\n        --b   # exit 1\n    ptah c\n\n" \
           "<!-- readme-test: skip serves until stopped -->\n\n    ptah serve\n\n```sh\nptah d  # exit 3\n```\n"
    found = blocks(text)
    assert [(b.section, b.skip) for b in found] == [("Quickstart", None), ("Quickstart", "serves until stopped"),
                                                     ("Quickstart", None)]
    assert [(c.line, c.text, c.expected) for c in commands(found[0])] == [
        (5, "ptah a \\\n    --b   # exit 1", 1), (7, "ptah c", 0)]
    assert [(c.line, c.text, c.expected) for c in commands(found[2])] == [(14, "ptah d  # exit 3", 3)]


@pytest.mark.slow
def test_the_readme_commands_run_as_written(tmp_path):
    found = blocks(README.read_text(encoding="utf-8"))
    work = tmp_path / "clone"
    scratch_copy(work)
    skipped = [f"README.md:{block.line} ({block.skip})" for block in found if block.skip is not None]
    print("skipped blocks:", *skipped, sep="\n  ")
    done = subprocess.run(["bash", "-c", script(found)], cwd=work, env=git_env(), capture_output=True, text=True,
                          timeout=TIMEOUT_S)
    assert done.returncode == 0, (done.stderr[-6000:], done.stdout[-4000:])
