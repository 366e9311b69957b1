"""Benchmark: build throughput, incremental builds, exact search over 1,000,000 vectors and its
memory.

    python benchmarks/build.py [CORPUS_JSONL] [--vectors N] [--queries Q] [--k K] [--repeats R]

CORPUS_JSONL defaults to /work/shared/datasets/scifact/corpus.jsonl (BEIR
format: one JSON object per line with ``_id``, ``title``, ``text``); each row's
text is ``(title + " " + text).strip()``. The data is read at run time and
never copied into the repository; everything written goes to a temporary
folder that is removed at the end.

Figures (each a ratio measured within one run, so the machine cancels out):

1. full build -- ``ptah``'s build of every row (source read, text digests,
   embedding, store writes, one commit per batch) against a bare
   ``SentenceTransformer.encode`` of the same texts with the same batch size
   and normalisation, timed in the order bare, build, build (into a fresh
   store), bare so that a drift in the machine's speed cancels out.
   Throughput ratio = mean bare seconds / mean build seconds, in wall time
   and in process CPU time. The model is loaded before any clock starts:
   the embedder kind :class:`LoadedOnce` handles it as sentence-transformers
   does, but keeps it for every fresh project.
2. incremental build -- 1% of the rows edited, the build run again; its time
   as a fraction of the mean full build's.
3. exact search -- Q queries (random unit vectors, so no model time: the
   generation's model ``bench/fixed-queries`` is registered to answer with
   them) over N synthetic unit vectors of dimension 384 stored in a real
   store, through ``ptah.services.search.search`` with the matrix already
   loaded, against a
   bare ``Q @ M.T`` plus ``np.argpartition``. Median of R repeats each.
4. memory -- a fresh process loads the matrix from the store and runs one
   search; the increase of its peak resident set (``VmHWM`` after minus
   ``VmRSS`` before, from /proc/self/status) over the matrix bytes. A second
   fresh process measures the same with ``tracemalloc`` (Python and numpy
   allocations only; SQLite's page cache is outside it but bounded at 2 MiB).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

DEFAULT_CORPUS = "/work/shared/datasets/scifact/corpus.jsonl"
MODEL = "sentence-transformers/all-MiniLM-L6-v2"
BATCH_SIZE = 64
DIMENSION = 384
FIXED_QUERIES = "bench/fixed-queries"
FIXED: dict[str, FixedQueries] = {}
"""What model ``bench/fixed-queries`` opens: the search benchmark puts its query vectors here."""


def load_texts(path: str) -> list[tuple[str, str]]:
    rows = []
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                document = json.loads(line)
                rows.append(
                    (
                        str(document["_id"]),
                        (document.get("title", "") + " " + document.get("text", "")).strip(),
                    )
                )
    return rows


def write_project(folder: Path, rows: list[tuple[str, str]], generation: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(folder / "source.db")
    with connection:
        connection.execute("CREATE TABLE docs (id TEXT PRIMARY KEY, body TEXT NOT NULL)")
        connection.executemany("INSERT INTO docs VALUES (?, ?)", rows)
    connection.close()
    spec = folder / "ptah.yaml"
    spec.write_text(
        "version: 1\nsource:\n  database: sqlite:///source.db\n  table: docs\n  key_fields: [id]\n"
        f'  text: "{{body}}"\nactive: bench\ngenerations:\n  bench:\n    {generation}\n'
    )
    return spec


def timed(function, *args, **kwargs) -> tuple[float, object]:
    """Wall seconds of one call, and its result."""
    started = time.perf_counter()
    result = function(*args, **kwargs)
    return time.perf_counter() - started, result


def cpu_timed(function, *args, **kwargs) -> tuple[float, float, object]:
    """Wall seconds and process CPU seconds (all threads) of one call, and its result.

    CPU seconds are the steadier figure on a shared machine: other processes
    stretch wall time but not the CPU time this process spends.
    """
    started, cpu_started = time.perf_counter(), time.process_time()
    result = function(*args, **kwargs)
    return time.perf_counter() - started, time.process_time() - cpu_started, result


def bench_build(rows: list[tuple[str, str]], folder: Path) -> dict:
    """Bare encode, full build, full build again (fresh store), bare encode: the ABBA order cancels
    drift."""
    from sentence_transformers import SentenceTransformer

    from ptah.adapters.embedders.resolve import resolve_model
    from ptah.services.build import build
    from ptah.services.project import open_project

    spec = write_project(
        folder, rows, f"model: {MODEL}\n    batch_size: {BATCH_SIZE}\n    normalize: true"
    )
    texts = [text for _, text in rows]
    bare = SentenceTransformer(str(resolve_model(MODEL, str(folder))), device="cpu")
    with open_project(str(spec)) as project:
        load_seconds, embedder = timed(project.embedder, project.generation().settings)
    for model in (bare, embedder.model):  # first-call overheads outside the clocks
        model.encode(texts[:BATCH_SIZE], batch_size=BATCH_SIZE, normalize_embeddings=True)

    def encode():
        return bare.encode(
            texts, batch_size=BATCH_SIZE, normalize_embeddings=True, convert_to_numpy=True
        )

    def full_build():
        shutil.rmtree(folder / ".ptah", ignore_errors=True)
        with open_project(str(spec)) as fresh:
            return build(fresh)

    bare_runs, build_runs = [], []
    bare_runs.append(cpu_timed(encode))
    build_runs.append(cpu_timed(full_build))
    build_runs.append(cpu_timed(full_build))
    bare_runs.append(cpu_timed(encode))
    reference = bare_runs[0][2]
    with open_project(str(spec)) as project:
        stored = project.matrix(project.generation())
    order = {key: i for i, (key, _) in enumerate(rows)}
    deviation = float(np.abs(stored.vectors - reference[[order[key] for key in stored.keys]]).max())

    edited = rows[::100]
    connection = sqlite3.connect(folder / "source.db")
    with connection:
        connection.executemany(
            "UPDATE docs SET body = body || ' (revised)' WHERE id = ?",
            [(key,) for key, _ in edited],
        )
    connection.close()
    with open_project(str(spec)) as again:
        incremental_seconds, incremental_cpu, incremental = cpu_timed(build, again)
    bare_wall, bare_cpu = (statistics.mean(run[i] for run in bare_runs) for i in (0, 1))
    build_wall, build_cpu = (statistics.mean(run[i] for run in build_runs) for i in (0, 1))
    return {
        "texts": len(texts),
        "embedded_per_build": [run[2].embedded for run in build_runs],
        "model_load_seconds": round(load_seconds, 2),
        "bare_encode_seconds": [round(run[0], 2) for run in bare_runs],
        "full_build_seconds": [round(run[0], 2) for run in build_runs],
        "bare_rows_per_second": round(len(texts) / bare_wall, 1),
        "full_build_rows_per_second": round(len(texts) / build_wall, 1),
        "throughput_ratio": round(bare_wall / build_wall, 3),
        "bare_encode_cpu_seconds": [round(run[1], 2) for run in bare_runs],
        "full_build_cpu_seconds": [round(run[1], 2) for run in build_runs],
        "throughput_ratio_cpu": round(bare_cpu / build_cpu, 3),
        "max_abs_difference_stored_vs_bare": deviation,
        "incremental_rows_changed": len(edited),
        "incremental_embedded": incremental.embedded,
        "incremental_seconds": round(incremental_seconds, 2),
        "incremental_ratio": round(incremental_seconds / build_wall, 4),
        "incremental_cpu_seconds": round(incremental_cpu, 2),
        "incremental_ratio_cpu": round(incremental_cpu / build_cpu, 4),
    }


class FixedQueries:
    """An embedder whose queries are given vectors: search is timed without a model."""

    def __init__(self, vectors: np.ndarray):
        self.vectors = vectors
        self.dimension = vectors.shape[1]

    def embed_queries(self, texts):
        return self.vectors[: len(texts)]

    def embed_documents(self, texts):
        raise RuntimeError(
            "the search benchmark writes its vectors straight into the store; nothing is embedded"
        )


class FixedQueriesKind:
    """The embedder kind of model ``bench/fixed-queries``: it opens what :data:`FIXED` holds for
    it."""

    name = "bench-fixed-queries"

    def claims(self, settings) -> bool:
        return settings.model == FIXED_QUERIES

    def identity_parts(self, settings, root: str, *, cache_dir: Path | None = None) -> dict:
        return {"model": settings.model}

    def open(self, settings, root: str) -> FixedQueries:
        return FIXED[settings.model]

    def versions(self) -> dict[str, str | None]:
        return {}


class LoadedOnce:
    """The embedder kind of :data:`MODEL` in this benchmark: sentence-transformers' identity and
    versions, but the model is loaded once per process, so a build into a fresh project does not
    load it again."""

    name = "bench-loaded-once"

    def __init__(self):
        from ptah.adapters.embedders.sentence_transformers import SentenceTransformersKind

        self.kind = SentenceTransformersKind()
        self.loaded: dict = {}

    def claims(self, settings) -> bool:
        return settings.model == MODEL

    def identity_parts(self, settings, root: str, *, cache_dir: Path | None = None) -> dict:
        return self.kind.identity_parts(settings, root, cache_dir=cache_dir)

    def open(self, settings, root: str):
        if settings not in self.loaded:
            self.loaded[settings] = self.kind.open(settings, root)
        return self.loaded[settings]

    def versions(self) -> dict[str, str | None]:
        return self.kind.versions()


def register_kinds() -> None:
    """Register the benchmark's two embedder kinds, the way a plugin would."""
    from ptah.adapters.embedders import registry

    registry.register(FixedQueriesKind())
    registry.register(LoadedOnce())


