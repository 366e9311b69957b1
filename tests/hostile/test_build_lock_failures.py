"""Taking the SQLite store's build lock when the disk or the lock file is hostile.

Each failure is one sentence naming the lock file (exit 3), and leaves
nothing behind that blocks the next build.
"""

from __future__ import annotations

import errno
import os

import pytest

from tests.conftest import run_cli
from tests.services.conftest import DOCS, Workspace


@pytest.fixture
def project(tmp_path, monkeypatch):
    """The ten DOCS and a deterministic generation, nothing built; (workspace, the generation's lock
    file)."""
    space = Workspace(tmp_path)
    space.execute(
        "CREATE TABLE articles (id INTEGER PRIMARY KEY, title TEXT, body TEXT, status TEXT)"
    )
    space.execute("INSERT INTO articles VALUES (?, ?, ?, ?)", DOCS)
    space.write_spec()
    monkeypatch.chdir(tmp_path)
    with space.project() as opened:
        store = opened.store(create=True)
        lock = store.lock_path(opened.generation().identity.identity)
    return space, lock


def build(capsys) -> tuple[int, str, str]:
    return run_cli(capsys, "inference", "build", "--quiet")


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS, errno.EDQUOT])
def test_a_disk_that_fills_while_the_pid_is_written_is_refused_and_blocks_nothing(
    project, capsys, monkeypatch, code
):
    space, lock = project
    written = os.pwrite

    def full(fd, data, offset):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(os, "pwrite", full)
    assert build(capsys) == (3, "", f"cannot write the build lock {lock}: {os.strerror(code)}.\n")
    monkeypatch.setattr(os, "pwrite", written)
    assert build(capsys)[0] == 0
    assert lock.read_bytes() == b""  # released: the pid is gone
    code, out, _ = run_cli(capsys, "inference", "verify")
    assert code == 0 and out.endswith("ok: complete and fresh\n")


def test_a_short_write_of_the_pid_is_refused(project, capsys, monkeypatch):
    _, lock = project
    monkeypatch.setattr(os, "pwrite", lambda fd, data, offset: 0)
    assert build(capsys) == (
        3,
        "",
        f"cannot write the build lock {lock}: {os.strerror(errno.ENOSPC)}.\n",
    )


def test_a_half_written_lock_file_blocks_no_build(project, capsys):
    _, lock = project
    lock.write_bytes(b"12\x00\xff garbage from a full disk")
    assert build(capsys)[0] == 0
    assert lock.read_bytes() == b""


def test_a_lock_file_that_cannot_be_truncated_is_refused(project, capsys):
    _, lock = project
    os.mkfifo(lock)  # opens read-write at once, locks, but has no length to truncate
    assert build(capsys) == (
        3,
        "",
        f"cannot write the build lock {lock}: {os.strerror(errno.EINVAL)}.\n",
    )


def test_a_link_at_the_lock_name_is_not_followed(project, capsys, tmp_path):
    _, lock = project
    target = tmp_path / "elsewhere.txt"
    lock.symlink_to(target)
    assert build(capsys) == (
        3,
        "",
        f"cannot open the build lock {lock}: {os.strerror(errno.ELOOP)}.\n",
    )
    assert not target.exists()  # the link's target was neither created nor truncated


def test_a_failure_to_clear_the_pid_after_the_build_loses_nothing(project, capsys, monkeypatch):
    _, lock = project
    truncate = os.ftruncate
    calls = []

    def second_fails(fd, length):
        calls.append(length)
        if len(calls) == 2:  # the release, after the build committed
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        truncate(fd, length)

    monkeypatch.setattr(os, "ftruncate", second_fails)
    code, out, err = build(capsys)
    assert (code, err) == (0, "")
    monkeypatch.setattr(os, "ftruncate", truncate)
    assert build(capsys)[0] == 0  # the pid left behind names no one and blocks nothing
