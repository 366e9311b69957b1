"""What reading a few rows' texts costs: a full pass over the table (before) against a read by key
(``texts_of``).

Usage: python benchmarks/keyed_read.py [--rows 1000000] [--keys 1000] [--repeat 5] [--postgres]

A table ``articles (id integer primary key, title, body)`` of ``--rows`` rows
(a title and a ~90-character body each) in a SQLite file and, with
``--postgres``, in a PostgreSQL started by ``pgserver`` in a temporary folder.
``--keys`` keys drawn at random from the table (seed 7), asked with the
template ``{title}: {body}``, in this one process and interleaved (scan,
keyed, keyed, scan, ...), ``--repeat`` times each way on one open source:
*scan* is what evaluate's excerpts, the judges, rerank and search did before
(every row of ``Source.rows`` read, the asked ones kept), *keyed* is
``ptah.adapters.sources.base.texts_of`` as shipped. Both answers are checked
equal. Prints each database's medians and the ratio scan / keyed as JSON;
recorded in benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from ptah.adapters.sources.base import texts_of  # noqa: E402
from ptah.core.spec import SourceSpec  # noqa: E402

TEMPLATE = "{title}: {body}"
BODY = "the quick brown fox jumps over the lazy dog and keeps running past the river bank until "


def sqlite_table(folder: Path, rows: int) -> str:
    with sqlite3.connect(folder / "source.db") as connection:
        connection.execute("CREATE TABLE articles (id INTEGER PRIMARY KEY, title TEXT, body TEXT)")
        connection.execute(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) "
            "INSERT INTO articles SELECT i, 'title ' || i, ? || i FROM n",
            (rows, BODY),
        )
    return "sqlite:///source.db"


def postgres_table(folder: Path, rows: int):
    import pgserver
    import psycopg

    server = pgserver.get_server(folder / "pg", cleanup_mode="delete")
    url = f"postgresql://postgres@/postgres?host={folder / 'pg'}"
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute("CREATE TABLE articles (id bigint PRIMARY KEY, title text, body text)")
        connection.execute(
            "INSERT INTO articles SELECT i, 'title ' || i, %s || i FROM generate_series(1, %s) i",
            (BODY, rows),
        )
        connection.execute("VACUUM ANALYZE articles")
    return server, url


def scanned(source, keys: set[str]) -> dict[str, str]:
    """The read before: one pass over every row, the asked ones kept."""
    return {row.key: row.text for row in source.rows(TEMPLATE) if row.key in keys}


def measure(source, keys: set[str], repeat: int) -> dict:
    times: dict[str, list[float]] = {"scan": [], "keyed": []}
    answers = {}
    for turn in range(repeat):
        for side in ("scan", "keyed") if turn % 2 == 0 else ("keyed", "scan"):
            started = time.perf_counter()
            answers[side] = (
                scanned(source, keys) if side == "scan" else texts_of(source, TEMPLATE, keys)
            )
            times[side].append(time.perf_counter() - started)
    assert answers["scan"] == answers["keyed"] and len(answers["keyed"]) == len(keys)
    scan_s, keyed_s = statistics.median(times["scan"]), statistics.median(times["keyed"])
    return {
        "scan_s": round(scan_s, 4),
        "keyed_s": round(keyed_s, 4),
        "scan_over_keyed": round(scan_s / keyed_s, 1),
        "runs": {side: [round(t, 4) for t in found] for side, found in times.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--postgres", action="store_true")
    args = parser.parse_args()
    keys = {str(key) for key in random.Random(7).sample(range(1, args.rows + 1), args.keys)}
    results = {"rows": args.rows, "keys": args.keys}
    with tempfile.TemporaryDirectory(prefix="ptah-bench-") as temporary:
        folder = Path(temporary)
        from ptah.adapters.sources.sqlite import SqliteSource

        spec = SourceSpec(sqlite_table(folder, args.rows), "articles", ("id",), TEMPLATE)
        with SqliteSource(spec, str(folder)) as source:
            results["sqlite"] = measure(source, keys, args.repeat)
        if args.postgres:
            from ptah.adapters.sources.postgres import PostgresSource

            server, url = postgres_table(folder, args.rows)
            try:
                with PostgresSource(SourceSpec(url, "articles", ("id",), TEMPLATE)) as source:
                    results["postgres"] = measure(source, keys, args.repeat)
            finally:
                server.cleanup()
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
