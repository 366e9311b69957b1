"""Job states in process, with an evaluation held open: a cancel or a graceful stop during a run
wins over its result, and a restart fails what was running."""

from __future__ import annotations

import threading
import time

import pytest

pytest.importorskip("starlette")

from ptah.core.report import Report  # noqa: E402
from ptah.core.report_parts import ReportCorpus  # noqa: E402
from ptah_serve.jobs import Jobs  # noqa: E402
from ptah_serve.limits import Limits  # noqa: E402
from ptah_serve.records import open_records  # noqa: E402

BODY = {"corpus": "sha256:" + "0" * 64}


class Held(Jobs):
    """Jobs whose evaluation waits for ``release`` and then returns a report of nothing."""

    def __init__(self, records):
        super().__init__(records, spec=None, workers=1, limits=Limits())
        self.started, self.release = threading.Event(), threading.Event()

    def _evaluate(self, checked):
        self.started.set()
        assert self.release.wait(30)
        return "{}", Report(
            created_at="now",
            corpus=ReportCorpus(None, None, "sha256:" + "0" * 64, 0),
            runs=(),
            gates=(),
            timings={},
            environment={},
        )


def status_of(jobs: Jobs, job_id: str, wanted: str) -> dict:
    deadline = time.monotonic() + 30
    while (job := jobs.get(job_id))["status"] != wanted:
        assert time.monotonic() < deadline, job
        time.sleep(0.01)
    return job


@pytest.fixture
def records(tmp_path):
    opened = open_records(str(tmp_path / "ptah.db"))
    yield opened
    opened.close()


def test_a_cancel_during_the_run_drops_its_result(records):
    jobs = Held(records)
    job = jobs.submit(BODY, "ci")
    assert jobs.started.wait(30)
    assert jobs.cancel(job["id"])["status"] == "cancelled"
    jobs.release.set()
    jobs._pool.shutdown(wait=True)
    assert (jobs.get(job["id"])["status"], jobs.report_text(job["id"])) == ("cancelled", None)


def test_a_graceful_stop_fails_the_running_job_and_leaves_the_queued_one_for_the_next_start(
    records,
):
    jobs = Held(records)
    running, queued = jobs.submit(BODY, "ci"), jobs.submit(BODY, "ci")
    assert jobs.started.wait(30)
    jobs.close()
    failed = jobs.get(running["id"])
    assert (failed["status"], failed["error"]["code"]) == ("failed", "SERVER_STOPPED")
    jobs.release.set()
    jobs._pool.shutdown(wait=True)
    assert (
        jobs.get(running["id"])["status"] == "failed"
    )  # its late result did not overwrite the failure
    assert jobs.get(queued["id"])["status"] == "queued"
    again = Held(records)
    again.release.set()
    again.recover()
    assert status_of(again, queued["id"], "done")["verdict"] == "pass"
    again._pool.shutdown(wait=True)


def test_a_restart_fails_what_the_store_says_was_running(records):
    jobs = Held(records)
    job = jobs.submit(BODY, "ci")
    assert jobs.started.wait(30)  # the process "dies" here: nothing more is written
    after = Held(records)
    after.recover()
    failed = after.get(job["id"])
    assert (failed["status"], failed["error"]["code"]) == ("failed", "SERVER_RESTARTED")
    jobs.release.set()
    jobs._pool.shutdown(wait=True)
    assert jobs.get(job["id"])["status"] == "failed"


def test_a_failed_jobs_detail_names_server_files_relative_to_the_project_folder(records, tmp_path):
    from types import SimpleNamespace

    from ptah.core.errors import StoreUnavailable

    class Failing(Jobs):
        def _evaluate(self, checked):
            raise StoreUnavailable(
                f"store {tmp_path}/.ptah/store.db: database is locked; {tmp_path} is busy"
            )

    jobs = Failing(records, spec=SimpleNamespace(root=str(tmp_path)), workers=1, limits=Limits())
    job = jobs.submit(BODY, "ci")
    jobs._pool.shutdown(wait=True)
    assert jobs.get(job["id"])["error"] == {
        "code": "StoreUnavailable",
        "detail": "store .ptah/store.db: database is locked; . is busy",
    }


def test_only_the_project_folder_itself_is_written_relative(tmp_path):
    from ptah_serve.problems import unrooted

    root = str(tmp_path)
    assert (
        unrooted(f"{root}/ptah.yaml: bad; {root} is busy; in {root}.", root)
        == "ptah.yaml: bad; . is busy; in .."
    )
    assert (
        unrooted(f"{root}2/a and {root}-old/b and {root}.bak", root)
        == f"{root}2/a and {root}-old/b and {root}.bak"
    )


def test_a_result_the_store_cannot_keep_fails_the_job_instead_of_leaving_it_running(
    records, monkeypatch
):
    from ptah.core.errors import StoreUnavailable

    put = records.put

    def refuse_reports(kind, key, body):
        if kind == "report":
            raise StoreUnavailable("store ptah.db: database or disk is full.")
        return put(kind, key, body)

    monkeypatch.setattr(records, "put", refuse_reports)
    jobs = Held(records)
    job = jobs.submit(BODY, "ci")
    jobs.release.set()
    failed = status_of(jobs, job["id"], "failed")
    assert failed["error"] == {
        "code": "StoreUnavailable",
        "detail": "store ptah.db: database or disk is full.",
    }
    assert jobs.report_text(job["id"]) is None
    jobs._pool.shutdown(wait=True)
