"""Hostile outputs: every file ptah writes is replaced atomically, written through, or refused --
never misplaced.

What is at the path decides, a link followed (ptah/adapters/files.py): a regular file or nothing is
replaced atomically, keeping its permission bits (a link to it stays a link); a character device or
FIFO is written through; a folder, a socket, an empty path, a read-only file and a FIFO nobody reads
are refused with exit 2. Runs that could hang (a FIFO) run in a child process with a timeout.
"""

from __future__ import annotations

import json
import os
import select
import socket
import stat
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.hostile.files_project import (
    beir_dataset,
    evaluate,
    make_project,
    ptah_popen,
    ptah_process,
)


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    return make_project(tmp_path_factory.mktemp("hostile-outputs"))


def is_report(text: str) -> bool:
    return json.loads(text)["format"] == "ptah-report@2"


# -- devices, FIFOs, links to them: written through, never replaced
# ------------------------------------


@pytest.mark.parametrize("command", ["evaluate", "export-qrels"])
def test_dev_full_is_written_through_and_its_failure_is_exit_3(project, capsys, command):
    before = os.stat("/dev/full")
    argv = (
        evaluate(project, "--output", "/dev/full")
        if command == "evaluate"
        else ("corpus", "export-qrels", project / "corpus.yaml", "/dev/full")
    )
    code, _, err = run_cli(capsys, *argv)
    assert (code, err) == (3, "/dev/full: cannot be written (No space left on device)\n")
    after = os.stat("/dev/full")
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev


@pytest.mark.parametrize("option", ["--output", "--html", "--trec-run"])
def test_dev_null_takes_every_output_and_stays_a_device(project, capsys, option):
    code, _, err = run_cli(capsys, *evaluate(project, option, "/dev/null"))
    assert (code, err) == (0, "")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def drain(reader: int, process: subprocess.Popen, timeout: float = 60) -> bytes:
    """Everything written into the FIFO open (non-blocking) as ``reader`` while ``process`` runs."""
    data, deadline = b"", time.monotonic() + timeout
    while time.monotonic() < deadline:
        select.select([reader], [], [], 0.2)
        try:
            chunk = os.read(reader, 1 << 16)
        except BlockingIOError:
            continue
        data += chunk
        if not chunk and process.poll() is not None:
            return data
    process.kill()
    raise AssertionError(f"still running after {timeout}s")


def test_a_fifo_with_a_reader_receives_the_report_and_stays_a_fifo(project, tmp_path):
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader exists before ptah opens it
    try:
        process = ptah_popen(*evaluate(project, "--output", fifo))
        data = drain(reader, process)
    finally:
        os.close(reader)
    assert process.wait(timeout=10) == 0, process.stderr.read()
    assert is_report(data.decode("utf-8"))
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_fifo_nobody_reads_is_refused_with_exit_2_without_waiting(project, tmp_path):
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    done = ptah_process(*evaluate(project, "--output", fifo))
    assert (done.returncode, done.stderr) == (
        2,
        f"{fifo}: is a FIFO that no process is reading; start its reader first, or give the path of a file\n",
    )
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_link_to_proc_self_fd_1_writes_to_stdout_and_stays_a_link(project, tmp_path):
    link = tmp_path / "out"
    link.symlink_to("/proc/self/fd/1")
    done = ptah_process(*evaluate(project, "--output", link))  # stdout is a pipe here
    assert (done.returncode, done.stderr) == (0, "")
    report, _end = json.JSONDecoder().raw_decode(done.stdout)
    assert report["format"] == "ptah-report@2"
    assert os.readlink(link) == "/proc/self/fd/1"


def test_a_link_to_a_regular_file_stays_a_link_and_its_target_is_replaced(
    project, tmp_path, capsys
):
    target, link = tmp_path / "target.json", tmp_path / "link.json"
    target.write_text("old")
    target.chmod(0o640)
    link.symlink_to(target)
    code, _, err = run_cli(capsys, *evaluate(project, "--output", link))
    assert (code, err) == (0, "")
    assert os.readlink(link) == str(target) and is_report(target.read_text())
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(os.listdir(tmp_path)) == ["link.json", "target.json"]


def test_a_dangling_link_stays_a_link_and_its_target_is_created(project, tmp_path, capsys):
    link = tmp_path / "dangling.html"
    link.symlink_to(tmp_path / "elsewhere.html")
    code, _, err = run_cli(capsys, *evaluate(project, "--html", link))
    assert (code, err) == (0, "")
    assert os.readlink(link) == str(tmp_path / "elsewhere.html")
    assert (tmp_path / "elsewhere.html").read_text().startswith("<!DOCTYPE html>")


def test_a_socket_is_refused_with_exit_2(project, tmp_path, capsys):
    path = tmp_path / "s"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    try:
        code, _, err = run_cli(capsys, *evaluate(project, "--trec-run", path))
    finally:
        server.close()
    assert (code, err) == (2, f"--trec-run {path}: is a socket; give the path of a file to write\n")
    assert stat.S_ISSOCK(os.lstat(path).st_mode)


