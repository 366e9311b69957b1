"""Judges saving at once: a save takes turns with others on the same corpus folder and loses
nothing.

Real processes (``python -m ptah corpus grade``) on a real SQLite
source; grade-0 judgements live only in the record (``NAME.judged.yaml``),
which is what concurrent saves used to overwrite.
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from ptah.adapters.judgements_yaml import read_record
from ptah.core.errors import OperationalError
from ptah.services import judging
from tests.adapters.test_corpus_edit import CORPUS

KEYS = ["2", "3", "4", "5", "6", "8"]


@pytest.fixture
def corpus(workspace):
    path = workspace.folder / "support.yaml"
    path.write_text(CORPUS)
    return path


def judge(workspace, corpus, key: str) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ptah",
            "corpus",
            "grade",
            str(corpus),
            "cancel",
            key,
            "0",
            "--spec",
            str(workspace.spec_path),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_judges_saving_at_once_lose_no_judgement(workspace, corpus):
    judges = [judge(workspace, corpus, key) for key in KEYS]
    for process in judges:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
    assert sorted(read_record(corpus).cases["cancel"]) == KEYS


def test_a_save_waits_for_the_one_in_progress(workspace, corpus):
    with judging.saving(corpus):
        process = judge(workspace, corpus, "2")
        time.sleep(3)  # the judge started, read its rows and reached the save, where it waits
        assert process.poll() is None
        assert read_record(corpus).cases == {}
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert sorted(read_record(corpus).cases["cancel"]) == ["2"]


def test_a_save_that_waited_too_long_writes_nothing_and_says_so(workspace, corpus, monkeypatch):
    monkeypatch.setattr(judging, "SAVE_WAIT_S", 0.2)
    before = corpus.read_bytes()
    with judging.saving(corpus), workspace.project() as project:
        with pytest.raises(OperationalError) as raised:
            judging.judge_key(project, corpus, "cancel", "2", 1.0)
    assert str(raised.value) == (
        f"{corpus}: another process has been saving judgements in its folder for 0 s; "
        "nothing was written, try again"
    )
    assert raised.value.exit_code == 3
    assert corpus.read_bytes() == before
    assert not judging.record_path(corpus).exists()
