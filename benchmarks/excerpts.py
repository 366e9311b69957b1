"""What the report's excerpts cost: a warm evaluate over 100,000 rows with and without the pass that
reads them.

Usage: python benchmarks/excerpts.py [--rows 100000] [--repeat 5]

The synthetic table of ``benchmarks/evaluate.py`` (rows of 24 random words,
ptah's deterministic 384-d embedder) and 30 cases at k 10, built once (not
timed) and evaluated once to fill the query cache. Then, in this one process
and interleaved (with, without, without, with, ...), ``--repeat`` warm
evaluations each way: *with* is ``project.evaluate`` as shipped, its report
holding each ranked key's excerpt (one pass over the source with the judging
template); *without* is the same call with that pass replaced by an empty
map. Prints the medians and the ratio with / without as JSON; recorded in
benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from evaluate import WORDS, synthetic_project  # noqa: E402  (this folder's benchmark)

import ptah  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ptah-bench-") as temporary:
        folder = Path(temporary) / "synthetic"
        rng = random.Random(7)
        synthetic_project(folder, args.rows, rng)
        lines = ["version: 1", "default_k: 10", "cases:"]
        for case in range(30):
            query = " ".join(rng.choice(WORDS) for _ in range(6))
            lines.append(
                f'  - {{id: q{case}, query: "{query}", relevant: {{"{rng.randint(1, args.rows)}": 1}}}}'
            )
        (folder / "corpus.yaml").write_text("\n".join(lines) + "\n")
        project = ptah.open_project(folder / "ptah.yaml")
        project.build()
        corpus = project.load_corpus(folder / "corpus.yaml")
        project.evaluate(corpus)  # fills the query cache
        times: dict[str, list[float]] = {"with": [], "without": []}
        for turn in range(args.repeat):
            for side in ("with", "without") if turn % 2 == 0 else ("without", "with"):
                started = time.perf_counter()
                report = project.evaluate(corpus, excerpts=side == "with")
                times[side].append(time.perf_counter() - started)
                held = len(report.to_dict().get("excerpts", {}))
                assert held == (
                    0
                    if side == "without"
                    else len(
                        {key for run in report.runs for case in run.cases for key in case.keys}
                    )
                )
        project.close()
    with_s, without_s = statistics.median(times["with"]), statistics.median(times["without"])
    print(
        json.dumps(
            {
                "rows": args.rows,
                "cases": 30,
                "with_s": round(with_s, 3),
                "without_s": round(without_s, 3),
                "with_over_without": round(with_s / without_s, 2),
                "runs": {side: [round(t, 3) for t in found] for side, found in times.items()},
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
