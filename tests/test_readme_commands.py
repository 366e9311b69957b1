"""Every shell command in README.md and docs/*.md runs as written, in order, after the quickstart,
from the repo root.

What counts as a command: every indented code block (four spaces) and every
fenced block marked ``sh``, ``bash``, ``shell`` or ``console``. Fenced YAML,
Python, TOML and the like are files, not commands, and are not run.

Order: the blocks of the README's "## Quickstart" section first, then every
other README block in document order (those above the Quickstart included:
they show what the quickstart sets up), then each page under docs/ in name
order, its blocks in document order. They run in ONE bash process, so ``source
.venv/bin/activate`` in the Quickstart carries over, exactly as in a reader's
shell. Continuation lines (ending in ``\\``) join their command.

Exit codes: a command exits 0 unless a comment at its end says ``# exit N``
(``... --max-recall-drop 0.02   # exit 1``); any other code fails this test,
naming the file and line.

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
checkout is written. The whole run takes about 3-5 minutes (the bundled
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
from markdown_it import MarkdownIt

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
PAGES = [README, *sorted((REPO / "docs").glob("*.md"))]  # the order their commands run in
LINK = re.compile(
    r"\]\((?!https?:|#)([^)#\s]+)(?:#[^)\s]*)?\)"
)  # a relative link's target, without its anchor
SKIP = re.compile(r"<!--\s*readme-test:\s*skip\b(?P<reason>[^>]*?)\s*-->")
SHELL_FENCES = {"sh", "bash", "shell", "console"}
EXPECTED_EXIT = re.compile(r"#\s*exit\s+(\d+)\b")
TIMEOUT_S = 1800


@dataclass
class Block:
    file: str  # the page, relative to the repository root
    line: int  # 1-based line of its first command
    lines: list[tuple[int, str]]  # (line number, text without the indent)
    section: str
    skip: str | None  # the reason, when marked


@dataclass
class Command:
    line: int
    text: str
    expected: int


def blocks(text: str, file: str = "README.md") -> list[Block]:
    """A page's shell blocks, with their section and skip marker (see the module docs), as
    CommonMark reads them (markdown-it, which rich brings)."""
    lines, found, section = text.splitlines(), [], ""
    tokens = MarkdownIt("commonmark").parse(text)
    for index, token in enumerate(tokens):
        if token.type == "heading_open":
            section = tokens[index + 1].content
        fenced = token.type == "fence"
        if token.map is None or not (
            token.type == "code_block"
            or fenced
            and (token.info.split() or [""])[0].lower() in SHELL_FENCES
        ):
            continue
        first = (
            token.map[0] + fenced
        )  # the block's first line (0-based): after a fence's opening line
        marker = next((line for line in reversed(lines[: token.map[0]]) if line.strip()), "")
        body = [
            (first + 1 + offset, line.strip() if fenced else line)
            for offset, line in enumerate(token.content.splitlines())
        ]
        found.append(Block(file, first + 1, body, section, _skip(marker)))
    return found


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
    assert not pending, f"{block.file}:{start}: a command ends in a continuation"
    return found


def every_block() -> list[Block]:
    """The blocks of every page, in the order of PAGES."""
    return [
        block
        for page in PAGES
        for block in blocks(page.read_text(encoding="utf-8"), page_name(page))
    ]


def page_name(page: Path) -> str:
    return page.relative_to(REPO).as_posix()


def ordered(found: list[Block]) -> list[Block]:
    def quickstart(block: Block) -> bool:
        return block.file == "README.md" and block.section == "Quickstart"

    return [block for block in found if quickstart(block)] + [
        block for block in found if not quickstart(block)
    ]


def script(found: list[Block]) -> str:
    """One bash script: each command, then a check of its exit code naming its file and line."""
    parts = ["set -u"]
    for block in ordered(found):
        if block.skip is not None:
            continue
        for command in commands(block):
            label = f"{block.file}:{command.line}"
            parts.append(f"echo {shlex.quote('$ ' + command.text.splitlines()[0])} >&2")
            parts.append(command.text)
            parts.append(
                f'__rc=$?; if [ "$__rc" != {command.expected} ]; then echo "{label}: exit $__rc, expected '
                f'{command.expected}" >&2; exit 99; fi'
            )
    return "\n".join(parts) + "\n"


def scratch_copy(target: Path) -> None:
    """The working tree as a fresh clone would hold it, a git repository, with .venv linked."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, listed):
        source = REPO / os.fsdecode(name)
        if not source.is_file() or source.is_symlink():
            continue
        destination = target / os.fsdecode(name)
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_bytes(source.read_bytes())
        destination.chmod(source.stat().st_mode & 0o777)
    (target / ".venv").symlink_to(REPO / ".venv")
    for argv in (
        ["git", "init", "-q"],
        ["git", "add", "-A"],
        ["git", "commit", "-q", "-m", "a fresh clone"],
    ):
        subprocess.run(argv, cwd=target, check=True, env=git_env())


