"""Writing a file from pieces (``write_pieces_atomically``): the bytes of the joined text, by the
rules of one write."""

from __future__ import annotations

import os
import stat

import pytest

from ptah.adapters.files import write_pieces_atomically, write_text_atomically


def test_pieces_written_in_several_writes_are_the_joined_text(tmp_path):
    pieces = [
        f"ligne {i} é ⟨{i}⟩\n" for i in range(40_000)
    ]  # about 0.8 MB: several writes of 256 KiB
    write_pieces_atomically(tmp_path / "out.txt", iter(pieces))
    write_text_atomically(tmp_path / "whole.txt", "".join(pieces))
    assert (
        (tmp_path / "out.txt").read_bytes()
        == (tmp_path / "whole.txt").read_bytes()
        == "".join(pieces).encode()
    )
    assert sorted(os.listdir(tmp_path)) == ["out.txt", "whole.txt"]


def test_pieces_that_fail_midway_leave_the_earlier_file_and_no_temporary(tmp_path):
    target = tmp_path / "report.json"
    target.write_text("earlier\n")

    def pieces():
        for i in range(100_000):
            yield f"piece {i}\n"
        raise ValueError("Out of range float values are not JSON compliant")

    with pytest.raises(ValueError, match="not JSON compliant"):
        write_pieces_atomically(target, pieces())
    assert target.read_text() == "earlier\n"
    assert os.listdir(tmp_path) == ["report.json"]


def test_pieces_are_written_through_a_character_device():
    write_pieces_atomically("/dev/null", (f"{i}\n" for i in range(100_000)), option="--output")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
