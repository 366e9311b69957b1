"""Benchmark: a build's and verify's peak memory into a pgvector store, before and after the build
read by blocks.

Usage: python benchmarks/build_memory.py --before /tmp/ptah-before [--rows 200000 1000000] [--dimension 384]
                                         [--workdir DIR] [--json FILE]

For each row count, a SQLite source table of N rows (integer key, a title and
a body of a few words) and, in one PostgreSQL with pgvector (``pgserver`` in a
temporary folder), an empty database per tree measured. Then, each step in a
fresh Python process that reports its own peak resident set as it ends
(``VmHWM``), first with the tree of ``--before`` on ``PYTHONPATH`` (a worktree
of the older commit: ``git worktree add --detach /tmp/ptah-before COMMIT``),
then with this script's tree (after), each into its own database:

1. ``fresh``: ``build`` of every row (model ``ptah/deterministic`` at
   ``--dimension``, its record of the texts it was asked cleared after each
   call, so the embedder holds nothing that grows with the table);
2. the source edited: 1 row in 1,000 edited, one deleted, one inserted;
3. ``incremental``: ``build`` again (embeds the edited and inserted rows,
   deletes the vectors of the rows gone);
4. ``verify``: the service as ``ptah inference verify`` runs it, the store's
   ``check`` of every vector included.

Both trees must report the same counts (``same_result``); the wall-time ratio
after/before is of the same steps in this one invocation. Prints a JSON summary
(also written to --json); the figures are recorded in benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
import warnings
from pathlib import Path

from verify_memory import (
    HIGH_WATER,
    VERIFY,
    measure,
    text,
)  # this folder is the script's first on sys.path

HERE = Path(__file__).resolve().parent.parent
EDIT_EVERY = 1_000  # one row in this many edited, one deleted and one inserted between the builds

BUILD = (
    """
import json, sys, time
from ptah.adapters.embedders.deterministic import DeterministicEmbedder
from ptah.services.build import build
from ptah.services.project import open_project

embed = DeterministicEmbedder.embed_documents

def forgetting(self, texts):  # the test embedder records every text it embeds: not what a model does
    try:
        return embed(self, texts)
    finally:
        self.calls.clear()

DeterministicEmbedder.embed_documents = forgetting
started = time.perf_counter()
with open_project(sys.argv[1]) as project:
    summary = build(project)
print(json.dumps({"seconds": round(time.perf_counter() - started, 2), "rows": summary.rows,
                  "embedded": summary.embedded, "deleted": summary.deleted, "unchanged": summary.unchanged}))
"""
    + HIGH_WATER
)


def source(folder: Path, rows: int) -> None:
    """The source table of ``rows`` rows, made afresh."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "source.db").unlink(missing_ok=True)
    with sqlite3.connect(folder / "source.db") as connection:
        connection.execute("CREATE TABLE articles (id INTEGER PRIMARY KEY, title TEXT, body TEXT)")
        connection.executemany(
            "INSERT INTO articles VALUES (?, ?, ?)", ((i, *text(i)) for i in range(1, rows + 1))
        )


def edit(folder: Path, rows: int) -> None:
    with sqlite3.connect(folder / "source.db") as connection:
        connection.execute(f"UPDATE articles SET body = 'edited' WHERE id % {EDIT_EVERY} = 1")
        connection.execute(f"DELETE FROM articles WHERE id % {EDIT_EVERY} = 2")
        connection.executemany(
            "INSERT INTO articles VALUES (?, ?, ?)",
            [(rows + n, *text(rows + n)) for n in range(1, rows // EDIT_EVERY + 1)],
        )


def spec(folder: Path, label: str, store: str, dimension: int) -> Path:
    path = folder / f"ptah-{label}.yaml"
    path.write_text(
        f"version: 1\nstore: {store}\nsource:\n  database: sqlite:///source.db\n  table: articles\n"
        '  key_fields: [id]\n  text: "{title}\\n\\n{body}"\nactive: docs\ngenerations:\n  docs:\n'
        f"    model: ptah/deterministic\n    dimension: {dimension}\n"
    )
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="*", default=[200_000, 1_000_000])
    parser.add_argument("--before", type=Path, required=True, help="a worktree of the older commit")
    parser.add_argument("--dimension", type=int, default=384)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/ptah-build-memory"))
    parser.add_argument("--json", type=Path)
    options = parser.parse_args()
    import psycopg

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver

    data = Path(
        tempfile.mkdtemp(prefix="ptah-build-pg-")
    )  # by tempfile: see tests/contract/conftest.py
    server = pgserver.get_server(data, cleanup_mode="delete")
    summary: list[dict] = []
    try:
        for rows in options.rows:
            folder = options.workdir / str(rows)
            source(folder, rows)
            trees = [("before", options.before), ("after", HERE)]
            specs = {}
            for label, _ in trees:
                database = f"build_{label}_{rows}"
                with psycopg.connect(
                    f"postgresql://postgres@/postgres?host={data}", autocommit=True
                ) as connection:
                    connection.execute(f"DROP DATABASE IF EXISTS {database}")
                    connection.execute(f"CREATE DATABASE {database}")
                specs[label] = spec(
                    folder,
                    label,
                    f"postgresql://postgres@/{database}?host={data}",
                    options.dimension,
                )
            entry: dict = {"rows": rows, "dimension": options.dimension}
            for step, code in (
                ("fresh", BUILD),
                ("edit", None),
                ("incremental", BUILD),
                ("verify", VERIFY),
            ):
                if code is None:
                    edit(folder, rows)
                    continue
                for label, tree in trees:
                    entry[f"{step}_{label}"] = measure(code, [str(specs[label])], tree, folder)
                    print(
                        json.dumps({"rows": rows, "step": step, label: entry[f"{step}_{label}"]}),
                        file=sys.stderr,
                        flush=True,
                    )
                before, after = entry[f"{step}_before"], entry[f"{step}_after"]
                same = {
                    k: v for k, v in after.items() if k not in ("seconds", "wall_s", "peak_rss_mib")
                }
                entry[f"{step}_same_result"] = bool(same) and same == {
                    k: before.get(k) for k in same
                }
                if "seconds" in before and "seconds" in after:
                    entry[f"{step}_time_after_over_before"] = round(
                        after["seconds"] / before["seconds"], 2
                    )
                    entry[f"{step}_peak_after_over_before"] = round(
                        after["peak_rss_mib"] / before["peak_rss_mib"], 2
                    )
            summary.append(entry)
    finally:
        server.cleanup()
    text_out = json.dumps(summary, indent=2)
    print(text_out)
    if options.json:
        options.json.write_text(text_out + "\n")


if __name__ == "__main__":
    main()
