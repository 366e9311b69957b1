"""``$GITHUB_STEP_SUMMARY`` names a file evaluate appends to without being asked: it must never be a
way to hang (a FIFO without a reader), to write into a device, or to grow without bound."""

from __future__ import annotations

import os

import pytest

from ptah.adapters.files import append_text
from ptah.core.errors import OutputRefused, OutputUnwritable


def test_a_regular_file_is_appended_to_and_keeps_what_it_held(tmp_path):
    path = tmp_path / "summary.md"
    path.write_text("earlier\n")
    append_text(path, "ptah ✓\n")
    assert path.read_text() == "earlier\nptah ✓\n"


def test_a_link_to_a_regular_file_appends_to_its_target_and_stays_a_link(tmp_path):
    target = tmp_path / "target.md"
    target.write_text("kept\n")
    link = tmp_path / "summary.md"
    link.symlink_to(target)
    append_text(link, "x")
    assert (target.read_text(), os.readlink(link)) == ("kept\nx", str(target))


def test_a_fifo_a_folder_and_a_device_are_refused_without_waiting(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # no reader: opening it for writing would wait, were it opened
    tail = "; ptah appends only to a regular file"
    for path, kind in (
        (fifo, "a FIFO (named pipe)"),
        (tmp_path, "a folder"),
        (f"{tmp_path}/", "a folder"),
        ("/dev/null", "a character device"),
    ):
        with pytest.raises(OutputRefused) as info:
            append_text(path, "x")
        assert str(info.value) == f"{path}: is {kind}{tail}"


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
    assert (
        str(info.value)
        == f"{tmp_path / 'absent' / 'summary.md'}: cannot be written (No such file or directory)"
    )
