"""``ptah serve`` under load: request latency, registration, and evaluations per minute against the
CLI.

    python benchmarks/serve.py [--work DIR] [--clients 50] [--requests 20] [--evaluations 10]
    [--workers 2] [--json FILE]

Setup (not timed): the bundled example (``examples/support``: 187 published
rows, all-MiniLM-L6-v2) copied to ``WORK``, its generation ``title-body``
built, one CLI evaluate to fill the query cache, a manage token made with
``ptah token create``, and a real ``ptah serve`` started on 127.0.0.1 (a
free port) in its own process.

Measured, each client an ``httpx.Client`` in a thread of this process (so
the client's own Python shares the machine with the server):

* **GET /v1/evaluations/{id}** of a done evaluation (its report: 25 cases):
  ``--clients`` clients at once, each ``--requests`` requests; p50/p95/p99
  of each request's wall time, and requests per second;
* **registering a 25-case corpus**: ``--clients`` clients at once, each
  registering ``--requests // 5`` distinct corpora (``corpora/support.yaml``
  with one query changed, so every digest is new: the whole write path);
  p50/p95/p99;
* **evaluations per minute, warm**: ``--evaluations`` evaluations of the
  example (``corpora/support.yaml``, generation title-body) posted at once
  and polled until done, against the same evaluations through the CLI one
  after another (``ptah inference evaluate --output``, each a whole process,
  every query vector from the store's cache); one untimed run of each first.

The server's reports must hold the CLI's means exactly; exit 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "packages" / "ptah-serve" / "tests"))

from serving import Server  # noqa: E402  (ptah-serve's tests' server: a real process on a free port)


def ptah(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ptah", *args], capture_output=True, text=True, check=True
    )


def percentiles(samples: list[float]) -> dict:
    ordered = sorted(samples)
    cut = statistics.quantiles(ordered, n=100, method="inclusive")
    return {
        "n": len(ordered),
        "p50_ms": 1000 * cut[49],
        "p95_ms": 1000 * cut[94],
        "p99_ms": 1000 * cut[98],
        "max_ms": 1000 * ordered[-1],
    }


def setup(work: Path) -> tuple[Path, Path]:
    project = work / "support"
    if not (project / "ptah.yaml").exists():
        project.mkdir(parents=True)
        for name in ("ptah.yaml", "make_db.py", "articles.jsonl"):
            shutil.copy(REPO / "examples" / "support" / name, project / name)
        subprocess.run(
            [sys.executable, str(project / "make_db.py")], check=True, capture_output=True
        )
    spec = project / "ptah.yaml"
    ptah("inference", "build", "title-body", "--spec", str(spec), "--quiet")
    corpus = REPO / "corpora" / "support.yaml"
    ptah(
        "inference",
        "evaluate",
        "--spec",
        str(spec),
        "--corpus",
        str(corpus),
        "--output",
        str(work / "warm.json"),
    )
    return spec, corpus


def at_once(clients: int, work) -> tuple[list[float], float]:
    """Run ``work(client_number)`` (returning its list of request seconds) in ``clients`` threads at
    once."""
    began = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        timings = [seconds for found in pool.map(work, range(clients)) for seconds in found]
    return timings, time.perf_counter() - began


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--evaluations", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", type=Path)
    options = parser.parse_args()
    work = options.work or Path(tempfile.mkdtemp(prefix="ptah-serve-bench-"))
    spec, corpus = setup(work)
    token = ptah("token", "create", "--scope", "manage", "--spec", str(spec)).stdout.splitlines()[
        -1
    ]
    server = Server(spec, "--workers", str(options.workers)).start()
    results: dict = {"clients": options.clients, "workers": options.workers}
    try:
        headers = {"Authorization": f"Bearer {token}"}
        client = httpx.Client(base_url=server.url, headers=headers, timeout=120)
        text = corpus.read_text()
        digest = client.post("/v1/corpora", content=text.encode()).json()["digest"]
        body = {"corpus": digest, "generations": ["title-body"]}

        def evaluate_and_wait() -> dict:
            job_id = client.post("/v1/evaluations", json=body).json()["id"]
            while True:
                job = client.get(f"/v1/evaluations/{job_id}").json()
                if job["status"] in ("done", "failed", "cancelled"):
                    return job
                time.sleep(0.01)

        done = evaluate_and_wait()
        assert done["status"] == "done", done["error"]

        def fetch(_):
            seconds = []
            with httpx.Client(base_url=server.url, headers=headers, timeout=120) as mine:
                for _ in range(options.requests):
                    began = time.perf_counter()
                    answer = mine.get(f"/v1/evaluations/{done['id']}")
                    seconds.append(time.perf_counter() - began)
                    assert (
                        answer.status_code == 200
                        and answer.json()["report"]["corpus"]["digest"] == digest
                    )
            return seconds

        timings, wall = at_once(options.clients, fetch)
        results["get_evaluation"] = percentiles(timings) | {
            "requests_per_s": len(timings) / wall,
            "bytes": len(client.get(f"/v1/evaluations/{done['id']}").content),
        }

        run = secrets.token_hex(4)  # a store reused by --work holds the corpora of earlier runs

        def register(number: int):
            seconds = []
            with httpx.Client(base_url=server.url, headers=headers, timeout=120) as mine:
                for index in range(max(1, options.requests // 5)):
                    changed = text.replace(
                        "is it cheaper if I pay for a whole year?",
                        f"is it cheaper if I pay for a whole year? ({run}-{number}-{index})",
                        1,
                    )
                    began = time.perf_counter()
                    answer = mine.post("/v1/corpora", content=changed.encode())
                    seconds.append(time.perf_counter() - began)
                    assert answer.status_code == 201, answer.text
            return seconds

        timings, wall = at_once(options.clients, register)
        results["register_corpus"] = percentiles(timings) | {
            "requests_per_s": len(timings) / wall,
            "cases": done["report"]["corpus"]["cases"],
        }

        count = options.evaluations
        began = time.perf_counter()
        with ThreadPoolExecutor(count) as pool:
            jobs = list(pool.map(lambda _: evaluate_and_wait(), range(count)))
        server_wall = time.perf_counter() - began
        assert all(job["status"] == "done" for job in jobs)
        began = time.perf_counter()
        reports = []
        for number in range(count):
            output = work / f"cli-{number}.json"
            ptah(
                "inference",
                "evaluate",
                "--spec",
                str(spec),
                "--corpus",
                str(corpus),
                "-g",
                "title-body",
                "--output",
                str(output),
            )
            reports.append(json.loads(output.read_text()))
        cli_wall = time.perf_counter() - began
        results["evaluations"] = {
            "count": count,
            "server_s": server_wall,
            "server_per_minute": 60 * count / server_wall,
            "cli_s": cli_wall,
            "cli_per_minute": 60 * count / cli_wall,
            "server_seconds_per_evaluation": server_wall / count,
            "cli_seconds_per_evaluation": cli_wall / count,
        }
        keys = [
            key
            for key in reports[0]["runs"][0]["aggregates"]
            if isinstance(reports[0]["runs"][0]["aggregates"][key], dict)
            and "value" in reports[0]["runs"][0]["aggregates"][key]
        ]
        agree = all(
            job["report"]["runs"][0]["aggregates"][key] == reports[0]["runs"][0]["aggregates"][key]
            for job in jobs
            for key in keys
        )
        results["means_agree"] = agree
    finally:
        server.stop()
    print(json.dumps(results, indent=2))
    if options.json:
        options.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0 if results.get("means_agree") else 1


if __name__ == "__main__":
    sys.exit(main())
