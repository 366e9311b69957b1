"""``$GITHUB_STEP_SUMMARY`` names a file evaluate appends to without being asked: it must never be a way to write
elsewhere (through a link), to hang (a FIFO without a reader), or to grow without bound."""

from __future__ import annotations

import os

import pytest

from ptah.adapters.files.appends import append_text
from ptah.core.errors import OutputRefused, OutputUnwritable


def test_a_regular_file_is_appended_to_and_keeps_what_it_held(tmp_path):
    path = tmp_path / "summary.md"
    path.write_text("earlier\n")
    append_text(path, "ptah ✓\n")
    assert path.read_text() == "earlier\nptah ✓\n"


def test_a_link_is_never_followed_even_to_a_regular_file(tmp_path):
    target = tmp_path / "victim.txt"
    target.write_text("kept\n")
    link = tmp_path / "summary.md"
    link.symlink_to(target)
    with pytest.raises(OutputRefused) as info:
        append_text(link, "x")
    assert str(info.value) == f"{link}: is a symbolic link; ptah appends only to a regular file, never through a link"
    assert target.read_text() == "kept\n"
    dangling = tmp_path / "dangling.md"
    dangling.symlink_to(tmp_path / "created-through-the-link.md")
    with pytest.raises(OutputRefused):
        append_text(dangling, "x")
    assert not (tmp_path / "created-through-the-link.md").exists()


def test_a_fifo_a_folder_and_a_device_are_refused_without_waiting(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # no reader: opening it for writing would wait, were it opened
    tail = "; ptah appends only to a regular file, never through a link"
    for path, kind in ((fifo, "a FIFO (named pipe)"), (tmp_path, "a folder"), ("/dev/null", "a character device")):
        with pytest.raises(OutputRefused) as info:
            append_text(path, "x")
        assert str(info.value) == f"{path}: is {kind}{tail}"
    with pytest.raises(OutputRefused) as info:
        append_text(f"{tmp_path}/", "x")
    assert str(info.value) == f"{tmp_path}/: names no file to append to"


def test_the_file_is_bounded(tmp_path):
    path = tmp_path / "summary.md"
    path.write_bytes(b"x" * 90)
    with pytest.raises(OutputRefused) as info:
        append_text(path, "y" * 11, limit=100)
    assert str(info.value) == f"{path}: holds 90 bytes; 11 more would pass its limit of 100"
    append_text(path, "y" * 10, limit=100)
    assert path.stat().st_size == 100


def test_a_missing_folder_is_an_operational_failure(tmp_path):
    with pytest.raises(OutputUnwritable) as info:
        append_text(tmp_path / "absent" / "summary.md", "x")
    assert str(info.value) == f"{tmp_path / 'absent' / 'summary.md'}: cannot be opened (No such file or directory)"
