"""Hostile outputs: every file ptah writes is replaced atomically, written through, or refused -- never misplaced.

What is at the path decides, a link followed (ptah/adapters/files.py): a regular file or nothing is
replaced atomically, keeping its permission bits (a link to it stays a link); a character device or FIFO
is written through; a folder, a socket, an empty path, a read-only file and a FIFO nobody reads are
refused with exit 2. Runs that could hang (a FIFO) run in a child process with a timeout.
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
from tests.hostile.files_project import beir_dataset, evaluate, make_project, ptah_popen, ptah_process

@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    return make_project(tmp_path_factory.mktemp("hostile-outputs"))


def is_report(text: str) -> bool:
    return json.loads(text)["format"] == "ptah-report@2"


# -- devices, FIFOs, links to them: written through, never replaced ------------------------------------


@pytest.mark.parametrize("command", ["evaluate", "export-qrels"])
def test_dev_full_is_written_through_and_its_failure_is_exit_3(project, capsys, command):
    before = os.stat("/dev/full")
    argv = evaluate(project, "--output", "/dev/full") if command == "evaluate" else (
        "corpus", "export-qrels", project / "corpus.yaml", "/dev/full")
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
        2, f"{fifo}: is a FIFO that no process is reading; start its reader first, or give the path of a file\n")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_link_to_proc_self_fd_1_writes_to_stdout_and_stays_a_link(project, tmp_path):
    link = tmp_path / "out"
    link.symlink_to("/proc/self/fd/1")
    done = ptah_process(*evaluate(project, "--output", link))  # stdout is a pipe here
    assert (done.returncode, done.stderr) == (0, "")
    report, _end = json.JSONDecoder().raw_decode(done.stdout)
    assert report["format"] == "ptah-report@2"
    assert os.readlink(link) == "/proc/self/fd/1"


def test_a_link_to_a_regular_file_stays_a_link_and_its_target_is_replaced(project, tmp_path, capsys):
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


# -- regular files: atomic, protection kept ------------------------------------------------------------


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
    assert (code, err) == (2, f"--output {output}: is read-only (mode 0444); ptah does not replace a file protected "
                              "against writing: make it writable or give another path\n")
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


# -- paths that are no file: exit 2 naming the option and its value -------------------------------------


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--output", "", '--output "": is an empty path; give the path of a file to write'),
        ("--html", ".", "--html .: names a folder; give the path of a file to write"),
        ("--trec-run", "runs/", "--trec-run runs/: names a folder; give the path of a file to write"),
    ],
)
def test_an_empty_or_folder_path_is_exit_2_naming_the_value(project, tmp_path, capsys, monkeypatch, option, value, message):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, *evaluate(project, option, value))
    assert (code, out, err) == (2, "", message + "\n")
    assert os.listdir(tmp_path) == []


def test_export_qrels_to_an_empty_path_is_exit_2(project, capsys):
    code, _, err = run_cli(capsys, "corpus", "export-qrels", project / "corpus.yaml", "")
    assert (code, err) == (2, '"": is an empty path; give the path of a file to write\n')


# -- import beir ----------------------------------------------------------------------------------------


def test_import_beir_force_keeps_linked_files_and_folders_as_links(tmp_path, capsys):
    dataset, project, outside = beir_dataset(tmp_path / "scifact"), tmp_path / "project", tmp_path / "outside"
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
    assert (code, err) == (2, f"{project / 'ptah.yaml'}: is read-only (mode 0444); ptah does not replace a file "
                              "protected against writing: make it writable or give another path\n")
    assert sorted(os.listdir(project)) == ["ptah.yaml"]


def test_import_beir_leaves_only_its_four_files(tmp_path, capsys):
    dataset, project = beir_dataset(tmp_path / "scifact"), tmp_path / "project"
    code, _, err = run_cli(capsys, "import", "beir", dataset, "--into", project)
    assert (code, err) == (0, "")
    assert sorted(str(p.relative_to(project)) for p in project.rglob("*")) == [
        "corpora", "corpora/test-k10.yaml", "corpora/test-k100.yaml", "ptah.yaml", "source.db"]