# -- regular files: atomic, protection kept
# ------------------------------------------------------------


def test_a_new_report_has_the_umask_mode_and_leaves_no_temporary(project, tmp_path, capsys):
    output = tmp_path / "new" / "report.json"
    previous = os.umask(0o027)
    try:
        code, _, err = run_cli(capsys, *evaluate(project, "--output", output))
    finally:
        os.umask(previous)
    assert (code, err) == (0, "")
    assert is_report(output.read_text()) and stat.S_IMODE(output.stat().st_mode) == 0o640
    assert os.listdir(output.parent) == ["report.json"]


def test_a_read_only_report_keeps_its_content_and_mode(project, tmp_path, capsys):
    output = tmp_path / "report.json"
    output.write_text("keep")
    output.chmod(0o444)
    code, _, err = run_cli(capsys, *evaluate(project, "--output", output))
    assert (code, err) == (
        2,
        f"--output {output}: is read-only (mode 0444); ptah does not replace a file protected "
        "against writing: make it writable or give another path\n",
    )
    assert (output.read_text(), stat.S_IMODE(output.stat().st_mode)) == ("keep", 0o444)


def test_a_replaced_report_keeps_its_permission_bits(project, tmp_path, capsys):
    output = tmp_path / "report.html"
    output.write_text("old")
    output.chmod(0o640)
    code, _, err = run_cli(capsys, *evaluate(project, "--html", output))
    assert (code, err) == (0, "")
    assert stat.S_IMODE(output.stat().st_mode) == 0o640
    assert output.read_text().startswith("<!DOCTYPE html>")
    assert os.listdir(tmp_path) == ["report.html"]


# -- paths that are no file: exit 2 naming the option and its value
# -------------------------------------


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--output", "", '--output "": is an empty path; give the path of a file to write'),
        ("--html", ".", "--html .: names a folder; give the path of a file to write"),
        (
            "--trec-run",
            "runs/",
            "--trec-run runs/: names a folder; give the path of a file to write",
        ),
    ],
)
def test_an_empty_or_folder_path_is_exit_2_naming_the_value(
    project, tmp_path, capsys, monkeypatch, option, value, message
):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, *evaluate(project, option, value))
    assert (code, out, err) == (2, "", message + "\n")
    assert os.listdir(tmp_path) == []


def test_export_qrels_to_an_empty_path_is_exit_2(project, capsys):
    code, _, err = run_cli(capsys, "corpus", "export-qrels", project / "corpus.yaml", "")
    assert (code, err) == (2, '"": is an empty path; give the path of a file to write\n')


# -- outputs over inputs: exit 2 before anything is read or written
# ------------------------------------


INPUTS = (
    "corpus.yaml",
    "corpus.judged.yaml",
    "ptah.yaml",
    "source.db",
    ".ptah/ptah.db",
    "base.json",
)


@pytest.fixture(scope="module")
def baseline(project) -> Path:
    assert run_cli(None, *evaluate(project, "--output", project / "base.json")).code == 0
    (project / "corpus.judged.yaml").write_text("version: 1\ncases: {}\n")
    return project / "base.json"


def contents(project: Path) -> dict[str, bytes]:
    return {name: (project / name).read_bytes() for name in INPUTS}


def refused_over(project: Path, baseline: Path, capsys, *given) -> str:
    """The sentence of an evaluation refused (exit 2, nothing printed) for ``given`` outputs, every
    input intact."""
    before = contents(project)
    code, out, err = run_cli(capsys, *evaluate(project, "--baseline", baseline, *given))
    assert (code, out) == (2, "")
    assert contents(project) == before
    return err


WHAT = {
    "corpus.yaml": "the corpus",
    "corpus.judged.yaml": "the corpus's judgement record",
    "ptah.yaml": "the specification",
    "source.db": "the source database",
    ".ptah/ptah.db": "the store",
    "base.json": "the baseline report",
}


@pytest.mark.parametrize("name", INPUTS)
@pytest.mark.parametrize(
    "option", ["--output", "--html", "--junit", "--markdown", "--trec-run", "--save"]
)
def test_an_output_over_an_input_of_the_run_is_exit_2_and_nothing_changes(
    project, baseline, capsys, name, option
):
    target = project / name
    given = ("--save", f"json={target}") if option == "--save" else (option, target)
    assert f": is {WHAT[name]} this run reads" in refused_over(project, baseline, capsys, *given)


