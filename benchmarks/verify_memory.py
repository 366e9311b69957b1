"""Benchmark: verification's peak memory and time at 1M and 10M rows, before and after it became one
pass by blocks.

Usage: python benchmarks/verify_memory.py --rows 1000000 10000000 [--before /tmp/ptah-before] [--before-max ROWS]
                                          [--evaluate] [--postgres ROWS] [--workdir DIR] [--json FILE]

For each row count, a project is synthesized once in --workdir/ROWS (kept, so
a second run reuses it): a SQLite source table of N rows (integer key, a
title and a body of a few words) and a SQLite store whose generation (model
``ptah/deterministic``, 8 dimensions) holds a vector for every row, written
through the store's own ``write_vectors`` with each row's real text digest
and a cheap unit vector (no embedding: verification reads digests, not
vectors). Then, between the store and the table, 1 row in 100,000 is edited
(stale), deleted (gone) and inserted (missing), spread over the keys.

Measured, each in a fresh Python process that reports its own peak resident
set as it ends (``VmHWM``): ``verify`` (the service, as ``ptah
inference verify`` runs it: the store's integrity check and the comparison)
and, with --evaluate, ``ptah inference evaluate --search exact
--allow-stale`` of a 10-case corpus. The code is the ``ptah`` this script's
tree holds (after); with --before, the same commands also run with
``PYTHONPATH=BEFORE`` (a worktree of the older commit: ``git worktree add
--detach /tmp/ptah-before COMMIT``), for row counts up to --before-max. Both
must report the same counts, offenders and fingerprint.

With --postgres ROWS: the source side alone in PostgreSQL (``pgserver`` in a
temporary folder), a table of ROWS rows of ~400 characters of text: every
row's digest read the two ways in this one process, alternating, three times
each -- hashed by the server (32 bytes a row) and read as text and hashed
here -- the median seconds of each and their ratio.

Prints a JSON summary (also written to --json); the figures are recorded in
benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent.parent
EDIT_EVERY = (
    100_000  # one row in this many edited, one deleted and one inserted after the store was written
)
WRITE_BATCH = 100_000
DIMENSION = 8

# The process's own peak resident set, read as it ends: VmHWM belongs to the program exec'd, while
# ru_maxrss (of RUSAGE_SELF or from wait4) keeps the parent's resident set at the fork.
HIGH_WATER = """
high = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print('{"peak_rss_mib": %d}' % (int(high.split()[1]) // 1024))
"""

VERIFY = (
    """
import json, sys, time
from ptah.services.project import open_project
from ptah.services.verify import verify
started = time.perf_counter()
with open_project(sys.argv[1]) as project:
    result = verify(project)
print(json.dumps({"seconds": round(time.perf_counter() - started, 2), "rows": result.rows, "vectors": result.vectors,
                  "covered": result.covered, "fresh": result.fresh, "stale_keys": result.stale_keys,
                  "missing_keys": result.missing_keys, "orphans": result.orphans,
                  "orphan_keys": result.orphan_keys, "fingerprint": result.fingerprint}))
"""
    + HIGH_WATER
)

EVALUATE = (
    """
import sys, time
from ptah.cli import main
started = time.perf_counter()
try:
    main(["inference", "evaluate", "--corpus", sys.argv[2], "--search", "exact", "--allow-stale", "--output",
          sys.argv[3], "--spec", sys.argv[1]])
except SystemExit as exc:
    code = exc.code
else:
    code = 0
print('{"seconds": %.2f, "code": %s}' % (time.perf_counter() - started, code))
"""
    + HIGH_WATER
)


def text(i: int) -> tuple[str, str]:
    return f"Article {i}", f"How to handle case {i % 977} of topic {i % 131}."


def synthesize(folder: Path, rows: int) -> Path:
    """The project of ``rows`` rows (made once); its ptah.yaml."""
    spec = folder / "ptah.yaml"
    if (folder / "ready").exists():
        return spec
    folder.mkdir(parents=True, exist_ok=True)
    for stale in (folder / "source.db", folder / ".ptah"):
        if stale.is_file():
            stale.unlink()
    with sqlite3.connect(folder / "source.db") as connection:
        connection.execute("CREATE TABLE articles (id INTEGER PRIMARY KEY, title TEXT, body TEXT)")
        connection.executemany(
            "INSERT INTO articles VALUES (?, ?, ?)", ((i, *text(i)) for i in range(1, rows + 1))
        )
    spec.write_text(
        "version: 1\nsource:\n  database: sqlite:///source.db\n  table: articles\n  key_fields: [id]\n"
        '  text: "{title}\\n\\n{body}"\nactive: docs\ngenerations:\n  docs:\n'
        f"    model: ptah/deterministic\n    dimension: {DIMENSION}\n"
    )
    (folder / "corpus.yaml").write_text(
        "version: 1\ndefault_k: 10\ncases:\n"
        + "".join(
            f'  - {{id: c{n}, query: "Article {n * 7919}", relevant: {{"{n * 7919}": 1}}}}\n'
            for n in range(1, 11)
        )
    )
    sys.path.insert(0, str(HERE))
    from ptah.core.provenance import text_digest
    from ptah.services.build import library_versions, register_generation
    from ptah.services.project import open_project

    vector = np.full((1, DIMENSION), 1 / np.sqrt(DIMENSION), dtype=np.float32)
    with open_project(str(spec)) as project:
        generation = project.generation("docs")
        identity = generation.identity.identity
        store = project.store(create=True)
        register_generation(
            store, generation, DIMENSION, library_versions(generation.settings), None
        )
        for start in range(1, rows + 1, WRITE_BATCH):
            keys = range(start, min(start + WRITE_BATCH, rows + 1))
            batch = [
                (f"{len(str(i))}:{i}", str(i), text_digest("{}\n\n{}".format(*text(i))))
                for i in keys
            ]
            store.write_vectors(identity, batch, np.repeat(vector, len(batch), axis=0))
        store.close()
    with sqlite3.connect(folder / "source.db") as connection:
        connection.execute(f"UPDATE articles SET body = 'edited' WHERE id % {EDIT_EVERY} = 1")
        connection.execute(f"DELETE FROM articles WHERE id % {EDIT_EVERY} = 2")
        connection.executemany(
            "INSERT INTO articles VALUES (?, ?, ?)",
            [(rows + n, *text(rows + n)) for n in range(1, max(rows // EDIT_EVERY, 1) + 1)],
        )
    (folder / "ready").write_text("")
    return spec


def measure(code: str, arguments: list[str], tree: Path, cwd: Path) -> dict:
    """Run ``code`` in a fresh interpreter with ``tree`` first on its path: what it printed (its
    last two lines: its result, then its peak RSS), and its wall time."""
    environment = dict(os.environ, PYTHONPATH=str(tree))
    started = time.perf_counter()
    child = subprocess.run(
        [sys.executable, "-c", code, *arguments],
        cwd=cwd,
        env=environment,
        stdout=subprocess.PIPE,
        text=True,
    )
    lines = child.stdout.strip().splitlines()
    if child.returncode != 0 or len(lines) < 2:
        return {"failed": child.returncode}
    return (
        json.loads(lines[-2])
        | json.loads(lines[-1])
        | {"wall_s": round(time.perf_counter() - started, 2)}
    )


def digests_in_postgres(rows: int) -> dict:
    """Median seconds to read every row's digest hashed by the server and read as text (module
    docs)."""
    import statistics
    import tempfile
    import warnings

    import psycopg

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver

    sys.path.insert(0, str(HERE))
    from ptah.adapters.sources.postgres import PostgresSource
    from ptah.core.spec import SourceSpec

    folder = Path(tempfile.mkdtemp(prefix="ptah-verify-pg-"))
    server = pgserver.get_server(folder, cleanup_mode="delete")
    try:
        url = f"postgresql://postgres@/postgres?host={folder}"
        with psycopg.connect(url, autocommit=True) as connection:
            connection.execute(
                "CREATE TABLE articles (id bigint PRIMARY KEY, title text, body text)"
            )
            connection.execute(
                "INSERT INTO articles SELECT i, 'Article ' || i, repeat('How to handle case ' || "
                "(i %% 977) || ' of topic ' || (i %% 131) || '. ', 10) FROM generate_series(1, %s) i",
                (rows,),
            )
            connection.execute("VACUUM ANALYZE articles")
        template = "{title}\n\n{body}"
        seconds: dict[str, list[float]] = {"in_database": [], "from_text": []}
        answers = set()
        for _ in range(3):
            for way in seconds:
                with PostgresSource(SourceSpec(url, "articles", ("id",), template, None)) as source:
                    source.digests_in_database = way == "in_database"
                    started = time.perf_counter()
                    answers.add(hash(tuple(source.digests(template))))
                    seconds[way].append(time.perf_counter() - started)
        medians = {way: round(statistics.median(values), 2) for way, values in seconds.items()}
        return {
            "rows": rows,
            "seconds": medians,
            "same_digests": len(answers) == 1,
            "text_over_database": round(medians["from_text"] / medians["in_database"], 2),
        }
    finally:
        server.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="*", default=[1_000_000])
    parser.add_argument("--before", type=Path, help="a worktree of the older commit, measured too")
    parser.add_argument(
        "--before-max", type=int, default=1_000_000, help="the largest row count measured before"
    )
    parser.add_argument(
        "--evaluate", action="store_true", help="also measure evaluate --search exact"
    )
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/ptah-verify-memory"))
    parser.add_argument(
        "--postgres", type=int, metavar="ROWS", help="also time the source's digests in PostgreSQL"
    )
    parser.add_argument("--json", type=Path)
    options = parser.parse_args()
    summary: list[dict] = []
    for rows in options.rows:
        folder = options.workdir / str(rows)
        started = time.perf_counter()
        spec = synthesize(folder, rows)
        entry: dict = {"rows": rows, "setup_s": round(time.perf_counter() - started, 1)}
        trees = [("after", HERE)] + (
            [("before", options.before)] if options.before and rows <= options.before_max else []
        )
        for label, tree in trees:
            entry[f"verify_{label}"] = measure(VERIFY, [str(spec)], tree, folder)
            if options.evaluate:
                entry[f"evaluate_{label}"] = measure(
                    EVALUATE, [str(spec), "corpus.yaml", f"report-{label}.json"], tree, folder
                )
            print(
                json.dumps({label: entry[f"verify_{label}"]} | {"rows": rows}),
                file=sys.stderr,
                flush=True,
            )
        if "verify_before" in entry:
            same = {
                k: v
                for k, v in entry["verify_after"].items()
                if k not in ("seconds", "wall_s", "peak_rss_mib")
            }
            entry["same_result"] = same == {
                k: v for k, v in entry["verify_before"].items() if k in same
            }
        summary.append(entry)
    if options.postgres:
        summary.append({"postgres_digests": digests_in_postgres(options.postgres)})
        print(json.dumps(summary[-1]), file=sys.stderr, flush=True)
    text_out = json.dumps(summary, indent=2)
    print(text_out)
    if options.json:
        options.json.write_text(text_out + "\n")


if __name__ == "__main__":
    main()
