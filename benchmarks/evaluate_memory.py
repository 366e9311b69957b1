"""Benchmark: evaluate's peak memory and time as the cases grow, over 100,000 rows.

Usage: python benchmarks/evaluate_memory.py [--rows 100000] [--cases 1000,10000,50000] [--repeat 3]
                                            [--vocabulary 40] [--row-words 24] [--tree LABEL=DIR ...]
                                            [--cap-gib 10] [--label NAME] [--workdir DIR] [--json FILE]

A synthetic table of --rows rows (24 random words each), embedded by ptah's
deterministic 384-d embedder (model ``ptah/deterministic``: no model time,
what is measured is reading, verifying, scoring and reporting), and for each
count in --cases a corpus of that many cases (6-word queries; every case one
relevant key, every fifth also one required key, so missed keys are placed
"ranked Nth"). Both are made from a fixed seed, so every run of the script,
on any code, measures the same work.

*The tie-heavy shape* (issue 42, item 3): ``--rows 30000 --vocabulary 8
--row-words 4``. Rows and queries draw their words from the first
--vocabulary words only, --row-words a row, so a few hundred bags of words
cover 30,000 rows: every query's top 10 ties with about a hundred rows at the
cutoff, and most cases flag ties.

For each corpus: one evaluate to fill the query cache (not measured), then
--repeat measured runs, each ``ptah inference evaluate --output REPORT`` in a
fresh process under a cap on its address space (``prlimit --as``, --cap-gib
GiB, so a run that would need more fails alone instead of waking the kernel's
OOM killer on a shared machine). Per run: the process's peak resident set
(``VmHWM`` from ``/proc/self/status``, read as the process ends), wall time
(interpreter start included), CPU seconds (user and system, the process's
own) and the report's own ``search`` timing; a run
that fails under the cap is recorded as not completed. Medians over the
repeats. ``digest`` is the SHA-256 of what the report measured (every case's
results with their scores, measures, placements and ties, and the means), to
show two code versions measured the same numbers.

Which code is measured: the ``ptah`` that ``python -c "import ptah"`` finds,
so ``PYTHONPATH=/tmp/before python benchmarks/evaluate_memory.py --label before``
measures a worktree of an older commit (``git worktree add /tmp/before COMMIT``).
The project is built by that same code, in --workdir/LABEL. With ``--tree
LABEL=DIR`` (repeated) the measured runs alternate between the checkouts
(``PYTHONPATH=DIR`` each), repeat after repeat in one invocation, over one
project built by the first; the results are listed per tree.

Prints a JSON summary (also written to --json); the figures are recorded in
benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from evaluate import WORDS, synthetic_project  # benchmarks/evaluate.py: the same synthetic table

# Runs ptah's CLI in this process, then reports how it ended and the process's peak resident set.
RUNNER = """
import json, resource, sys
result = {"code": None}
try:
    from ptah.cli import main
    main(sys.argv[2:])
except SystemExit as exc:
    result["code"] = exc.code
except MemoryError:
    result["code"] = "MemoryError"
usage = resource.getrusage(resource.RUSAGE_SELF)
result["cpu_s"] = round(usage.ru_utime + usage.ru_stime, 3)
for line in open("/proc/self/status"):
    if line.startswith("VmHWM:"):
        result["vmhwm_bytes"] = int(line.split()[1]) * 1024
with open(sys.argv[1], "w") as handle:
    json.dump(result, handle)
"""


def ptah_cli(*argv: str, cwd: Path, cap_bytes: int | None = None, tree: str | None = None) -> dict:
    """``ptah ARGV`` in a fresh process (under the address-space cap when given; on the checkout
    ``tree`` when given): how it ended, peak memory, time."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as handle:
        result_path = handle.name
    command = [sys.executable, "-c", RUNNER, result_path, *argv]
    if cap_bytes is not None:
        command = ["prlimit", f"--as={cap_bytes}", "--", *command]
    env = None if tree is None else os.environ | {"PYTHONPATH": tree}
    started = time.perf_counter()
    process = subprocess.run(
        command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env
    )
    seconds = time.perf_counter() - started
    try:
        result = json.loads(Path(result_path).read_text() or "{}")
    except (OSError, json.JSONDecodeError):
        result = {}
    finally:
        Path(result_path).unlink(missing_ok=True)
    result.update(
        seconds=round(seconds, 3), returncode=process.returncode, stderr=process.stderr[-400:]
    )
    result["completed"] = result.get("code") in (
        0,
        1,
    )  # 1 is a negative verdict, still a finished evaluation
    return result


def make_corpus(path: Path, cases: int, rows: int, words: list[str]) -> None:
    rng = random.Random(cases)
    lines = ["version: 1", "default_k: 10", "cases:"]
    for case in range(cases):
        query = " ".join(rng.choice(words) for _ in range(6))
        relevant = rng.randint(1, rows)
        required = f', required: ["{rng.randint(1, rows)}"]' if case % 5 == 0 else ""
        lines.append(
            f'  - {{id: q{case}, query: "{query} {case}", relevant: {{"{relevant}": 1}}{required}}}'
        )
    path.write_text("\n".join(lines) + "\n")