@pytest.mark.parametrize("name", INPUTS)
@pytest.mark.parametrize("spelled", ["hard link", "symbolic link", "dotted"])
def test_an_input_under_another_name_is_still_an_input(
    project, baseline, tmp_path, capsys, name, spelled
):
    target = tmp_path / "alias"
    if spelled == "hard link":
        os.link(project / name, target)
    elif spelled == "symbolic link":
        target.symlink_to(project / name)
    else:
        target = Path(f"{project}/.ptah/../{name}")
    assert f": is {WHAT[name]} this run reads" in refused_over(
        project, baseline, capsys, "--output", target
    )


def test_an_output_over_an_input_names_both_in_one_sentence(project, baseline, capsys):
    corpus = project / "corpus.yaml"
    code, _, err = run_cli(capsys, *evaluate(project, "--junit", corpus))
    assert (code, err) == (
        2,
        f"--junit {corpus}: is the corpus this run reads ({corpus}); ptah never writes over "
        "an input, so give another path\n",
    )


def test_two_outputs_on_one_file_are_exit_2_and_a_device_may_take_both(project, tmp_path, capsys):
    report = tmp_path / "report.json"
    code, _, err = run_cli(
        capsys, *evaluate(project, "--output", report, "--save", f"json={tmp_path}/./report.json")
    )
    assert (code, err) == (
        2,
        f"--save {tmp_path}/./report.json: --output {report} writes there too; give each "
        "output a path of its own\n",
    )
    report.write_text("kept")
    os.link(report, tmp_path / "same.html")
    code, _, err = run_cli(
        capsys, *evaluate(project, "--html", tmp_path / "same.html", "--junit", report)
    )
    assert code == 2 and "writes there too" in err
    assert report.read_text() == "kept" and sorted(os.listdir(tmp_path)) == [
        "report.json",
        "same.html",
    ]
    code, _, err = run_cli(
        capsys, *evaluate(project, "--html", "/dev/null", "--junit", "/dev/null")
    )
    assert (code, err) == (0, "")


def test_report_commands_refuse_an_output_over_the_reports_they_read(
    project, baseline, tmp_path, capsys
):
    before = baseline.read_bytes()
    for argv in (
        ("report", "show", baseline, "--html", baseline),
        ("report", "trend", baseline, "--html", baseline),
        (
            "report",
            "rebaseline",
            baseline,
            "--corpus",
            project / "corpus.yaml",
            "--spec",
            project / "ptah.yaml",
            "--output",
            project / "corpus.yaml",
        ),
        (
            "corpus",
            "holes",
            project / "corpus.yaml",
            "--spec",
            project / "ptah.yaml",
            "--output",
            project / "source.db",
        ),
    ):
        code, out, err = run_cli(capsys, *argv)
        assert (code, out) == (2, ""), argv
        assert ": is the " in err or ": is a report " in err, err
    assert baseline.read_bytes() == before


# -- import beir
# ----------------------------------------------------------------------------------------


def test_import_beir_force_keeps_linked_files_and_folders_as_links(tmp_path, capsys):
    dataset, project, outside = (
        beir_dataset(tmp_path / "scifact"),
        tmp_path / "project",
        tmp_path / "outside",
    )
    project.mkdir()
    outside.mkdir()
    (project / "notes.txt").write_text("mine")
    (project / "corpora").symlink_to(outside)
    (project / "ptah.yaml").symlink_to(tmp_path / "spec.yaml")
    code, _, err = run_cli(capsys, "import", "beir", dataset, "--into", project, "--force")
    assert (code, err) == (0, "")
    assert sorted(os.listdir(project)) == ["corpora", "notes.txt", "ptah.yaml", "source.db"]
    assert (project / "corpora").is_symlink() and (project / "ptah.yaml").is_symlink()
    assert sorted(os.listdir(outside)) == ["test-k10.yaml", "test-k100.yaml"]
    assert (tmp_path / "spec.yaml").read_text().startswith("# Generated by `ptah import beir`")


def test_import_beir_force_refuses_a_read_only_spec_before_writing(tmp_path, capsys):
    dataset, project = beir_dataset(tmp_path / "scifact"), tmp_path / "project"
    project.mkdir()
    (project / "ptah.yaml").write_text("mine")
    (project / "ptah.yaml").chmod(0o444)
    code, _, err = run_cli(capsys, "import", "beir", dataset, "--into", project, "--force")
    assert (code, err) == (
        2,
        f"{project / 'ptah.yaml'}: is read-only (mode 0444); ptah does not replace a file "
        "protected against writing: make it writable or give another path\n",
    )
    assert sorted(os.listdir(project)) == ["ptah.yaml"]


def test_import_beir_leaves_only_its_four_files(tmp_path, capsys):
    dataset, project = beir_dataset(tmp_path / "scifact"), tmp_path / "project"
    code, _, err = run_cli(capsys, "import", "beir", dataset, "--into", project)
    assert (code, err) == (0, "")
    assert sorted(str(p.relative_to(project)) for p in project.rglob("*")) == [
        "corpora",
        "corpora/test-k10.yaml",
        "corpora/test-k100.yaml",
        "ptah.yaml",
        "source.db",
    ]
