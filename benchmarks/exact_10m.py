"""Benchmark: the streamed exact evaluation of a 384-dimension pgvector generation, against a bare
read of it.

    python benchmarks/exact_10m.py setup --keep FOLDER [--rows N] [--cases 1000] python
    benchmarks/exact_10m.py measure --keep FOLDER [--steps read evaluate read] [--output FILE]

``setup`` reuses (or makes) the synthetic source table of
``ray_build.py evaluate --keep FOLDER`` and adds a store ``store384`` with one
generation of the deterministic embedder at 384 dimensions, built by the local
engine, and a corpus of ``--cases`` cases whose query is the required row's
own text (its vector is the row's, so the key ranks first and no second pass
counts the rows above a missed key).

``measure`` runs, back to back in one invocation, each as a fresh process
under ``/usr/bin/time`` (wall time, peak RSS) with the machine's load
recorded beside it: a bare read of every stored vector (the store's
``blocks()`` with nothing done to them), ``ptah verify``, and ``ptah
inference evaluate --search exact``; then compares the search step (the
report's ``exact_search`` timing) with bare read + verification, and gives
the FLOP rate of the scoring (2 x queries x rows x dimension / seconds).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import ray_build  # noqa: E402  (the benchmark beside this one: its server and synthetic table)

STORE = "store384"


def setup(args) -> dict:
    import psycopg

    import ptah

    keep = Path(args.keep).resolve()
    keep.mkdir(parents=True, exist_ok=True)
    folder = keep / "pg"
    pg = ray_build.server(folder, cleanup=None)
    del pg  # left running (cleanup None): the measurements reuse it
    if not (keep / "ready.json").is_file():
        ray_build.create_source(folder, args.rows)
    with psycopg.connect(ray_build.url(folder, "source")) as connection:
        rows = connection.execute("SELECT count(*) FROM docs").fetchone()[0]
        chosen = sorted(random.Random(7).sample(range(1, rows + 1), args.cases))
        texts = dict(
            connection.execute(
                "SELECT id, title || E'\\n\\n' || body FROM docs WHERE id = ANY(%s)", (chosen,)
            ).fetchall()
        )
    path = ray_build.spec(folder, STORE, ray_build.url(folder, "source"), "ptah/deterministic", 384)
    lines = ["version: 1", "default_k: 10", "cases:"]
    for number in chosen:
        lines += [
            f"  - id: c{number}",
            f"    query: {json.dumps(texts[number])}",
            f'    required: ["{number}"]',
        ]
    (Path(path).parent / "corpus.yaml").write_text("\n".join(lines) + "\n")
    print("corpus written; building", time.strftime("%H:%M:%S"), flush=True)
    with ptah.open_project(path) as project:
        started = time.perf_counter()
        summary = project.build()
        seconds = round(time.perf_counter() - started, 1)
    result = {
        "rows": rows,
        "dimension": 384,
        "cases": args.cases,
        "build_s": seconds,
        "embedded": summary.embedded,
        "spec": path,
    }
    (keep / "ready384.json").write_text(json.dumps(result) + "\n")
    return result


def measure(args) -> dict:
    """Bare read, then the evaluation (verification and search), then the bare read again: fresh
    processes."""
    keep = Path(args.keep).resolve()
    ray_build.server(keep / "pg", cleanup=None)  # the kept server, started if it is not running
    result = json.loads((keep / "ready384.json").read_text())
    for step in args.steps:
        load = _load()
        command = [
            "/usr/bin/time",
            "-f",
            "%e %M",
            sys.executable,
            __file__,
            "_" + step,
            "--keep",
            str(keep),
        ]
        done = subprocess.run(
            command, capture_output=True, text=True, env=os.environ | {"PYTHONPATH": str(ROOT)}
        )
        if done.returncode:
            raise SystemExit(f"{step} failed: {done.stderr[-2000:]}")
        wall, peak_kib = done.stderr.strip().splitlines()[-1].split()
        measured = json.loads(done.stdout) | {
            "process_s": float(wall),
            "peak_rss_mib": round(int(peak_kib) / 1024),
            "load_before": load,
            "load_after": _load(),
        }
        result.setdefault(step, []).append(measured)
        print(step, measured, flush=True)
    read = statistics.mean(run["seconds"] for run in result["read"])
    evaluation = result["evaluate"][0]
    search, verify, scoring = (
        evaluation["timings"]["search"],
        evaluation["timings"]["verify"],
        evaluation["scoring_s"],
    )
    flop = 2 * result["cases"] * result["rows"] * result["dimension"]
    result["summary"] = {
        "bare_read_s": round(read, 1),
        "verify_s": round(verify, 1),
        "search_s": round(search, 1),
        "search_over_read_plus_verify": round(search / (read + verify), 3),
        "scoring_s": round(scoring, 1),
        "gflop_per_s": round(flop / scoring / 1e9, 1),
        "peak_rss_mib": max(
            run["peak_rss_mib"] for runs in (result["read"], result["evaluate"]) for run in runs
        ),
    }
    return result


def _load() -> str:
    return (
        subprocess.run(["uptime"], capture_output=True, text=True)
        .stdout.strip()
        .split("load average: ")[-1]
    )


def _spec(keep: Path) -> str:
    return json.loads((keep / "ready384.json").read_text())["spec"]


def bare_read(args) -> dict:
    """Every stored vector read as the streamed search reads them (the same blocks), nothing done
    with them."""
    import ptah
    from ptah.services.channels.exact import snapshot_blocks

    with ptah.open_project(_spec(Path(args.keep))) as project:
        inner = project._opened
        identity = inner.generation(None).identity.identity
        with inner.store().snapshot() as snapshot:
            started = time.perf_counter()
            rows = sum(
                len(keys) for keys, _ in snapshot_blocks(snapshot, identity, normalize=False)()
            )
            seconds = time.perf_counter() - started
    return {"seconds": round(seconds, 2), "rows": rows}


def evaluate(args) -> dict:
    """``evaluate --search exact`` through the API, with the seconds spent inside the scoring plan
    summed."""
    import ptah
    from ptah.core.exact import ExactRanking

    scoring = [0.0]
    for name in ("add", "count"):

        def timed(self, keys, rows, _original=getattr(ExactRanking, name)):
            started = time.perf_counter()
            try:
                return _original(self, keys, rows)
            finally:
                scoring[0] += time.perf_counter() - started

        setattr(ExactRanking, name, timed)
    path = _spec(Path(args.keep))
    with ptah.open_project(path) as project:
        report = project.evaluate(str(Path(path).parent / "corpus.yaml"), search="exact")
    document = json.loads(report.to_json())
    cases = [case for run in document["runs"] for case in run["cases"]]
    rankings = json.dumps(
        [[(entry["key"], entry["score"]) for entry in case["results"]] for case in cases]
    )
    return {
        "timings": {step: round(seconds, 2) for step, seconds in document["timings"].items()},
        "scoring_s": round(scoring[0], 2),
        "summary": ray_build._summary(document),
        "rankings_sha256": hashlib.sha256(rankings.encode()).hexdigest(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=("setup", "measure", "_read", "_evaluate"))
    parser.add_argument("--keep", metavar="FOLDER", required=True)
    parser.add_argument(
        "--rows", type=int, default=10_000_000, help="setup, with no source table in FOLDER yet"
    )
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument(
        "--steps",
        nargs="+",
        default=["read", "evaluate", "read"],
        choices=("read", "evaluate"),
        help="measure: the processes, in order (the bare reads' mean is the baseline)",
    )
    parser.add_argument("--output")
    args = parser.parse_args()
    result = {"setup": setup, "measure": measure, "_read": bare_read, "_evaluate": evaluate}[
        args.mode
    ](args)
    if args.mode.startswith(
        "_"
    ):  # a step measure runs as a process of its own: its answer is its only output
        print(json.dumps(result))
        return
    print(json.dumps(result, indent=2))
    if args.output:
        Path(args.output).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
