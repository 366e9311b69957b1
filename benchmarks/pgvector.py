"""Benchmark: the pgvector store against the SQLite store, and HNSW index search against exact
search.

    python benchmarks/pgvector.py [--build-rows N] [--sizes 100000,1000000] [--queries Q] [--k K]
                                  [--index-budget SECONDS] [--output results.json]

Starts its own PostgreSQL 16 + pgvector with ``pgserver`` in a temporary
folder (removed at the end), with ``maintenance_work_mem = 4GB`` (so an HNSW
graph of 1,000,000 x 384 fits in memory while it builds) and
``max_parallel_maintenance_workers`` = CPUs - 1.

1. build throughput -- ``ptah.services.build`` end to end (source read, text
   digests, embedding, store writes, one commit per 1,024-row batch) of N
   synthetic documents with the deterministic embedder at dimension 384, so
   the embedder is cheap and the store is what differs. Each store built
   twice from empty, in the order S P P S; the median of each. Also the
   store alone: ``write_vectors`` of the same precomputed vectors in
   1,024-row batches, and ``snapshot().matrix()`` reading them back.
2. search -- for each size, synthetic 384-d unit vectors from a mixture of
   1,000 Gaussian clusters (a structured set, as real embeddings are; pure
   noise is a needlessly hard case for any ANN index), loaded with
   ``write_vectors`` (binary COPY) and indexed with HNSW (m 16,
   ef_construction 64, cosine). Q held-out queries from the same mixture:

   * exact -- ptah's exact path (one matrix product, ``top_k_many``) over
     the matrix read from the store: the batch's seconds per query, and one
     query alone;
   * pgvector exact -- ``ORDER BY embedding <=> q LIMIT k`` with index scans
     off (a sequential scan), for a few queries;
   * index -- ``PgvectorSnapshot.nearest`` at ef_search 40, 100, 200, one
     query per round trip: latency p50/p95 and recall@k against ptah's
     exact top k.

   An index build that has not finished within --index-budget seconds is
   cancelled and recorded as such (with the load figures).

Everything is written to --output as JSON and summarised on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
import warnings
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

DIMENSION = 384
BATCH_ROWS = 1024
EF_SEARCHES = (40, 100, 200)
IDENTITY = "sha256:" + "b3" * 32


def log(message: str) -> None:
    print(f"[{datetime.now().strftime('%H:%M:%S')}] {message}", flush=True)


def start_server(folder: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver

        server = pgserver.get_server(folder, cleanup_mode="delete")
    import psycopg

    url = f"postgresql://postgres@/postgres?host={folder}"
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute("ALTER SYSTEM SET maintenance_work_mem = '4GB'")
        connection.execute(
            f"ALTER SYSTEM SET max_parallel_maintenance_workers = {max(0, (os.cpu_count() or 1) - 1)}"
        )
        connection.execute("SELECT pg_reload_conf()")
    return server, url


def fresh_database(url: str, name: str) -> str:
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(f"DROP DATABASE IF EXISTS {name}")
        connection.execute(f"CREATE DATABASE {name}")
    return url.replace("@/postgres?", f"@/{name}?")


# --- 1. build throughput --------------------------------------------------------------------


def write_source(folder: Path, rows: int) -> None:
    words = [f"w{i}" for i in range(5000)]
    chooser = random.Random(11)
    folder.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(folder / "source.db") as connection:
        connection.execute("CREATE TABLE docs (id INTEGER PRIMARY KEY, title TEXT, body TEXT)")
        connection.executemany(
            "INSERT INTO docs VALUES (?, ?, ?)",
            (
                (
                    i,
                    " ".join(chooser.choices(words, k=6)),
                    " ".join(chooser.choices(words, k=chooser.randint(40, 120))),
                )
                for i in range(rows)
            ),
        )


def write_spec(folder: Path, store: str | None) -> Path:
    spec = folder / "ptah.yaml"
    spec.write_text(
        "version: 1\nsource:\n  database: sqlite:///source.db\n  table: docs\n  key_fields: [id]\n"
        '  text: "{title}\\n\\n{body}"\n'
        + (f"store: {store}\n" if store else "")
        + f"active: bench\ngenerations:\n  bench:\n    model: ptah/deterministic\n    dimension: {DIMENSION}\n"
        + "    batch_size: 64\n"
    )
    return spec


def bench_build(folder: Path, url: str, rows: int) -> dict:
    from ptah.adapters.stores.pgvector import PgvectorStore
    from ptah.adapters.stores.sqlite import GenerationRecord, SqliteStore
    from ptah.services.build import build
    from ptah.services.project import open_project

    write_source(folder, rows)
    seconds: dict[str, list[float]] = {"sqlite": [], "pgvector": []}
    for attempt, kind in enumerate(("sqlite", "pgvector", "pgvector", "sqlite")):
        shutil.rmtree(folder / ".ptah", ignore_errors=True)
        store = fresh_database(url, f"build_{attempt}") if kind == "pgvector" else None
        spec = write_spec(folder, store)
        with open_project(str(spec)) as project:
            started = time.perf_counter()
            summary = build(project, batch_rows=BATCH_ROWS)
            seconds[kind].append(time.perf_counter() - started)
        assert summary.embedded == rows, summary
        log(f"build into {kind}: {seconds[kind][-1]:.2f}s")
    result = {
        kind: {
            "seconds": values,
            "median": statistics.median(values),
            "rows_per_second": rows / statistics.median(values),
        }
        for kind, values in seconds.items()
    }
    result["pgvector_throughput_over_sqlite"] = (
        result["sqlite"]["median"] / result["pgvector"]["median"]
    )

    vectors = np.random.default_rng(5).standard_normal((rows, DIMENSION)).astype(np.float32)
    keyed = [(f"{len(str(i))}:{i}", str(i), "0" * 64) for i in range(rows)]
    record = GenerationRecord(
        identity=IDENTITY, name="bench", model="synthetic", dimension=DIMENSION
    )
    stores = {
        "sqlite": lambda: SqliteStore(folder / "alone.db"),
        "pgvector": lambda: PgvectorStore(fresh_database(url, "alone")),
    }
    alone = {}
    for kind, opener in stores.items():
        with opener() as store:
            store.register_generation(record)
            started = time.perf_counter()
            for start in range(0, rows, BATCH_ROWS):
                store.write_vectors(
                    IDENTITY, keyed[start : start + BATCH_ROWS], vectors[start : start + BATCH_ROWS]
                )
            write = time.perf_counter() - started
            started = time.perf_counter()
            with store.snapshot() as snapshot:
                matrix = snapshot.matrix(IDENTITY)
            read = time.perf_counter() - started
        assert matrix.vectors.shape == (rows, DIMENSION)
        alone[kind] = {
            "write_seconds": write,
            "write_rows_per_second": rows / write,
            "matrix_read_seconds": read,
        }
        log(f"store alone {kind}: write {write:.2f}s, matrix read {read:.2f}s")
    alone["pgvector_write_throughput_over_sqlite"] = (
        alone["sqlite"]["write_seconds"] / alone["pgvector"]["write_seconds"]
    )
    alone["pgvector_read_speed_over_sqlite"] = (
        alone["sqlite"]["matrix_read_seconds"] / alone["pgvector"]["matrix_read_seconds"]
    )
    return {
        "rows": rows,
        "dimension": DIMENSION,
        "batch_rows": BATCH_ROWS,
        "build": result,
        "store_alone": alone,
    }


# --- 2. search ------------------------------------------------------------------------------


def clustered(count: int, seed: int, centers: np.ndarray) -> np.ndarray:
    rng = np.random.default_rng(seed)
    out = np.empty((count, DIMENSION), dtype=np.float32)
    for start in range(0, count, 100_000):
        n = min(100_000, count - start)
        chunk = (
            centers[rng.integers(0, len(centers), n)]
            + rng.standard_normal((n, DIMENSION), dtype=np.float32) * 0.35
        )
        out[start : start + n] = chunk / np.linalg.norm(chunk, axis=1, keepdims=True)
    return out


def bench_search(url: str, size: int, queries_count: int, k: int, budget: float) -> dict:
    import psycopg

    from ptah.adapters.stores.pgvector import PgvectorStore
    from ptah.adapters.stores.sqlite import GenerationRecord
    from ptah.core.ranking import top_k_many

    centers = np.random.default_rng(1).standard_normal((1000, DIMENSION)).astype(np.float32)
    vectors = clustered(size, 2, centers)
    queries = clustered(queries_count, 3, centers)
    keys = [f"{i:07d}" for i in range(size)]
    result: dict = {"size": size, "queries": queries_count, "k": k}
    database = fresh_database(url, f"search_{size}")
    with PgvectorStore(database) as store:
        store.register_generation(
            GenerationRecord(
                identity=IDENTITY, name="bench", model="synthetic", dimension=DIMENSION
            )
        )
        started = time.perf_counter()
        for start in range(0, size, 10_000):
            rows = [(f"7:{key}", key, "0" * 64) for key in keys[start : start + 10_000]]
            store.write_vectors(IDENTITY, rows, vectors[start : start + 10_000])
        load = time.perf_counter() - started
        result["load_seconds"], result["load_rows_per_second"] = load, size / load
        log(f"{size}: loaded in {load:.1f}s")
        del vectors

        started = time.perf_counter()
        with store.snapshot() as snapshot:
            matrix = snapshot.matrix(IDENTITY)
        result["matrix_read_seconds"] = time.perf_counter() - started
        batch_started = time.perf_counter()
        exact = top_k_many(queries @ matrix.vectors.T, matrix.keys, [k] * queries_count)
        result["exact_ptah_batch_seconds_per_query"] = (
            time.perf_counter() - batch_started
        ) / queries_count
        singles = []
        for query in queries[:20]:
            started = time.perf_counter()
            top_k_many(query[None, :] @ matrix.vectors.T, matrix.keys, [k])
            singles.append(time.perf_counter() - started)
        result["exact_ptah_single_query_seconds_p50"] = statistics.median(singles)
        del matrix
        log(
            f"{size}: exact (ptah) {result['exact_ptah_batch_seconds_per_query'] * 1000:.2f} ms/query batched, "
            f"{result['exact_ptah_single_query_seconds_p50'] * 1000:.1f} ms alone"
        )

        table = store._table(IDENTITY)[0]
        with psycopg.connect(database) as connection:
            connection.execute("SET enable_indexscan = off")
            scan = []
            for query in queries[:5]:
                literal = "[" + ",".join(repr(float(v)) for v in query) + "]"
                started = time.perf_counter()
                connection.execute(
                    f"SELECT key FROM {table} ORDER BY embedding <=> %s::vector LIMIT %s",
                    (literal, k),
                ).fetchall()
                scan.append(time.perf_counter() - started)
        result["exact_pgvector_scan_seconds_p50"] = statistics.median(scan)
        log(
            f"{size}: exact (pgvector sequential scan) {result['exact_pgvector_scan_seconds_p50'] * 1000:.0f} ms/query"
        )

        try:
            with psycopg.connect(database, autocommit=True) as connection:
                connection.execute(f"SET statement_timeout = {int(budget * 1000)}")
                started = time.perf_counter()
                connection.execute(
                    f"CREATE INDEX {table}_hnsw ON {table} USING hnsw (embedding vector_cosine_ops) "
                    "WITH (m = 16, ef_construction = 64)"
                )
                result["index_build_seconds"] = time.perf_counter() - started
                result["index_bytes"] = connection.execute(
                    f"SELECT pg_relation_size('{table}_hnsw')"
                ).fetchone()[0]
        except psycopg.errors.QueryCanceled:
            result["index_build_seconds"] = None
            result["index_note"] = f"HNSW build cancelled after the {budget:.0f}s budget"
            log(f"{size}: {result['index_note']}")
            return result
        log(f"{size}: HNSW built in {result['index_build_seconds']:.1f}s")

        exact_keys = [{key for key, _ in ranked} for ranked in exact]
        result["index"] = {}
        for ef_search in EF_SEARCHES:
            with store.snapshot() as snapshot:
                snapshot.nearest(IDENTITY, queries[:3], [k] * 3, ef_search)  # warm the index pages
                latencies, recalls = [], []
                for query, wanted in zip(queries, exact_keys):
                    started = time.perf_counter()
                    (found,) = snapshot.nearest(IDENTITY, query[None, :], [k], ef_search)
                    latencies.append(time.perf_counter() - started)
                    recalls.append(len({key for key, _ in found} & wanted) / len(wanted))
            latencies.sort()
            result["index"][ef_search] = {
                "latency_p50_seconds": latencies[len(latencies) // 2],
                "latency_p95_seconds": latencies[int(len(latencies) * 0.95) - 1],
                "recall_at_k": float(np.mean(recalls)),
                "recall_min": float(np.min(recalls)),
                "share_of_queries_below_half": float(np.mean(np.array(recalls) < 0.5)),
            }
            log(
                f"{size}: ef_search {ef_search}: recall@{k} {np.mean(recalls):.4f}, "
                f"p50 {latencies[len(latencies) // 2] * 1000:.2f} ms"
            )
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build-rows", type=int, default=20_000)
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("-k", "--k", type=int, default=10)
    parser.add_argument("--index-budget", type=float, default=1800.0)
    parser.add_argument("--output", default="pgvector-results.json")
    arguments = parser.parse_args(argv)

    folder = Path(tempfile.mkdtemp(prefix="ptah-bench-pg-"))
    server, url = start_server(folder / "pgdata")
    results: dict = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            "cpu": platform.processor() or platform.machine(),
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "load_average_at_start": os.getloadavg(),
        },
    }
    try:
        import psycopg

        with psycopg.connect(url) as connection:
            results["postgresql"] = connection.execute("SHOW server_version").fetchone()[0]
            results["pgvector"] = connection.execute(
                "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'"
            ).fetchone()[0]
        results["build"] = bench_build(folder / "project", url, arguments.build_rows)
        Path(arguments.output).write_text(json.dumps(results, indent=2))
        results["search"] = []
        for size in (int(s) for s in arguments.sizes.split(",") if s):
            results["search"].append(
                bench_search(url, size, arguments.queries, arguments.k, arguments.index_budget)
            )
            Path(arguments.output).write_text(json.dumps(results, indent=2))
    finally:
        results["machine"]["load_average_at_end"] = os.getloadavg()
        Path(arguments.output).write_text(json.dumps(results, indent=2))
        server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)
    log(f"results in {arguments.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
