"""Benchmark: cold vs warm `ptah inference evaluate`, and a warm evaluate over 100,000 rows.

Usage: python benchmarks/evaluate.py [--rows 100000] [--repeat 3]

1. The bundled example (examples/support, corpora/support.yaml, 25 cases),
   generation title-body built with the real all-MiniLM-L6-v2 (not timed).
   *Cold*: the query cache emptied, so evaluate loads the model and embeds
   the queries. *Warm*: every query cached, so evaluate neither loads the
   model nor imports torch. Both as whole CLI processes (`python -m ptah`),
   median of --repeat runs; target: warm >= 10x faster than cold.
2. A synthetic 100,000-row table embedded by ptah's deterministic 384-d
   embedder (the warm path does not touch the model, so the model does not
   matter there; what matters is reading, verifying and scoring 100,000
   vectors) and a corpus of 30 cases. Cold and warm, as above; target: warm
   under 1 s on this machine, also recorded as a ratio to the cold run.

Prints a JSON summary; the figures are recorded in benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WORDS = (
    "invoice payment refund account password export report client tax currency bank card subscription plan team "
    "reminder receipt mobile app integration webhook token security login address company discount quote expense "
    "ledger balance statement payout dispute schedule recurring draft template email notification"
).split()


def ptah(*argv: str, cwd: Path) -> tuple[float, int]:
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "ptah", *argv], cwd=cwd, capture_output=True, text=True
    )
    elapsed = time.perf_counter() - started
    if result.returncode not in (0, 1):
        raise SystemExit(f"ptah {' '.join(argv)} failed ({result.returncode}): {result.stderr}")
    return elapsed, result.returncode


def clear_query_cache(store: Path) -> None:
    with sqlite3.connect(store) as connection:
        connection.execute("DELETE FROM query_cache")


def cold_and_warm(folder: Path, corpus: Path, repeat: int) -> dict:
    argv = (
        "inference",
        "evaluate",
        "--spec",
        str(folder / "ptah.yaml"),
        "--corpus",
        str(corpus),
        "--json",
    )
    store = folder / ".ptah" / "ptah.db"
    cold, warm = [], []
    for _ in range(repeat):
        clear_query_cache(store)
        cold.append(ptah(*argv, cwd=folder)[0])
        warm.append(ptah(*argv, cwd=folder)[0])
    cold_s, warm_s = statistics.median(cold), statistics.median(warm)
    return {
        "cold_s": round(cold_s, 3),
        "warm_s": round(warm_s, 3),
        "cold_over_warm": round(cold_s / warm_s, 2),
        "cold_runs": [round(x, 3) for x in cold],
        "warm_runs": [round(x, 3) for x in warm],
    }


def example(workdir: Path, repeat: int) -> dict:
    folder = workdir / "support"
    folder.mkdir()
    for name in ("ptah.yaml", "make_db.py", "articles.jsonl"):
        shutil.copy(REPO / "examples" / "support" / name, folder / name)
    subprocess.run([sys.executable, str(folder / "make_db.py")], check=True, capture_output=True)
    ptah("inference", "build", "--spec", str(folder / "ptah.yaml"), "--quiet", cwd=folder)
    return cold_and_warm(folder, REPO / "corpora" / "support.yaml", repeat)


def synthetic_project(
    folder: Path,
    rows: int,
    rng: random.Random,
    words: list[str] = WORDS,
    per_row: int = 24,
) -> None:
    """``rows.db`` (``rows`` rows of ``per_row`` random ``words``) and ``ptah.yaml`` (generation
    ``hashed``: deterministic, 384-d)."""
    folder.mkdir(parents=True)
    with sqlite3.connect(folder / "rows.db") as connection:
        connection.execute("CREATE TABLE rows (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
        connection.executemany(
            "INSERT INTO rows VALUES (?, ?)",
            ((i, " ".join(rng.choice(words) for _ in range(per_row))) for i in range(1, rows + 1)),
        )
    (folder / "ptah.yaml").write_text(
        'version: 1\nsource:\n  database: sqlite:///rows.db\n  table: rows\n  key_fields: [id]\n  text: "{body}"\n'
        "active: hashed\ngenerations:\n  hashed:\n    model: ptah/deterministic\n    dimension: 384\n    batch_size: 4096\n"
    )


def synthetic(workdir: Path, rows: int, repeat: int) -> dict:
    folder = workdir / "synthetic"
    rng = random.Random(7)
    synthetic_project(folder, rows, rng)
    lines = ["version: 1", "default_k: 10", "cases:"]
    for case in range(30):
        query = " ".join(rng.choice(WORDS) for _ in range(6))
        lines.append(
            f'  - {{id: q{case}, query: "{query}", relevant: {{"{rng.randint(1, rows)}": 1}}}}'
        )
    corpus = folder / "corpus.yaml"
    corpus.write_text("\n".join(lines) + "\n")
    started = time.perf_counter()
    ptah("inference", "build", "--spec", str(folder / "ptah.yaml"), "--quiet", cwd=folder)
    result = cold_and_warm(folder, corpus, repeat)
    result["rows"] = rows
    result["build_s"] = round(time.perf_counter() - started, 1)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ptah-bench-") as temporary:
        workdir = Path(temporary)
        summary = {
            "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]},
            "example": example(workdir, args.repeat),
            "synthetic": synthetic(workdir, args.rows, args.repeat),
        }
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
