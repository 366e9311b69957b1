"""Hostile reads: every file ptah reads is a regular file read within a byte bound, whatever st_size
says.

A device (/dev/zero: st_size 0, endless), a FIFO with no writer (opening it would wait forever) or a
socket given as corpus, specification, baseline or BEIR file is exit 2 at once, naming the file; a
regular file past its limit is exit 2 naming the limit. Runs that could hang or eat memory run in a
child process with a timeout and a memory cap, so a regression fails instead of blocking the suite.
"""

from __future__ import annotations

import os
import resource
from pathlib import Path

import pytest

import ptah.adapters.beir as beir
from ptah.adapters.files import read_bounded
from ptah.core.errors import InputError
from tests.conftest import run_cli
from tests.hostile.files_project import (
    beir_dataset,
    evaluate,
    make_project,
    ptah_process,
    python_process,
)

MEMORY_CAP = 4 << 30


def capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def ptah_capped(*argv, **options):
    return ptah_process(*argv, preexec_fn=capped, **options)


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    return make_project(tmp_path_factory.mktemp("hostile-reads"))


@pytest.fixture
def fifo(tmp_path) -> Path:
    path = tmp_path / "input.fifo"
    os.mkfifo(path)
    return path


def as_input(project, role, path):
    """The evaluate command line that reads ``path`` as its baseline, corpus or specification."""
    if role == "baseline report":
        return evaluate(project, "--baseline", path)
    spec, corpus = (
        (path, project / "corpus.yaml")
        if role == "specification"
        else (project / "ptah.yaml", path)
    )
    return ("inference", "evaluate", "--spec", spec, "--corpus", corpus)


@pytest.mark.parametrize("role", ["baseline report", "corpus", "specification"])
@pytest.mark.parametrize(
    ("device", "kind"), [("/dev/zero", "a character device"), ("fifo", "a FIFO (named pipe)")]
)
def test_dev_zero_or_a_fifo_without_writer_as_an_input_is_exit_2_at_once(
    project, fifo, role, device, kind
):
    path = fifo if device == "fifo" else device
    done = ptah_capped(*as_input(project, role, path))
    assert (done.returncode, done.stderr) == (
        2,
        f"{path}: is {kind}, not a regular file; give the path of a {role} file\n",
    )


def test_dev_zero_to_corpus_validate_is_exit_2_at_once():
    done = ptah_capped("corpus", "validate", "/dev/zero")
    assert done.returncode == 2
    assert (
        done.stderr.splitlines()[0]
        == "/dev/zero: is a character device, not a regular file; give the path of a corpus file"
    )


def test_a_fifo_named_ptah_yaml_found_upward_is_exit_2_without_waiting(project, tmp_path):
    os.mkfifo(tmp_path / "ptah.yaml")
    done = ptah_capped("inference", "list", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (
        2,
        f"{tmp_path / 'ptah.yaml'}: is a FIFO (named pipe), not a regular file; give the path of a specification file\n",
    )


@pytest.mark.parametrize("name", ["corpus.jsonl", "queries.jsonl", "qrels/test.tsv"])
def test_a_beir_file_that_is_a_fifo_is_exit_2_without_waiting(tmp_path, name):
    dataset = beir_dataset(tmp_path / "scifact")
    (dataset / name).unlink()
    os.mkfifo(dataset / name)
    what = {
        "corpus.jsonl": "BEIR corpus",
        "queries.jsonl": "BEIR queries",
        "qrels/test.tsv": "BEIR qrels",
    }[name]
    done = ptah_capped("import", "beir", dataset, "--into", tmp_path / "project")
    assert (done.returncode, done.stderr) == (
        2,
        f"{dataset / name}: is a FIFO (named pipe), not a regular file; give the path of a {what} file\n",
    )
    assert not (tmp_path / "project").exists()


def test_a_beir_line_past_the_line_limit_is_exit_2_naming_the_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(beir, "MAX_LINE_BYTES", 100)
    dataset = beir_dataset(tmp_path / "scifact")
    with open(dataset / "corpus.jsonl", "a") as handle:
        handle.write('{"_id": "d3", "text": "' + "x" * 200 + '"}\n')
    code, _, err = run_cli(capsys, "import", "beir", dataset, "--into", tmp_path / "project")
    assert (code, err) == (
        2,
        f"{dataset / 'corpus.jsonl'}:3: the line is longer than the BEIR corpus limit of 100 bytes for one line\n",
    )
    assert not (tmp_path / "project").exists()


def test_a_beir_file_past_its_limit_is_exit_2_naming_the_limit(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(beir, "MAX_SIDE_FILE_BYTES", 40)
    dataset = beir_dataset(tmp_path / "scifact")
    (dataset / "queries.jsonl").write_text('{"_id": "q1", "text": "alpha?"}\n' * 2)  # 2 x 32 bytes
    code, _, err = run_cli(capsys, "import", "beir", dataset, "--into", tmp_path / "project")
    assert (code, err) == (
        2,
        f"{dataset / 'queries.jsonl'}: the file is 64 bytes, more than the BEIR queries limit of 40\n",
    )
    assert not (tmp_path / "project").exists()


def test_the_bound_holds_where_st_size_says_nothing():
    # /proc files are regular files whose st_size is 0 whatever they hold
    path = "/proc/self/maps"
    assert os.stat(path).st_size == 0
    with pytest.raises(InputError) as info:
        read_bounded(path, limit=10, what="corpus", hint="split it")
    assert (
        str(info.value)
        == f"{path}: the file holds more than the corpus limit of 10 bytes; split it"
    )


def test_a_model_files_cache_that_is_a_fifo_is_ignored_without_waiting(tmp_path):
    model, cache = tmp_path / "model", tmp_path / "cache"
    model.mkdir()
    cache.mkdir()
    (model / "config.json").write_text("{}")
    os.mkfifo(cache / "model-files.json")
    code = (
        "from ptah.adapters.embedders.resolve import model_digest; import sys; "
        "print(model_digest(sys.argv[1], sys.argv[2]))"
    )
    done = python_process("-c", code, model, cache, preexec_fn=capped)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("sha256:")
