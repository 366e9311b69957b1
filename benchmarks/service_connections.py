"""Benchmark: connections a service build opens, the httpx client against the urllib one it
replaced.

    python benchmarks/service_connections.py [--rows 2000] [--batch-size 16] [--repeats 2]

A project of ROWS synthetic rows and one ``provider: openai`` generation is
built by ``ptah inference build`` in a fresh process, against the tests'
embedding server (``tests/adapters/openai_server.py``: the standard
library's HTTP server on 127.0.0.1, in this process, its model a stand-in
that costs nothing), which counts the requests and the TCP connections it
accepts. Each build runs with this tree's ``ptah`` and with the one of commit
:data:`BEFORE` (``git archive`` into a temporary folder, put first on
``PYTHONPATH``), at ``max_concurrency`` 1 and 4, in turn (before, after,
after, before, ...), into a fresh store each time.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.build import write_project  # noqa: E402
from benchmarks.openai_service import StandIn, served  # noqa: E402
from tests.adapters.openai_server import EmbeddingServer  # noqa: E402

BEFORE = (
    "bf34c1e80d4f413b61626da7221480d389cddbe1"  # the last commit whose service client was urllib's
)


def build(spec: Path, tree: Path) -> float:
    """Seconds of one ``ptah inference build`` of ``spec`` into a fresh store, by the ``ptah``
    package in ``tree``."""
    shutil.rmtree(spec.parent / ".ptah", ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": str(tree)}
    started = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "ptah",
            "inference",
            "build",
            "bench",
            "--spec",
            str(spec),
            "--quiet",
        ],
        env=env,
        cwd=spec.parent,
        check=True,
        capture_output=True,
    )  # not here: -m puts the folder first
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    rows = [
        (f"r{number}", f"row {number}: how do I export invoices as csv, page {number % 97}")
        for number in range(args.rows)
    ]
    server = EmbeddingServer(StandIn())
    folder = Path(tempfile.mkdtemp(prefix="ptah-connections-"))
    try:
        old = folder / "before"
        old.mkdir()
        archive = subprocess.run(
            ["git", "archive", BEFORE, "ptah"], cwd=ROOT, check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
        trees = {"before (urllib)": old, "after (httpx)": ROOT}
        print(
            f"python {platform.python_version()}, {os.cpu_count()} CPUs, {args.rows} rows, "
            f"batch_size {args.batch_size}",
            flush=True,
        )
        for concurrency in (1, 4):
            spec = write_project(
                folder / f"c{concurrency}", rows, served(server, args.batch_size, concurrency)
            )
            results: dict[str, list[tuple[int, int, float]]] = {name: [] for name in trees}
            order = list(trees) * args.repeats
            for _index, name in enumerate(order if concurrency == 1 else order[::-1]):
                server.reset()
                seconds = build(spec, trees[name])
                results[name].append((len(server.requests), server.connections, seconds))
            for name, runs in results.items():
                requests = statistics.mean(run[0] for run in runs)
                connections = statistics.mean(run[1] for run in runs)
                seconds = statistics.mean(run[2] for run in runs)
                print(
                    f"max_concurrency {concurrency}, {name}: {requests:.0f} requests over {connections:.0f} "
                    f"connections ({requests / connections:.1f} requests per connection), {seconds:.2f} s a build",
                    flush=True,
                )
    finally:
        server.close()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
