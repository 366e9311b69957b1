"""Benchmark: ptah's exact search against the bare streamer, the same float32 blocks, whole processes.

    python benchmarks/exact_search.py [--rows 500000] [--queries 1000] [--dimension 384]
                                      [--rounds 2] [--tree LABEL=DIR ...] [--path FILE]
                                      [--modes product bare found missed] [--json FILE]

One invocation writes a seeded matrix of unit float32 vectors to a file
once, then runs, interleaved round after round, fresh processes under
``/usr/bin/time`` (CPU seconds, wall seconds, peak RSS), each reading the
file a block of 65,536 rows at a time (into one buffer, as a store hands
blocks over; the page cache is not the process's memory):

* ``read``: the blocks read, nothing done with them (the memory floor of
  one block);
* ``product``: each block's float32 product with the queries, nothing kept
  (the one-block floor of memory: a block and a product);
* ``bare``: the bare streamer -- each block's float32 product with the
  queries (as many queries at a time as :func:`ptah.core.ranking.query_blocks`
  allows) and each query's running top k by ``argpartition``;
* ``found`` and ``missed``: :class:`ptah.core.exact.ExactRanking` as the
  channel drives it (k 10, one required key a case, the blocks given again
  when :meth:`recount` asks). *found*: each query is a row's own vector and
  asks for that row (ranked first); *missed*: each query is a random unit
  vector asking for a random row (far outside the top 10).

``--tree LABEL=DIR`` runs the modes on another checkout's ``ptah`` (the code
before a change); given several times, the trees take turns, every mode of
one tree and then of the next, round after round. The ratios are each ptah
process over the bare streamer just before it (its tree's, in its round); the
machine's load is recorded before and after each process. ``--path`` reuses a
matrix file written before (by the same seed, rows and dimension).
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
BLOCK = 1 << 16
K = 10


def make_matrix(path: Path, rows: int, dimension: int) -> None:
    """Seeded normal vectors scaled to unit length, written block by block."""
    generator = np.random.default_rng(42)
    with open(path, "wb") as handle:
        for first in range(0, rows, BLOCK):
            block = generator.standard_normal((min(BLOCK, rows - first), dimension))
            block /= np.linalg.norm(block, axis=1, keepdims=True)
            handle.write(block.astype(np.float32).tobytes())


def blocks(path: str, rows: int, dimension: int):
    """``(first row, keys, vectors)`` of each block, read into one reused buffer."""
    buffer = np.empty((BLOCK, dimension), dtype=np.float32)
    with open(path, "rb", buffering=0) as handle:
        for first in range(0, rows, BLOCK):
            size = min(BLOCK, rows - first)
            view = buffer[:size]
            handle.readinto(memoryview(view).cast("B"))
            yield first, [f"r{row:08d}" for row in range(first, first + size)], view


def cases(path: str, rows: int, dimension: int, queries: int, kind: str):
    """The query vectors and each query's required key."""
    generator = np.random.default_rng(7)
    chosen = np.sort(generator.choice(rows, queries, replace=False))
    if kind == "found":
        vectors = np.empty((queries, dimension), dtype=np.float32)
        with open(path, "rb") as handle:
            for i, row in enumerate(chosen.tolist()):
                handle.seek(row * dimension * 4)
                vectors[i] = np.frombuffer(handle.read(dimension * 4), dtype=np.float32)
    else:
        vectors = generator.standard_normal((queries, dimension))
        vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    return vectors, [f"r{row:08d}" for row in chosen.tolist()]


def rows_of(args, keys: list[str]) -> np.ndarray:
    """The vectors of the rows named by ``keys``, read from the file by position."""
    vectors = np.empty((len(keys), args.dimension), dtype=np.float32)
    with open(args.path, "rb") as handle:
        for i, key in enumerate(keys):
            handle.seek(int(key[1:]) * args.dimension * 4)
            vectors[i] = np.frombuffer(handle.read(args.dimension * 4), dtype=np.float32)
    return vectors


