"""Benchmark: the ray build engine against the local one, and evaluate over a large pgvector
generation.

    python benchmarks/ray_build.py throughput --rows 20000 [--model ptah/deterministic] [--actors 2]
    python benchmarks/ray_build.py evaluate --rows 1000000 [--dimension 64] [--cases 100] [--keep FOLDER]
                                   [--search exact both index] [--before REV]

Starts its own PostgreSQL 16 + pgvector with ``pgserver`` in a temporary
folder (removed at the end) holding the source table and the stores.

* ``throughput``: the same generation of N synthetic documents built from
  empty by the local engine (store A) and by the ray engine on a local Ray
  instance (store B, ``--actors`` actors of 1 CPU, 4 partitions per actor),
  in the order L R R L; the medians. Ray's start is timed apart (``ray.init``
  before the build: the engine joins it), so the figure is the engine's own
  overhead: snapshot export and cut, actors' start and model load, partitions.
* ``evaluate``: N synthetic documents built by the local engine with the
  deterministic embedder at ``--dimension``, an HNSW index (m 16,
  ef_construction 64; only when an index search is asked), then ``ptah
  inference evaluate`` of a corpus of ``--cases`` questions (each a row's own
  words; that row required) as a whole process for each ``--search`` mode:
  wall time, peak RSS (``/usr/bin/time``), the report's step timings and the
  ANN recall it gives. ``--before REV`` runs each evaluation also with commit
  REV's code (a temporary git work tree on PYTHONPATH), interleaved now,
  before, before, now, and counts the cases whose ranked keys agree.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

WORDS = (
    "invoice billing export account password reset team invite plan upgrade token webhook report tax "
    "payment refund currency customer vendor receipt ledger archive audit policy"
).split()
MAINTENANCE_WORK_MEM = (
    "8GB"  # the HNSW graph of 10M x 64 (~3-5 GB) must fit it, or pgvector's build slows tenfold
)


def server(folder: Path, cleanup: str | None = "delete"):
    import pgserver

    pg = pgserver.get_server(folder, cleanup_mode=cleanup)
    pg.psql(f"ALTER SYSTEM SET maintenance_work_mem = '{MAINTENANCE_WORK_MEM}'")
    pg.psql("SELECT pg_reload_conf()")
    return pg


def url(folder: Path, database: str) -> str:
    return f"postgresql://postgres@/{database}?host={quote(str(folder))}"


def create_source(folder: Path, rows: int) -> str:
    """Table ``docs(id, title, body)`` of ``rows`` synthetic documents, made by the server
    (generate_series)."""
    import psycopg

    with psycopg.connect(url(folder, "postgres"), autocommit=True) as admin:
        admin.execute("CREATE DATABASE source")
    words = "ARRAY[" + ",".join(f"'{w}'" for w in WORDS) + "]"
    with psycopg.connect(url(folder, "source"), autocommit=True) as connection:
        connection.execute(
            "CREATE TABLE docs AS SELECT i AS id, 'doc ' || i || ' ' || ("
            + words
            + ")[1 + i %% 23] AS title, "
            "(SELECT string_agg(("
            + words
            + ")[1 + (i * j * 7919) %% 23] || ' w' || ((i * j) %% 9973), ' ') "
            "FROM generate_series(1, 12) AS j) AS body FROM generate_series(1::bigint, %s) AS i",
            (rows,),
        )
        connection.execute("ALTER TABLE docs ADD PRIMARY KEY (id)")
    return url(folder, "source")


def spec(folder: Path, name: str, source: str, model: str, dimension: int | None = None) -> str:
    import psycopg

    with psycopg.connect(url(folder, "postgres"), autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    place = folder.parent / f"spec-{name}"
    place.mkdir()
    extra = f"\n    dimension: {dimension}" if dimension else ""
    (place / "ptah.yaml").write_text(
        f"version: 1\nsource:\n  database: {source}\n  table: docs\n  key_fields: [id]\n"
        f'  text: "{{title}}\\n\\n{{body}}"\nstore: {url(folder, name)}\nactive: g\ngenerations:\n'
        f"  g:\n    model: {model}{extra}\n    batch_size: 64\n"
    )
    return str(place / "ptah.yaml")


def drop_vectors(spec_path: str) -> None:
    import psycopg

    import ptah

    with ptah.open_project(spec_path) as project:
        store = project.spec.store
    with psycopg.connect(store, autocommit=True) as connection:
        for (table,) in connection.execute("SELECT vectors_table FROM ptah_generations").fetchall():
            connection.execute(f"TRUNCATE {table}")


def throughput(args) -> dict:
    import ray

    import ptah

    folder = Path(tempfile.mkdtemp(prefix="ptah-raybench-")) / "pg"
    pg = server(folder)
    try:
        source = create_source(folder, args.rows)
        dimension = 384 if args.model == "ptah/deterministic" else None
        specs = {
            "local": spec(folder, "local_store", source, args.model, dimension),
            "ray": spec(folder, "ray_store", source, args.model, dimension),
        }
        started = time.perf_counter()
        ray.init(
            num_cpus=args.actors,
            object_store_memory=200 * 2**20,
            include_dashboard=False,
            log_to_driver=False,
            logging_level=logging.ERROR,
        )
        ray_start = time.perf_counter() - started
        seconds: dict[str, list[float]] = {"local": [], "ray": []}
        for engine in ("local", "ray", "ray", "local"):
            if seconds[engine]:  # the second build of this engine starts from empty too
                drop_vectors(specs[engine])
            options = {"engine": "ray", "actors": args.actors} if engine == "ray" else {}
            with ptah.open_project(specs[engine]) as project:
                started = time.perf_counter()
                summary = project.build(**options)
                seconds[engine].append(time.perf_counter() - started)
            assert summary.embedded == args.rows, summary
            print(engine, f"{seconds[engine][-1]:.2f} s", flush=True)
        ray.shutdown()
        local, distributed = statistics.median(seconds["local"]), statistics.median(seconds["ray"])
        return {
            "rows": args.rows,
            "model": args.model,
            "actors": args.actors,
            "ray_start_s": round(ray_start, 2),
            "local_s": [round(s, 2) for s in seconds["local"]],
            "ray_s": [round(s, 2) for s in seconds["ray"]],
            "local_rows_per_s": round(args.rows / local),
            "ray_rows_per_s": round(args.rows / distributed),
            "ray_over_local_time": round(distributed / local, 3),
        }
    finally:
        pg.cleanup()


def evaluate(args) -> dict:
    """Set up (or, with ``--keep`` on a folder set up before, reuse) the generation and its index;
    evaluate it."""
    keep = Path(args.keep).resolve() if args.keep else None
    folder = (keep or Path(tempfile.mkdtemp(prefix="ptah-evalbench-"))) / "pg"
    ready = folder.parent / "ready.json"
    reuse = ready.is_file()
    pg = server(folder, cleanup="delete" if keep is None else None)
    try:
        if reuse:
            result = json.loads(ready.read_text())
            path = result.pop("spec")
        else:
            result, path = _set_up(folder, args)
            if keep is not None:
                ready.write_text(json.dumps(result | {"spec": path}) + "\n")
        corpus = Path(path).parent / "corpus.yaml"
        trees = {"": ROOT}
        # the same evaluations by an earlier commit's code, interleaved: now, before, before, now
        if args.before:
            trees[f" before {args.before}"] = _checkout(args.before)
        order = list(trees) + list(reversed(trees)) if args.before else list(trees)
        for search in args.search:
            for label in order:
                command = [
                    "/usr/bin/time",
                    "-f",
                    "%e %M",
                    sys.executable,
                    "-m",
                    "ptah",
                    "inference",
                    "evaluate",
                    "--spec",
                    path,
                    "--corpus",
                    str(corpus),
                    "--search",
                    search,
                    "--json",
                ]
                done = subprocess.run(
                    command,
                    capture_output=True,
                    text=True,
                    cwd=trees[label],
                    env=os.environ | {"PYTHONPATH": str(trees[label])},
                )
                wall, peak_kib = done.stderr.strip().splitlines()[-1].split()
                report = json.loads(done.stdout)
                measured = {
                    "wall_s": float(wall),
                    "peak_rss_mib": round(int(peak_kib) / 1024),
                    "exit": done.returncode,
                    "timings": report.get("timings"),
                    "summary": _summary(report),
                    "cases": [case for run in report["runs"] for case in run["cases"]],
                }
                result.setdefault(search + label, []).append(measured)
                print(
                    search + label,
                    {key: measured[key] for key in ("wall_s", "peak_rss_mib", "exit", "timings")},
                    flush=True,
                )
        # the same rankings and miss ranks (scores differ in their last bits: float32 vs float64)
        for label in trees:
            if label and all(search + label in result for search in args.search):
                for search in args.search:
                    now, before = result[search][0]["cases"], result[search + label][0]["cases"]
                    result[f"{search}: same ranked keys{label}"] = sum(
                        [r["key"] for r in a["results"]] == [r["key"] for r in b["results"]]
                        for a, b in zip(now, before)
                    )
        for runs in result.values():
            if isinstance(runs, list):
                for measured in runs:
                    measured.pop("cases")
        for label, tree in trees.items():
            if label:
                subprocess.run(
                    ["git", "worktree", "remove", "--force", str(tree)],
                    cwd=ROOT,
                    capture_output=True,
                )
        return result
    finally:
        if keep is None:
            pg.cleanup()


def _checkout(revision: str) -> Path:
    """A temporary work tree of ``revision`` (its ``ptah`` package is what PYTHONPATH then
    imports)."""
    folder = Path(tempfile.mkdtemp(prefix="ptah-before-")) / "tree"
    subprocess.run(
        ["git", "worktree", "add", "--detach", str(folder), revision],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    return folder


def _set_up(folder: Path, args) -> tuple[dict, str]:
    """The source table, the generation built by the local engine, its HNSW index, and the
    corpus."""
    import ptah

    source = create_source(folder, args.rows)
    path = spec(folder, "store", source, "ptah/deterministic", args.dimension)
    result: dict = {"rows": args.rows, "dimension": args.dimension, "cases": args.cases}
    with ptah.open_project(path) as project:
        started = time.perf_counter()
        project.build()
        result["build_s"] = round(time.perf_counter() - started, 1)
        print("built", result["build_s"], flush=True)
        if set(args.search) - {
            "exact"
        }:  # an exact evaluation needs no index (at 10M x 64 it took 70 minutes)
            started = time.perf_counter()
            project.index(m=16, ef_construction=64)
            result["hnsw_build_s"] = round(time.perf_counter() - started, 1)
            print("indexed", result["hnsw_build_s"], flush=True)
    corpus = Path(path).parent / "corpus.yaml"
    chosen = random.Random(7).sample(range(1, args.rows + 1), args.cases)
    lines = ["version: 1", "default_k: 10", "cases:"]
    for number in chosen:
        lines += [
            f"  - id: c{number}",
            f'    query: "doc {number} {WORDS[number % 23]}"',
            f'    required: ["{number}"]',
        ]
    corpus.write_text("\n".join(lines) + "\n")
    return result, path


def _summary(report: dict) -> dict:
    """The first generation's ``aggregates`` (means, and ``ann`` under --search both), found
    wherever they sit."""
    stack = [report]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("aggregates"), dict):
                return node["aggregates"]
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=("throughput", "evaluate"))
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--model", default="ptah/deterministic")
    parser.add_argument("--actors", type=int, default=2)
    parser.add_argument("--dimension", type=int, default=64)
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument(
        "--search", nargs="+", default=["exact", "both"], choices=("exact", "both", "index")
    )
    parser.add_argument(
        "--keep",
        metavar="FOLDER",
        help="evaluate: set up in FOLDER once and keep it (the server, "
        "the generation, its index); a later run with the same FOLDER only evaluates",
    )
    parser.add_argument(
        "--before",
        metavar="REV",
        help="evaluate: also run each evaluation with the code of commit "
        "REV (a temporary git work tree), interleaved with this tree's",
    )
    parser.add_argument("--output")
    args = parser.parse_args()
    result = throughput(args) if args.mode == "throughput" else evaluate(args)
    print(json.dumps(result, indent=2))
    if args.output:
        Path(args.output).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