def measured_digest(report_path: Path) -> str:
    """SHA-256 of every number the report measured (see the module docs)."""
    report = json.loads(report_path.read_text())
    parts = [
        [
            run["generation"]["name"],
            [
                [
                    case["id"],
                    case["results"],
                    case["metrics"],
                    case["required"],
                    case["forbidden"],
                    case["ties"],
                ]
                for case in run["cases"]
            ],
            {name: run["aggregates"][name] for name in ("recall", "mrr", "ndcg")},
        ]
        for run in report["runs"]
    ]
    return "sha256:" + hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def measure(
    folder: Path,
    cases: int,
    rows: int,
    words: list[str],
    trees: dict[str, str | None],
    repeat: int,
    cap_bytes: int,
) -> dict:
    """``cases`` cases measured on each of ``trees`` (label -> checkout, None: this process's
    ptah), the runs alternating between them."""
    corpus = folder / f"corpus-{cases}.yaml"
    make_corpus(corpus, cases, rows, words)

    def argv(label: str) -> tuple[str, ...]:
        report = folder / f"report-{cases}-{label}.json"
        return (
            "inference",
            "evaluate",
            "--spec",
            str(folder / "ptah.yaml"),
            "--corpus",
            str(corpus),
            "--output",
            str(report),
        )

    first = next(iter(trees))
    warm_up = ptah_cli(*argv(first), cwd=folder, cap_bytes=cap_bytes, tree=trees[first])
    runs: dict[str, list[dict]] = {label: [] for label in trees}
    for _ in range(repeat if warm_up["completed"] else 0):
        for label, tree in trees.items():
            runs[label].append(ptah_cli(*argv(label), cwd=folder, cap_bytes=cap_bytes, tree=tree))
    measured = {}
    for label in trees:
        done = [run for run in runs[label] if run["completed"]]
        result = {"completed": len(done), "of": len(runs[label]) or 1}
        report = Path(argv(label)[-1])
        if not done:
            result["failure"] = (runs[label] or [warm_up])[-1]
        else:
            search = json.loads(report.read_text())["timings"]["search"]  # the last run's report
            result.update(
                vmhwm_bytes=int(statistics.median(run["vmhwm_bytes"] for run in done)),
                vmhwm_runs=[run["vmhwm_bytes"] for run in done],
                wall_s=round(statistics.median(run["seconds"] for run in done), 2),
                wall_runs=[run["seconds"] for run in done],
                cpu_s=round(statistics.median(run["cpu_s"] for run in done), 2),
                cpu_runs=[run["cpu_s"] for run in done],
                search_s=round(search, 2),
                digest=measured_digest(report),
            )
        report.unlink(missing_ok=True)
        measured[label] = result
    if len(trees) == 1:
        return {"cases": cases} | measured[first]
    return {"cases": cases, "trees": measured}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--cases", default="1000,10000,50000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--vocabulary", type=int, default=len(WORDS), help="Words drawn from: the first N."
    )
    parser.add_argument("--row-words", type=int, default=24, help="Words in a row.")
    parser.add_argument(
        "--tree",
        action="append",
        default=[],
        metavar="LABEL=DIR",
        help="Measure this checkout's ptah too (repeat it; the runs alternate).",
    )
    parser.add_argument("--cap-gib", type=float, default=10.0)
    parser.add_argument("--label", default="measured")
    parser.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="Keep the project here (default: a temporary folder).",
    )
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    if shutil.which("prlimit") is None:
        raise SystemExit("prlimit (util-linux) is needed to cap each run's memory")
    cap_bytes = int(args.cap_gib * 1024**3)
    trees: dict[str, str | None] = {args.label: None}
    if args.tree:
        trees = {
            label: str(Path(tree).resolve())
            for label, tree in (item.split("=", 1) for item in args.tree)
        }
    words = WORDS[: args.vocabulary]
    builder = trees[next(iter(trees))]  # the first checkout builds the project
    code = subprocess.run(
        [sys.executable, "-c", "import ptah; print(ptah.__file__)"],
        capture_output=True,
        text=True,
        env=None if builder is None else os.environ | {"PYTHONPATH": builder},
    )
    with tempfile.TemporaryDirectory(prefix="ptah-bench-") as temporary:
        folder = (args.workdir or Path(temporary)) / args.label
        if folder.exists():
            shutil.rmtree(folder)
        synthetic_project(folder, args.rows, random.Random(7), words, args.row_words)
        started = time.perf_counter()
        build = ptah_cli(
            "inference",
            "build",
            "--spec",
            str(folder / "ptah.yaml"),
            "--quiet",
            cwd=folder,
            tree=builder,
        )
        if not build["completed"]:
            raise SystemExit(f"build failed: {build}")
        summary = {
            "label": args.label,
            "ptah": code.stdout.strip(),
            "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]},
            "rows": args.rows,
            "vocabulary": len(words),
            "row_words": args.row_words,
            "trees": trees,
            "load_before": Path("/proc/loadavg").read_text().split()[:3],
            "cap_bytes": cap_bytes,
            "build_s": round(time.perf_counter() - started, 1),
            "results": [
                measure(folder, int(cases), args.rows, words, trees, args.repeat, cap_bytes)
                for cases in args.cases.split(",")
            ],
        }
        summary["load_after"] = Path("/proc/loadavg").read_text().split()[:3]
    text = json.dumps(summary, indent=2)
    if args.json is not None:
        args.json.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