def run_read(args) -> dict:
    total = 0.0
    for _, _, vectors in blocks(args.path, args.rows, args.dimension):
        total += float(vectors[0, 0])
    return {}


def run_product(args) -> dict:
    """The float32 product of each block with the queries, nothing kept: the one-block floor of
    memory (a block and one product)."""
    from ptah.core.ranking import query_blocks

    queries, _ = cases(args.path, args.rows, args.dimension, args.queries, "found")
    for _, keys, vectors in blocks(args.path, args.rows, args.dimension):
        for start, stop in query_blocks(len(queries), len(keys)):
            queries[start:stop] @ vectors.T
    return {}


def run_bare(args) -> dict:
    """Each query's running top k: a row is a candidate when its float32 score reaches the k-th
    best so far (the first block's own k-th score before there are k), merged by one sort."""
    from ptah.core.ranking import query_blocks

    queries, _ = cases(args.path, args.rows, args.dimension, args.queries, "found")
    q = len(queries)
    best = np.full((q, K), -np.inf, dtype=np.float32)  # each query's top k, best first
    best_rows = np.full((q, K), -1, dtype=np.int64)
    for first, keys, vectors in blocks(args.path, args.rows, args.dimension):
        n = len(keys)
        for start, stop in query_blocks(q, n):
            scores = queries[start:stop] @ vectors.T
            floor = best[start:stop, K - 1]
            if n >= K and np.isneginf(floor).any():
                floor = np.maximum(floor, np.partition(scores, n - K, axis=1)[:, n - K])
            chosen = np.flatnonzero(scores >= floor[:, None])
            number, column = np.divmod(chosen, n)
            owner = np.concatenate([np.repeat(np.arange(stop - start), K), number])
            score = np.concatenate([best[start:stop].ravel(), scores.ravel()[chosen]])
            row = np.concatenate([best_rows[start:stop].ravel(), column + first])
            order = np.lexsort((-score, owner))
            starts = np.searchsorted(owner[order], np.arange(stop - start))
            keep = order[starts[:, None] + np.arange(K)]
            best[start:stop], best_rows[start:stop] = score[keep], row[keep]
            del scores  # before the next product
    return {"top_scores_sum": round(float(best.sum(dtype=np.float64)), 3)}


def run_ptah(args) -> dict:
    from ptah.core.exact import ExactRanking

    queries, required = cases(args.path, args.rows, args.dimension, args.queries, args.mode)
    options = {}
    if "asked_vectors" in inspect.signature(ExactRanking).parameters:
        # the required rows' vectors read by key before the blocks, as the channel reads them
        options["asked_vectors"] = dict(zip(required, rows_of(args, required)))
    ranking = ExactRanking(
        queries,
        [K] * len(queries),
        expected=[{key} for key in required],
        asked=[[key] for key in required],
        **options,
    )
    for _, keys, vectors in blocks(args.path, args.rows, args.dimension):
        ranking.add(keys, vectors)
    again = ranking.recount()
    for number, (_, keys, vectors) in enumerate(blocks(args.path, args.rows, args.dimension)):
        if number == again:
            break
        ranking.count(keys, vectors)
    rankings = ranking.rankings()
    ranks = [result.ranks[key] for result, key in zip(rankings, required)]
    first = sum(rank == 1 for rank in ranks)
    digest = json.dumps(
        [[result.ranked, result.ranks, str(result.ties)] for result in rankings]
    ).encode()
    import hashlib

    return {
        "recounted_blocks": again,
        "ranked_first": first,
        "median_rank": statistics.median(ranks),
        "sha256": hashlib.sha256(digest).hexdigest()[:16],
    }


def _load() -> str:
    return Path("/proc/loadavg").read_text().split(" ", 3)[:3].__str__()


