"""A judgement record that is not a regular file of a sane size is refused, read or written, naming
the file.

A link could make ptah read (and then replace) a file outside the corpus's
folder; a FIFO with no writer would hang the read; a huge file would fill
memory. Each is refused (exit 2) before anything is read or written.
"""

from __future__ import annotations

import json
import os

import pytest

from ptah.adapters.judgements_yaml import MAX_RECORD_BYTES, read_record, write_record
from ptah.core.errors import CorpusError, OutputRefused
from ptah.core.judged import Judgement, JudgementRecord
from tests.cli.test_judging_cli import space  # noqa: F401  (a built deterministic project with a corpus)

VALID = "version: 1\ncases: {}\n"
RECORD = JudgementRecord(cases={"a": {"1": Judgement(1.0, "a" * 64, "2026-11-30T12:00:00Z")}})


def refused(path) -> str:
    with pytest.raises(CorpusError) as info:
        read_record(path)
    assert info.value.exit_code == 2
    return str(info.value)


def test_a_record_that_is_a_link_is_refused_even_to_a_valid_record(tmp_path):
    elsewhere = tmp_path / "elsewhere.yaml"
    elsewhere.write_text(VALID)
    os.symlink(elsewhere, tmp_path / "c.judged.yaml")
    assert refused(tmp_path / "c.yaml") == (
        f"{tmp_path}/c.judged.yaml: is a symbolic link, not a regular file; the judgement record is read only from a "
        "regular file beside its corpus: replace it with the file itself"
    )
    assert elsewhere.read_text() == VALID and os.path.islink(tmp_path / "c.judged.yaml")


def test_a_record_that_is_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    os.mkfifo(tmp_path / "c.judged.yaml")
    assert refused(tmp_path / "c.yaml") == (
        f"{tmp_path}/c.judged.yaml: is a FIFO (named pipe), not a regular file; the judgement record is read only "
        "from a regular file beside its corpus: replace it with the file itself"
    )
    with pytest.raises(OutputRefused):
        write_record(tmp_path / "c.yaml", RECORD)


def test_a_record_that_is_a_folder_is_refused(tmp_path):
    (tmp_path / "c.judged.yaml").mkdir()
    assert "c.judged.yaml: is a folder, not a regular file" in refused(tmp_path / "c.yaml")


def test_an_oversized_record_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "c.judged.yaml"
    with open(path, "wb") as handle:  # sparse: the size is what is refused, nothing is read
        handle.write(VALID.encode())
        handle.truncate(MAX_RECORD_BYTES + 1)
    assert refused(tmp_path / "c.yaml") == (
        f"{path}: the file is {MAX_RECORD_BYTES + 1:,} bytes, more than the judgement record limit of "
        f"{MAX_RECORD_BYTES:,}; split it"
    )


def test_judging_with_a_linked_record_writes_neither_the_corpus_nor_the_link_target(space, cli):  # noqa: F811
    from tests.cli.test_judging_cli import CORPUS

    target = space.folder / "elsewhere.yaml"
    target.write_text(VALID)
    os.symlink(target, space.folder / "support.judged.yaml")
    for argv in (
        ["grade", space.folder / "support.yaml", "login", "2", "1"],
        ["holes", space.folder / "support.yaml"],
        ["pin", space.folder / "support.yaml"],
    ):
        code, out, err = cli("corpus", *argv, "--spec", space.spec_path)
        assert code == 2 and "support.judged.yaml: is a symbolic link, not a regular file" in err, (
            argv,
            err,
        )
    assert (space.folder / "support.yaml").read_text() == CORPUS and target.read_text() == VALID


def test_a_worklist_that_is_not_one_is_refused_before_the_session(space, cli):  # noqa: F811
    from tests.cli.test_judging_cli import CORPUS

    worklist = space.folder / "wl.json"
    bad_hole = {"key": "2", "ranks": {"docs": 1}, "text": "t", "text_sha256": "not a digest"}
    documents = {
        "[1, 2]": "not a ptah worklist (format ptah-worklist@1)",
        '{"format": "ptah-worklist@1"}': "not a ptah worklist: KeyError 'cases'",
        json.dumps(
            {
                "format": "ptah-worklist@1",
                "corpus": {"digest": "d"},
                "judgements": {},
                "runs": ["docs"],
                "text_of": "docs",
                "cases": [{"id": "login", "query": "q", "k": 3, "holes": [bad_hole]}],
            }
        ): "not a ptah worklist: ValueError 'not a digest' is not a SHA-256: 64 lowercase hex digits",
        "\xff": "not a ptah worklist:",
    }
    for text, message in documents.items():
        worklist.write_text(text, encoding="latin-1" if text == "\xff" else "utf-8")
        code, out, err = cli(
            "corpus", "judge", space.folder / "support.yaml", "--worklist", worklist
        )
        assert code == 2 and err.startswith(f"{worklist}: {message}"), err
    os.unlink(worklist)
    os.mkfifo(worklist)
    code, out, err = cli("corpus", "judge", space.folder / "support.yaml", "--worklist", worklist)
    assert code == 2 and "is a FIFO (named pipe), not a regular file" in err
    assert (space.folder / "support.yaml").read_text() == CORPUS and not (
        space.folder / "support.judged.yaml"
    ).exists()