def query_vectors(count: int) -> np.ndarray:
    vectors = np.random.default_rng(7).standard_normal((count, DIMENSION), dtype=np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def fill_store(folder: Path, count: int) -> tuple[Path, float]:
    """A project whose generation holds ``count`` random unit vectors (written the way a build
    writes them)."""
    from ptah.adapters.stores.sqlite import GenerationRecord
    from ptah.services.project import open_project

    spec = write_project(folder, [("0", "placeholder")], f"model: {FIXED_QUERIES}")
    rng = np.random.default_rng(11)
    started = time.perf_counter()
    with open_project(str(spec)) as project:
        generation = project.generation()
        identity = generation.identity.identity
        store = project.store(create=True)
        store.register_generation(GenerationRecord(identity, "bench", FIXED_QUERIES, {}, DIMENSION))
        for start in range(0, count, 50_000):
            size = min(50_000, count - start)
            vectors = rng.standard_normal((size, DIMENSION), dtype=np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            keys = [f"r{i:07d}" for i in range(start, start + size)]
            store.write_vectors(
                identity, [(f"{len(key)}:{key}", key, "synthetic") for key in keys], vectors
            )
    return spec, time.perf_counter() - started


def bench_search(spec: Path, queries: int, k: int, repeats: int) -> dict:
    from ptah.services.project import open_project
    from ptah.services.search import search

    texts = [f"query {i}" for i in range(queries)]
    embedder = FIXED[FIXED_QUERIES] = FixedQueries(query_vectors(queries))
    with open_project(str(spec)) as project:
        generation = project.generation()
        load_seconds, matrix = timed(project.matrix, generation)
        search(project, None, texts, k)  # warm
        ptah_times = [timed(search, project, None, texts, k)[0] for _ in range(repeats)]
        vectors = matrix.vectors
        query = embedder.vectors

        def bare():
            scores = query @ vectors.T
            return np.argpartition(scores, -k, axis=1)[:, -k:]

        bare()
        bare_times = [timed(bare)[0] for _ in range(repeats)]
        ours = search(project, None, texts, k)
        scores = query @ vectors.T
        agree = all(
            {key for key, _ in ranked}
            == {matrix.keys[j] for j in np.argpartition(scores[i], -k)[-k:]}
            for i, ranked in enumerate(ours)
        )
    ptah_median, bare_median = statistics.median(ptah_times), statistics.median(bare_times)
    return {
        "vectors": int(vectors.shape[0]),
        "dimension": int(vectors.shape[1]),
        "matrix_bytes": int(vectors.nbytes),
        "queries": queries,
        "k": k,
        "matrix_load_seconds": round(load_seconds, 2),
        "ptah_search_seconds_median": round(ptah_median, 4),
        "bare_matmul_argpartition_seconds_median": round(bare_median, 4),
        "search_ratio": round(ptah_median / bare_median, 3),
        "same_top_k_as_bare": agree,
    }


def _status(field: str) -> int:
    """A ``/proc/self/status`` figure in bytes (``VmRSS``, ``VmHWM``)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(field)


def probe_memory(spec: str, mode: str, queries: int, k: int) -> None:
    """Run in a fresh process: load the matrix from the store, search once, print the peak memory as
    JSON."""
    import tracemalloc

    from ptah.services.project import open_project
    from ptah.services.search import search

    FIXED[FIXED_QUERIES] = FixedQueries(query_vectors(queries))
    texts = [f"query {i}" for i in range(queries)]
    with open_project(spec) as project:
        generation = project.generation()
        project.store()
        rss_before = _status("VmRSS")
        if mode == "tracemalloc":
            tracemalloc.start()
        search(project, None, texts, k)
        matrix_bytes = project.matrix(generation).vectors.nbytes
        if mode == "tracemalloc":
            peak = tracemalloc.get_traced_memory()[1]
        else:
            peak = _status("VmHWM") - rss_before
    print(
        json.dumps(
            {
                "mode": mode,
                "peak_bytes": peak,
                "matrix_bytes": matrix_bytes,
                "ratio": round(peak / matrix_bytes, 3),
            }
        )
    )


def bench_memory(spec: Path, queries: int, k: int) -> dict:
    figures = {}
    for mode in ("rss", "tracemalloc"):
        done = subprocess.run(
            [
                sys.executable,
                __file__,
                "--probe-memory",
                str(spec),
                "--mode",
                mode,
                "--queries",
                str(queries),
                "--k",
                str(k),
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        figures[mode] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def machine() -> dict:
    import torch

    model_name = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    return {
        "date": time.strftime("%Y-%m-%d"),
        "nproc": os.cpu_count(),
        "cpu": model_name,
        "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", nargs="?", default=DEFAULT_CORPUS)
    parser.add_argument("--vectors", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=32)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--probe-memory", metavar="SPEC")
    parser.add_argument("--mode", default="rss")
    parser.add_argument(
        "--parts",
        default="build,search",
        help="comma-separated: build, search (search includes memory)",
    )
    args = parser.parse_args()
    register_kinds()
    if args.probe_memory:
        probe_memory(args.probe_memory, args.mode, args.queries, args.k)
        return
    results = {"machine": machine()}
    with tempfile.TemporaryDirectory(prefix="ptah-bench-") as work:
        parts = set(args.parts.split(","))
        if "build" in parts:
            rows = load_texts(args.corpus)
            print(f"{len(rows)} texts from {args.corpus}", file=sys.stderr, flush=True)
            results["build"] = bench_build(rows, Path(work) / "build")
            print(json.dumps(results["build"]), file=sys.stderr, flush=True)
        if "search" not in parts:
            print(json.dumps(results, indent=2))
            return
        spec, fill_seconds = fill_store(Path(work) / "search", args.vectors)
        results["store_fill_seconds"] = round(fill_seconds, 1)
        results["search"] = bench_search(spec, args.queries, args.k, args.repeats)
        print(json.dumps(results["search"]), file=sys.stderr, flush=True)
        results["memory"] = bench_memory(spec, args.queries, args.k)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
