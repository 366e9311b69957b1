"""Benchmark: the peak memory and time of one Ray partition worker on an incremental build, now and
at REV.

    python benchmarks/partition_memory.py --rows 1000000 [--dimension 64] [--changes 1000] [--deletes N]
                                          [--before REV] [--repeats 2]

Starts its own PostgreSQL 16 + pgvector with ``pgserver`` in a temporary folder (removed at the
end): the source table of ``benchmarks/ray_build.py`` (N synthetic documents), a store built by the
local engine with the deterministic embedder at ``--dimension``, then ``--changes`` rows edited, as
many inserted and ``--deletes`` (default: as many) deleted in the source. Each run copies the built
store (``CREATE DATABASE … TEMPLATE``) and, in a fresh process with one code's ``ptah`` and
``ptah_ray`` on PYTHONPATH (this work tree, or a temporary git work tree of ``--before``, a revision
with the add-on ptah-ray in ``packages/``), indexes it by key as the
driver does, exports a snapshot of the source and calls :meth:`PartitionWorker.run` on one partition
holding every row (no Ray): the process's own peak RSS (``VmHWM``) before and after the run, the
run's seconds and its result. Runs alternate now, before, before, now (``--repeats`` pairs); the
medians and their ratios are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RAY_SOURCE = Path("packages") / "ptah-ray" / "src"  # ptah_ray, the add-on


def _hwm_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def worker(path: str) -> dict:
    """One partition holding every row, run by this process's ``ptah`` (whatever PYTHONPATH
    imports)."""
    import time

    import ptah
    from ptah_ray.partition import BuildPlan, PartitionWorker
    from ptah_ray.partitions import KeyRange, PartitionedSource
    from ptah_ray.ranges import ensure_range_index

    with ptah.open_project(path) as project:
        inner = project._opened
        generation = inner.generation(None)
        spec = inner.spec
    identity = generation.identity.identity
    plan = BuildPlan.sealing(
        spec.source,
        generation.settings,
        spec.root,
        spec.store,
        identity,
        16 * generation.settings.batch_size,
    )
    runner = PartitionWorker(plan)
    runner.open()
    with PartitionedSource(spec.source, spec.root) as source:
        ensure_range_index(runner._store, identity, source.key_kinds)
        runner.begin(source.export_snapshot(), generation.settings.dimension)
        runner.embedder()  # the model's memory is not the partition's
        before = _hwm_mib()
        started = time.perf_counter()
        result = runner.run(0, KeyRange(None, None))
        seconds = time.perf_counter() - started
    runner.close()
    return {
        "code": ptah.__file__,
        "hwm_before_run_mib": round(before),
        "hwm_mib": round(_hwm_mib()),
        "run_s": round(seconds, 2),
        "rows": result.rows,
        "embedded": result.embedded,
        "deleted": result.deleted,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--dimension", type=int, default=64)
    parser.add_argument("--changes", type=int, default=1_000)
    parser.add_argument(
        "--deletes", type=int, help="rows deleted (default: --changes; 0: none, no row gone)"
    )
    parser.add_argument("--before", default="main")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument(
        "--worker", help=argparse.SUPPRESS
    )  # a run's own process: the specification's path
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker)))
        return
    sys.path.insert(0, str(ROOT / "benchmarks"))
    sys.path.insert(0, str(ROOT))
    import psycopg
    from ray_build import _checkout, create_source, server, spec, url

    import ptah

    before_tree = _checkout(args.before)
    folder = Path(tempfile.mkdtemp(prefix="ptah-partmem-")) / "pg"
    pg = server(folder)
    try:
        source = create_source(folder, args.rows)
        built = spec(folder, "built", source, "ptah/deterministic", args.dimension)
        with ptah.open_project(built) as project:
            print("built", project.build().embedded, flush=True)
        changes, rows = args.changes, args.rows
        with psycopg.connect(source, autocommit=True) as connection:
            connection.execute(
                "UPDATE docs SET body = body || ' edited' WHERE id %% %s = 1", (rows // changes,)
            )
            deletes = changes if args.deletes is None else args.deletes
            if deletes:
                connection.execute("DELETE FROM docs WHERE id %% %s = 2", (rows // deletes,))
            connection.execute(
                "INSERT INTO docs SELECT i, 'new ' || i, 'inserted' FROM generate_series(%s::bigint, %s::bigint) AS i",
                (rows + 1, rows + changes),
            )
        runs: dict[str, list[dict]] = {"now": [], "before": []}
        for number, code in enumerate(
            ["now", "before", "before", "now"] * (args.repeats // 2) or ["now", "before"]
        ):
            name = f"run{number}"
            with psycopg.connect(url(folder, "postgres"), autocommit=True) as admin:
                admin.execute(f"CREATE DATABASE {name} TEMPLATE built")
            path = Path(built).parent.parent / f"spec-{name}"
            path.mkdir()
            (path / "ptah.yaml").write_text(
                Path(built).read_text().replace(url(folder, "built"), url(folder, name))
            )
            tree = ROOT if code == "now" else before_tree
            finished = subprocess.run(
                [
                    sys.executable,
                    str(Path(__file__).resolve()),
                    "--worker",
                    str(path / "ptah.yaml"),
                ],
                env={
                    **os.environ,
                    "PYTHONPATH": os.pathsep.join([str(tree), str(tree / RAY_SOURCE)]),
                },
                cwd=tree,
                check=True,
                capture_output=True,
                text=True,
            )
            runs[code].append(json.loads(finished.stdout.strip().splitlines()[-1]))
            print(code, runs[code][-1], flush=True)
        first = runs["now"][0]
        assert all(
            (run["rows"], run["embedded"], run["deleted"])
            == (first["rows"], first["embedded"], first["deleted"])
            for run in sum(runs.values(), [])
        )
        median = {
            code: {
                measure: statistics.median(run[measure] for run in found)
                for measure in ("hwm_before_run_mib", "hwm_mib", "run_s")
            }
            for code, found in runs.items()
        }
        print(
            json.dumps(
                {
                    "rows": args.rows,
                    "dimension": args.dimension,
                    "changes": changes,
                    "deletes": deletes,
                    "result": {k: first[k] for k in ("rows", "embedded", "deleted")},
                    "median": median,
                    "peak_before_over_now": round(
                        median["before"]["hwm_mib"] / median["now"]["hwm_mib"], 2
                    ),
                    "time_now_over_before": round(
                        median["now"]["run_s"] / median["before"]["run_s"], 3
                    ),
                },
                indent=1,
            )
        )
    finally:
        pg.cleanup()
        subprocess.run(
            ["git", "worktree", "remove", "--force", str(before_tree)],
            cwd=ROOT,
            capture_output=True,
        )


if __name__ == "__main__":
    main()
