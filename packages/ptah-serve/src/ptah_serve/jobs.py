"""Evaluation jobs: kept in the store, run by a pool of worker threads off the event loop.

A job is the record ``evaluation/ID``: its id, status, the checked request
body, times, and once done the verdict and each run's means (for the
listings and the page); its report is the record ``report/ID``, the text
``--output`` writes. Statuses: ``queued`` -> ``running`` -> ``done`` |
``failed``; ``cancelled`` from queued or running (a running evaluation
cannot be interrupted: it finishes in the background and its report is
dropped). Every change of status is written before it is announced. A
graceful stop fails the running jobs (``SERVER_STOPPED``) and leaves the
queued ones for the next start.

Each worker thread opens the project once through the Python API and keeps it, so a generation's
vectors and cached query vectors are read once, and every later evaluation is warm. The source is
not kept: each evaluation opens it, reads it in one snapshot and closes it, so no read transaction
is held on the application's table between evaluations (a SQLite source in rollback-journal mode
would refuse the application's writes while one is). When the server starts, a job the store says is
running was running when the server stopped: it is marked failed (``SERVER_RESTARTED``), never lost
silently; queued jobs are queued again.
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import ptah
from ptah import PtahError, Report
from ptah.core.errors import ReportError
from ptah_serve.corpora import registered_corpus
from ptah_serve.evaluations import evaluation_request
from ptah_serve.limits import LimitExceeded, Limits
from ptah_serve.problems import HttpProblem, unrooted

log = logging.getLogger("ptah_serve")
FINAL = ("done", "failed", "cancelled")
RETRY_AFTER_S = "10"  # what a 429 asks a client to wait, in seconds
_CORPORA_KEPT = 32  # parsed corpora kept in memory (each up to 16 MiB of YAML)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def error_code(exc: BaseException) -> str:
    """A failed job's code: ``LIMIT_EXCEEDED``, else the error's kind (``NotBuilt``,
    ``UnknownGeneration``…)."""
    return getattr(exc, "code", None) or type(exc).__name__


class Jobs:
    """The evaluation jobs of one server (one server per store)."""

    def __init__(self, records, spec, workers: int, limits: Limits):
        self._records = records
        self.spec = spec
        self._root = getattr(spec, "root", None)  # what a failed job's detail shows relative to it
        self._limits = limits
        self._lock = threading.Lock()  # status changes are read-modify-write on one record
        self._local = threading.local()
        self._corpora: dict = {}
        self._queued: dict[
            str, set[str]
        ] = {}  # a manage token's name -> its queued jobs' ids (this server's own)
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ptah-job")

    # --- records ----------------------------------------------------------------

    def get(self, job_id: str) -> dict | None:
        body = self._records.get("evaluation", job_id)
        return None if body is None else json.loads(body)

    def _put(self, job: dict) -> None:
        self._records.put(
            "evaluation", job["id"], json.dumps(job, ensure_ascii=False, sort_keys=True)
        )

    def report_text(self, job_id: str) -> str | None:
        return self._records.get("report", job_id)

    def all(self) -> list[dict]:
        """Every job, oldest first."""
        return [json.loads(body) for _, body in self._records.items("evaluation")]

    def page(
        self, after: str | None, limit: int, matches: Callable[[dict], bool]
    ) -> tuple[list[dict], str | None]:
        """Up to ``limit`` jobs ``matches`` keeps, oldest first, from after the job ``after``, and
        the ``after`` of the next page (None: no more). The records are read ``limit + 1`` at a
        time, no further than the page and the one record saying whether there is more need, however
        many jobs the store keeps."""
        found: list[dict] = []
        while True:
            chunk = self._records.page("evaluation", after, limit + 1)
            for _, body in chunk:
                job = json.loads(body)
                if matches(job):
                    if len(found) == limit:
                        return found, found[-1]["id"]
                    found.append(job)
            if len(chunk) < limit + 1:
                return found, None
            after = chunk[-1][0]

    # --- lifecycle --------------------------------------------------------------

    def recover(self) -> None:
        """After a restart: fail the jobs that were running, queue again the ones that were
        queued."""
        for job in self.all():
            if job["status"] == "running":
                job.update(
                    status="failed",
                    finished_at=_now(),
                    error={
                        "code": "SERVER_RESTARTED",
                        "detail": "the server stopped while this evaluation was running; start it again.",
                    },
                )
                self._put(job)
            elif job["status"] == "queued":
                self._pool.submit(self._run, job["id"])

    def submit(self, checked: dict, owner: str) -> dict:
        """Queue a checked evaluation body for the token named ``owner``; its job record.
        HttpProblem 429 when the token has ``max_queued`` evaluations waiting already."""
        job = {
            "id": f"ev_{secrets.token_hex(12)}",
            "status": "queued",
            "corpus": checked["corpus"],
            "request": checked,
            "created_at": _now(),
            "started_at": None,
            "finished_at": None,
            "verdict": None,
            "runs": None,
            "error": None,
        }
        with self._lock:
            waiting = self._queued.setdefault(owner, set())
            if len(waiting) >= self._limits.max_queued:
                raise HttpProblem(
                    429,
                    "QUEUE_FULL",
                    f'the token "{owner}" has {len(waiting):,} evaluations queued, '
                    f"the limit; try again once some have started.",
                    {"Retry-After": RETRY_AFTER_S},
                )
            waiting.add(job["id"])
            self._put(job)
        self._pool.submit(self._run, job["id"])
        return job

    def _dequeue(self, job_id: str) -> None:
        """The job left the queue (started or cancelled): one less for its token (under the
        lock)."""
        for waiting in self._queued.values():
            waiting.discard(job_id)

    def cancel(self, job_id: str) -> dict | None:
        """Cancel a queued or running job (None: no such job); a finished one is returned
        unchanged."""
        with self._lock:
            job = self.get(job_id)
            if job is not None and job["status"] not in FINAL:
                job.update(status="cancelled", finished_at=_now())
                self._put(job)
            self._dequeue(job_id)
        return job

    def close(self) -> None:
        """On a graceful stop: queued jobs stay queued (for the next start), running ones are failed
        (``SERVER_STOPPED``) now; an evaluation still computing finishes in its thread and is
        dropped."""
        self._pool.shutdown(wait=False, cancel_futures=True)
        with self._lock:
            for job in self.all():
                if job["status"] == "running":
                    job.update(
                        status="failed",
                        finished_at=_now(),
                        error={
                            "code": "SERVER_STOPPED",
                            "detail": "the server was stopped while this evaluation was running; start it again.",
                        },
                    )
                    self._put(job)

    # --- the work ---------------------------------------------------------------

    def _project(self):
        project = getattr(self._local, "project", None)
        if project is None:
            project = ptah.open_project(
                self.spec
            )  # kept for the thread's life: warm for every later job
            self._local.project = project
        return project

    def corpus(self, digest: str):
        """The registered corpus with this digest (None: unregistered); registered corpora never
        change, so each is read once."""
        corpus = self._corpora.get(digest)
        if corpus is None:
            corpus = registered_corpus(self._records, digest)
            if corpus is not None:
                if len(self._corpora) >= _CORPORA_KEPT:
                    self._corpora.clear()
                self._corpora[digest] = corpus
        return corpus

    def _start(self, job_id: str) -> dict | None:
        with self._lock:
            self._dequeue(job_id)
            job = self.get(job_id)
            if job is None or job["status"] != "queued":
                return None
            job.update(status="running", started_at=_now())
            self._put(job)
        return job

    def _finish(self, job_id: str, **changes) -> None:
        with self._lock:
            job = self.get(job_id)
            if (
                job is None or job["status"] != "running"
            ):  # cancelled meanwhile: the result is dropped
                return
            if "report" in changes:
                self._records.put("report", job_id, changes.pop("report"))
            job.update(finished_at=_now(), **changes)
            self._put(job)

    def _run(self, job_id: str) -> None:
        job = self._start(job_id)
        if job is None:
            return
        try:
            text, report = self._evaluate(job["request"])
            self._finish(
                job_id, status="done", report=text, verdict=report.verdict, runs=summary(report)
            )
        # or the store refused the result (locked, full): the job failed, not "running" for good
        except PtahError as exc:
            self._finish(
                job_id,
                status="failed",
                error={"code": error_code(exc), "detail": unrooted(str(exc), self._root)},
            )
        except Exception as exc:  # a bug: said in one line, logged without the request's secrets
            log.exception("evaluation %s failed", job_id)
            self._finish(
                job_id,
                status="failed",
                error={"code": "INTERNAL", "detail": f"internal error: {type(exc).__name__}"},
            )

    def _evaluate(self, checked: dict) -> tuple[str, Report]:
        corpus = self.corpus(checked["corpus"])
        baseline = None
        if checked["baseline"] is not None:
            baseline_text = self.report_text(checked["baseline"])
            if (
                baseline_text is None
            ):  # checked done when submitted; its report is gone from the store since
                raise ReportError(
                    f"the baseline evaluation {checked['baseline']} no longer has a report"
                )
            baseline = Report.from_dict(json.loads(baseline_text))
        project = self._project()
        with project.fresh_source():  # one snapshot of the source per evaluation, none between
            report = project.evaluate(corpus, evaluation_request(checked), baseline_report=baseline)
        text = report.to_json()
        size = len(text.encode("utf-8"))
        if size > self._limits.max_report_bytes:
            raise LimitExceeded(
                f"the report is {size:,} bytes, more than the limit of "
                f"{self._limits.max_report_bytes:,}; it was not kept (never cut)."
            )
        return text, report


def summary(report: Report) -> list[dict]:
    """Each run's name, channel and means (value, numerator, denominator): what listings and the
    page show."""
    runs = report.to_dict(cases=False)["runs"]
    return [
        {
            "name": run.name,
            "generation": run.generation.name,
            "channel": run.channel,
            "means": {
                name: {
                    field: data["aggregates"][key][field]
                    for field in ("value", "numerator", "denominator")
                }
                for name, key in ((str(measure), measure.key) for measure in run.measures)
            },
        }
        for run, data in zip(report.runs, runs)
    ]