def git_env() -> dict:
    names = {
        "GIT_AUTHOR_NAME": "README test",
        "GIT_AUTHOR_EMAIL": "readme@test.invalid",
        "GIT_COMMITTER_NAME": "README test",
        "GIT_COMMITTER_EMAIL": "readme@test.invalid",
    }
    return {key: value for key, value in os.environ.items() if key != "PTAH_SPEC"} | names


def test_the_quickstart_is_found_and_every_block_that_runs_holds_a_command():
    found = blocks(README.read_text(encoding="utf-8"))
    assert [commands(block)[0].text for block in found if block.section == "Quickstart"][:2] == [
        "./scripts/quickstart          # sets up .venv, builds the bundled example, runs the main job on it",
        "python -m pytest              # the tests (what .ci/run runs)",
    ]
    assert all(commands(block) for block in every_block() if block.skip is None)


def test_exit_codes_and_continuations_are_read():
    text = (
        "## Quickstart\n\nSome words:\n\n    ptah a \\\n        --b   # exit 1\n    ptah c\n\n"
        "<!-- readme-test: skip serves until stopped -->\n\n    ptah serve\n\n```sh\nptah d  # exit 3\n```\n"
    )
    found = blocks(text)
    assert [(b.file, b.section, b.skip) for b in found] == [
        ("README.md", "Quickstart", None),
        ("README.md", "Quickstart", "serves until stopped"),
        ("README.md", "Quickstart", None),
    ]
    assert [(c.line, c.text, c.expected) for c in commands(found[0])] == [
        (5, "ptah a \\\n    --b   # exit 1", 1),
        (7, "ptah c", 0),
    ]
    assert [(c.line, c.text, c.expected) for c in commands(found[2])] == [
        (14, "ptah d  # exit 3", 3)
    ]


def test_docs_pages_run_after_the_whole_readme_and_failures_name_the_page():
    found = ordered(
        blocks("# Intro\n\n    ptah a\n", "README.md")
        + blocks("## Quickstart\n\n    ptah b\n", "docs/x.md")
        + blocks("## Quickstart\n\n    ptah c  # exit 2\n", "README.md")
    )
    assert [(block.file, commands(block)[0].text) for block in found] == [
        ("README.md", "ptah c  # exit 2"),
        ("README.md", "ptah a"),
        ("docs/x.md", "ptah b"),
    ]
    assert 'echo "docs/x.md:3: exit $__rc, expected 0"' in script(found)
    assert 'echo "README.md:3: exit $__rc, expected 2"' in script(found)


def test_the_readme_links_every_docs_page_and_every_relative_link_resolves():
    readme = README.read_text(encoding="utf-8")
    linked = {(REPO / target).resolve() for target in LINK.findall(readme)}
    assert {page.resolve() for page in PAGES[1:]} - linked == set()
    broken = [
        f"{page_name(page)}: {target}"
        for page in PAGES
        for target in LINK.findall(page.read_text(encoding="utf-8"))
        if not (page.parent / target).exists()
    ]
    assert broken == []


OUTPUT = re.compile(r"--(?:output|html|junit|markdown|trec-run)[ =](\S+)|--save [a-z]+=(\S+)")


def test_no_docs_command_writes_into_the_repository_root():
    # a file a reader's command writes goes under a folder git ignores (out/), never beside
    # README.md
    bare = [
        f"{block.file}:{command.line}: {path}"
        for block in every_block()
        if block.skip is None
        for command in commands(block)
        for match in OUTPUT.finditer(command.text)
        if "/" not in (path := match.group(1) or match.group(2)) and path != "-"
    ]
    assert bare == []


@pytest.mark.slow
def test_the_readme_and_docs_commands_run_as_written(tmp_path):
    found = every_block()
    work = tmp_path / "clone"
    scratch_copy(work)
    skipped = [
        f"{block.file}:{block.line} ({block.skip})" for block in found if block.skip is not None
    ]
    print("skipped blocks:", *skipped, sep="\n  ")
    done = subprocess.run(
        ["bash", "-c", script(found)],
        cwd=work,
        env=git_env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert done.returncode == 0, (done.stderr[-6000:], done.stdout[-4000:])
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=work,
        env=git_env(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert [
        line for line in status.splitlines() if line.startswith("??")
    ] == []  # nothing left beside the tree
