"""What the exact re-scoring costs: the float32 plan ranked on BLAS bits vs the one exact plan, same
blocks.

    python benchmarks/exact_scoring.py [--rows 10000000] [--queries 100] [--dimension 64] [--kind ties|random]
                                       [--before REV] [--json FILE]

Until the ranking issue, exact search ranked on float32 scores straight from
the BLAS product (``ptah/core/streamed.py``'s ``StreamedRanking`` at
``--before``, default ``bf34c1e``, loaded from git history into a temporary
module). Now :class:`ptah.core.exact.ExactRanking` uses the product only to
choose candidates and scores them in float64 (``ptah.core.ranking``). This
script streams one synthetic generation in blocks of 65,536 rows -- each block
made once, from a seeded generator, and handed to both plans in turn, so
neither pays for making it -- with every case asking for one required key
that the ranking misses (the second pass over the blocks before it runs, as
in the 10M-row evaluation of RESULTS.md). It times each plan's work (the
float32 product included, for both) and prints the ratio new/old.

``--kind ties`` makes the rows from a few hundred distinct integer vectors
(ties at every cutoff, like the deterministic embedder's generation);
``random`` makes normal vectors. Both plans must agree on every ranked key
and on every missed key's rank on such data -- checked at the end; the
float32 scores themselves differ from the float64 ones in the last bits.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from ptah.core.exact import ExactRanking  # noqa: E402
from ptah.core.ranking import query_blocks  # noqa: E402

BLOCK = 1 << 16


def old_plan(revision: str):
    """The module ``ptah/core/streamed.py`` as it was at ``revision``."""
    source = subprocess.run(
        ["git", "show", f"{revision}:ptah/core/streamed.py"],
        capture_output=True,
        text=True,
        check=True,
        cwd=os.path.dirname(__file__),
    ).stdout
    folder = tempfile.mkdtemp()
    path = os.path.join(folder, "streamed_before.py")
    with open(path, "w") as handle:
        handle.write(source)
    spec = importlib.util.spec_from_file_location("streamed_before", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def block_of(
    seed: int, first: int, rows: int, dimension: int, kind: str
) -> tuple[list[str], np.ndarray]:
    rng = np.random.default_rng((seed, first))
    if kind == "ties":
        vectors = (
            np.random.default_rng(seed).integers(-1, 2, size=(300, dimension)).astype(np.float32)
        )
        vectors = vectors[rng.integers(0, 300, size=rows)]
    else:
        vectors = rng.standard_normal((rows, dimension)).astype(np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors /= np.where(norms == 0, 1, norms)
    return [f"{first + i:09d}" for i in range(rows)], vectors


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--dimension", type=int, default=64)
    parser.add_argument("--kind", choices=["ties", "random"], default="ties")
    parser.add_argument("--before", default="bf34c1e")
    parser.add_argument("--json")
    options = parser.parse_args()
    before = old_plan(options.before)
    rng = np.random.default_rng(1)
    queries = rng.standard_normal((options.queries, options.dimension)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    ks = [10] * options.queries
    asked = [[f"{int(row):09d}"] for row in rng.integers(0, options.rows, size=options.queries)]
    expected = [set(keys) for keys in asked]
    reach = [10] * options.queries
    old = before.StreamedRanking(ks, expected=expected, asked=asked, reach=reach)
    new = ExactRanking(queries, ks, expected=expected, asked=asked, reach=reach)
    plan = query_blocks(options.queries, BLOCK)
    seconds = {"old": 0.0, "new": 0.0, "make": 0.0}
    starts = list(range(0, options.rows, BLOCK))

    def old_add(keys, vectors, fold):
        for number, (start, stop) in enumerate(plan):
            fold(start, stop, queries[start:stop] @ vectors.T, keys, new_block=number == 0)

    def both(first: int, second_pass: bool) -> None:
        clock = time.perf_counter()
        keys, vectors = block_of(
            7, first, min(BLOCK, options.rows - first), options.dimension, options.kind
        )
        seconds["make"] += time.perf_counter() - clock
        clock = time.perf_counter()
        old_add(keys, vectors, old.count if second_pass else old.add)
        seconds["old"] += time.perf_counter() - clock
        clock = time.perf_counter()
        (new.count if second_pass else new.add)(keys, vectors)
        seconds["new"] += time.perf_counter() - clock

    for first in starts:
        both(first, False)
    again = {"old": old.recount(), "new": new.recount()}
    for first in starts[
        : max(again.values())
    ]:  # both counted in the same call; each only as far as it asked
        clock = time.perf_counter()
        keys, vectors = block_of(
            7, first, min(BLOCK, options.rows - first), options.dimension, options.kind
        )
        seconds["make"] += time.perf_counter() - clock
        index = first // BLOCK
        if index < again["old"]:
            clock = time.perf_counter()
            old_add(keys, vectors, old.count)
            seconds["old"] += time.perf_counter() - clock
        if index < again["new"]:
            clock = time.perf_counter()
            new.count(keys, vectors)
            seconds["new"] += time.perf_counter() - clock
    clock = time.perf_counter()
    old_rankings = old.rankings()
    seconds["old"] += time.perf_counter() - clock
    clock = time.perf_counter()
    new_rankings = new.rankings()
    seconds["new"] += time.perf_counter() - clock
    same_keys = sum(
        1
        for a, b in zip(old_rankings, new_rankings)
        if [k for k, _ in a.ranked] == [k for k, _ in b.ranked]
    )
    same_ranks = sum(1 for a, b in zip(old_rankings, new_rankings) if a.ranks == b.ranks)
    scored = options.rows + min(
        again["new"] * BLOCK, options.rows
    )  # rows scored: a first pass and the recount
    flops = 2 * scored * options.queries * options.dimension
    result = {
        "rows": options.rows,
        "queries": options.queries,
        "dimension": options.dimension,
        "kind": options.kind,
        "blocks": len(starts),
        "blocks_again": again,
        "seconds_old": round(seconds["old"], 2),
        "seconds_new": round(seconds["new"], 2),
        "ratio_new_old": round(seconds["new"] / seconds["old"], 3),
        "seconds_making_blocks": round(seconds["make"], 2),
        "gflops_new": round(
            flops / seconds["new"] / 1e9, 2
        ),  # the float32 products' FLOPs over all its time
        "same_ranked_keys": f"{same_keys}/{options.queries}",
        "same_missed_ranks": f"{same_ranks}/{options.queries}",
        "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS", "default"),
    }
    print(json.dumps(result, indent=2))
    if options.json:
        with open(options.json, "w") as handle:
            json.dump(result, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