def process(args, mode: str, tree: Path) -> dict:
    load = _load()
    command = [
        "/usr/bin/time",
        "-f",
        "%e %U %S %M",
        sys.executable,
        __file__,
        "_" + mode,
        "--path",
        args.path,
        "--rows",
        str(args.rows),
        "--queries",
        str(args.queries),
        "--dimension",
        str(args.dimension),
    ]
    done = subprocess.run(
        command, capture_output=True, text=True, env=os.environ | {"PYTHONPATH": str(tree)}
    )
    if done.returncode:
        raise SystemExit(f"{mode} failed: {done.stderr[-2000:]}")
    wall, user, system, peak = done.stderr.strip().splitlines()[-1].split()
    measured = json.loads(done.stdout.strip().splitlines()[-1]) | {
        "mode": mode,
        "wall_s": float(wall),
        "cpu_s": round(float(user) + float(system), 2),
        "peak_rss_mib": round(int(peak) / 1024),
        "load_before": load,
        "load_after": _load(),
    }
    print(json.dumps(measured), flush=True)
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "mode",
        nargs="?",
        default="measure",
        choices=("measure", "_read", "_product", "_bare", "_found", "_missed"),
    )
    parser.add_argument("--rows", type=int, default=500_000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--dimension", type=int, default=384)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--path", help="the matrix file (made, and removed after, when not given to measure)"
    )
    parser.add_argument(
        "--tree",
        action="append",
        help="LABEL=DIR: run every mode on this checkout's ptah, the trees taking turns a round; "
        "repeat for several (default: this checkout)",
    )
    parser.add_argument("--modes", nargs="+", default=["product", "bare", "found", "missed"])
    parser.add_argument("--json")
    args = parser.parse_args()
    if args.mode != "measure":
        args.mode = args.mode[1:]
        runners = {"read": run_read, "product": run_product, "bare": run_bare}
        runner = runners.get(args.mode, run_ptah)
        print(json.dumps(runner(args)))
        return
    trees = dict(_labelled(tree) for tree in args.tree) if args.tree else {"this": ROOT}
    with tempfile.TemporaryDirectory() as folder:
        if args.path is None:
            args.path = str(Path(folder) / "matrix.f32")
            started = time.perf_counter()
            make_matrix(Path(args.path), args.rows, args.dimension)
            print(f"matrix written in {time.perf_counter() - started:.1f} s", flush=True)
        runs = [
            process(args, mode, tree) | {"tree": label}
            for _ in range(args.rounds)
            for label, tree in trees.items()
            for mode in args.modes
        ]
    summary: dict[str, dict[str, list]] = {}
    per_round = len(args.modes)
    for first in range(0, len(runs), per_round):
        round_runs = {run["mode"]: run for run in runs[first : first + per_round]}
        bare = round_runs.get("bare")
        for mode in ("found", "missed"):
            if bare and mode in round_runs:
                run = round_runs[mode]
                summary.setdefault(run["tree"], {}).setdefault(mode, []).append(
                    {
                        "cpu_ratio": round(run["cpu_s"] / bare["cpu_s"], 2),
                        "wall_ratio": round(run["wall_s"] / bare["wall_s"], 2),
                        "rss_ratio_to_bare": round(run["peak_rss_mib"] / bare["peak_rss_mib"], 2),
                        "rss_ratio_to_floor": round(
                            run["peak_rss_mib"] / round_runs["product"]["peak_rss_mib"], 2
                        )
                        if "product" in round_runs
                        else None,
                    }
                )
    result = {
        "rows": args.rows,
        "queries": args.queries,
        "dimension": args.dimension,
        "trees": {label: str(tree) for label, tree in trees.items()},
        "runs": runs,
        "ratios": summary,
    }
    print(json.dumps(summary, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")


def _labelled(tree: str) -> tuple[str, Path]:
    """``LABEL=DIR`` (or ``DIR``, labelled by itself) as the label and the checkout."""
    label, _, folder = tree.rpartition("=")
    return label or folder, Path(folder).resolve()


if __name__ == "__main__":
    main()
