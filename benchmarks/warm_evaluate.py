"""Warm SciFact evaluate: the bare pipeline, the CLI and the Python API, each timed as a whole
process.

    python benchmarks/warm_evaluate.py [DATASET_DIR] [--work DIR] [--repeats 5] [--json FILE]
    [--other-tree DIR]

DATASET_DIR defaults to ``../shared/datasets/scifact`` beside this repository
(read at run time, never copied into it). *Warm* means every query vector is
already in the store's cache, so no side calls the model: what is left is
reading the 5,183 x 384 document vectors, one matrix product, ranking and
measuring the 300 test cases at k = 10.

Setup (not timed): ``ptah import beir`` into ``WORK/project`` (kept when it
is already there, so ``--work`` reuses an earlier build), ``project.build()``
with all-MiniLM-L6-v2 (minutes the first time, nothing afterwards), one
evaluate to fill the query cache, and the bare pipeline's inputs saved in
``WORK/bare``: the stored document vectors and the cached query vectors as
``.npy`` (the same float32 bits ptah scores) and the document and query ids.

Then, interleaved in one invocation (order A B C D, then D C B A, ...),
``--repeats`` times each:

* **bare**: a fresh ``python -c`` process that loads the two ``.npy`` files,
  reads ``qrels/test.tsv``, computes ``Q @ D.T``, takes the top 10 per query
  (``argpartition``; pytrec_eval orders them by score) and measures nDCG@10,
  Recall@10 and MRR@10 with pytrec_eval -- sentence-transformers is not needed when every vector is
  at hand, so it is not imported;
* **cli**: ``ptah inference evaluate --corpus corpora/test-k10.yaml --output
  FILE`` (stdout a pipe, so the tables render without colour);
* **api**: a fresh ``python -c "import ptah; ... project.evaluate(...)"``
  process that writes the same JSON report;
* **api-in-process**: ``project.evaluate(corpus path)`` on a project held open
  in this process (its second and later calls).

With ``--other-tree DIR`` (a folder holding another version's ``ptah/``
package, e.g. ``git archive HEAD~3 ptah | tar -x -C DIR``), that version's
CLI is timed in the same rotation: a before/after on one machine, whatever
its load. Every process runs with Python's bytecode cache on (in
``WORK/pycache``, as an installed package has one; ``PYTHONDONTWRITEBYTECODE``
is dropped), and each side runs once untimed first.

Each process's wall time (interpreter start included) and CPU time (user +
system, from ``RUSAGE_CHILDREN``; above the wall time when BLAS threads spin)
is recorded; medians are printed with the ratios api / cli and cli / bare (wall
and CPU), and as reference points the interpreter's own start (``python -c
pass``), ``ptah --help``, the bare process with ``OPENBLAS_THREAD_TIMEOUT=4``
(OpenBLAS's threads sleeping at once after a product, as ptah's command line
sets it) and **the CLI's imports alone**: a fresh process, with that setting,
importing every module a CLI evaluate held when it ended (listed once, untimed,
by a CLI process that writes ``sys.modules`` at exit), in the order it imported
them, and running nothing else -- what no change to the evaluation's work can
win back -- and the same without ptah's and its add-ons' own modules (the
libraries and the standard library they pull in). The CPU target is read against both bare processes. The numbers must agree: the CLI's and the API's reports hold the same
runs, ptah's per-case nDCG@10, Recall@10 and MRR@10 equal pytrec_eval's on the
bare pipeline's rankings (1e-9), and the means equal the SciFact numbers
recorded in ``benchmarks/RESULTS.md``. Exit 0 when they agree, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

DEFAULT_DATASET = REPO.parent / "shared" / "datasets" / "scifact"
RECORDED = {
    "ndcg": 0.6450817,
    "recall": 0.7833333,
    "mrr": 0.6047249,
}  # benchmarks/RESULTS.md, SciFact section
MEASURES = {"ndcg": "ndcg_cut_10", "recall": "recall_10", "mrr": "recip_rank"}

BARE = r"""
import json, sys
import numpy as np
import pytrec_eval

folder, qrels_file = sys.argv[1], sys.argv[2]
documents = np.load(folder + "/documents.npy")
queries = np.load(folder + "/queries.npy")
with open(folder + "/ids.json", encoding="utf-8") as handle:
    ids = json.load(handle)
doc_ids, query_ids = ids["documents"], ids["queries"]
wanted = set(query_ids)
qrels = {}
with open(qrels_file, encoding="utf-8") as handle:
    next(handle)
    for line in handle:
        query, doc, grade = line.rstrip("\r\n").split("\t")
        if query in wanted:
            qrels.setdefault(query, {})[doc] = int(grade)
scores = queries @ documents.T
top = np.argpartition(-scores, 10, axis=1)[:, :10]
run = {q: {doc_ids[j]: float(scores[i, j]) for j in top[i]} for i, q in enumerate(query_ids)}
measured = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.10", "recip_rank"}).evaluate(run)
json.dump(measured, sys.stdout)
"""

MODULES = r"""
import atexit
import sys

listing = sys.argv.pop(1)


@atexit.register
def write():
    with open(listing, "w", encoding="utf-8") as handle:
        handle.write("\n".join(name for name in sys.modules if name != "__main__"))


from ptah.cli import main

main(sys.argv[1:])
"""

IMPORTS = r"""
import importlib
import sys

OWN = ("ptah", "ptah_serve", "ptah_ray")  # left out with --libraries
libraries_only = sys.argv[2:] == ["--libraries"]
with open(sys.argv[1], encoding="utf-8") as handle:
    for name in handle.read().split():
        if not (libraries_only and name.partition(".")[0] in OWN):
            importlib.import_module(name)
"""

API = r"""
import sys
import ptah

with ptah.open_project(sys.argv[1]) as project:
    project.evaluate(sys.argv[2]).save(sys.argv[3])
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "dataset", nargs="?", default=str(DEFAULT_DATASET), help="BEIR SciFact directory"
    )
    parser.add_argument(
        "--work",
        help="folder for the project (kept, and reused next time; default: a temporary one)",
    )
    parser.add_argument(
        "--repeats", type=int, default=5, help="timed runs of each side (default 5)"
    )
    parser.add_argument("--json", dest="json_file", help="also write the results as JSON here")
    parser.add_argument(
        "--other-tree",
        metavar="DIR",
        help="another copy of ptah (a folder holding its ptah/ package, e.g. from `git archive`) "
        "whose CLI is timed beside this one, interleaved: a before/after on one machine",
    )
    args = parser.parse_args(argv)

    dataset = Path(args.dataset).resolve()
    temporary = None if args.work else tempfile.mkdtemp(prefix="ptah-warm-")
    work = Path(args.work or temporary).resolve()
    try:
        paths = set_up(dataset, work)
        results = measure(paths, args.repeats, args.other_tree)
    finally:
        if temporary:
            shutil.rmtree(temporary, ignore_errors=True)
    print_results(results)
    if args.json_file:
        Path(args.json_file).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0 if results["agreement"]["agrees"] else 1


# -- setup (not timed) -------------------------------------------------------------------


def set_up(dataset: Path, work: Path) -> dict:
    """The project built and warm, and the bare pipeline's inputs; the paths every side needs."""
    import ptah
    from ptah.services.beir_import import import_beir

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    project_dir = work / "project"
    spec = project_dir / "ptah.yaml"
    if not spec.exists():
        import_beir(dataset, "test", project_dir, force=True)
    corpus = project_dir / "corpora" / "test-k10.yaml"
    bare = work / "bare"
    bare.mkdir(parents=True, exist_ok=True)
    with ptah.open_project(spec) as project:
        built = project.build()
        print(f"setup: build embedded {built.embedded} rows", file=sys.stderr)
        warm = project.evaluate(corpus)
        cached = warm.runs[0].generation.queries_from_cache
        print(
            f"setup: warm-up evaluate found {cached} of {len(warm.runs[0].cases)} queries cached",
            file=sys.stderr,
        )
        loaded = ptah.load_corpus(corpus)
        inner = project._opened  # the stored vectors, exactly as ptah reads them (not public API)
        generation = inner.generation()
        matrix = inner.matrix(generation)
        texts = [case.query for case in loaded.cases]
        found = inner.store().cached_queries(generation.identity.identity, texts)
        np.save(bare / "documents.npy", np.ascontiguousarray(matrix.vectors, dtype=np.float32))
        np.save(bare / "queries.npy", np.stack([found[text] for text in texts]).astype(np.float32))
    (bare / "ids.json").write_text(
        json.dumps({"documents": list(matrix.keys), "queries": [case.id for case in loaded.cases]}),
        encoding="utf-8",
    )
    executable = Path(sys.executable).with_name("ptah")
    return {
        "spec": str(spec),
        "corpus": str(corpus),
        "project": str(project_dir),
        "bare": str(bare),
        "qrels": str(dataset / "qrels" / "test.tsv"),
        "output": str(work / "out"),
        "work": str(work),
        "ptah": [str(executable)] if executable.exists() else [sys.executable, "-m", "ptah"],
    }


# -- the timed sides -----------------------------------------------------------------------


def child_environment(work: str) -> dict:
    """This environment, with Python's bytecode cached (under WORK, not in the repository), as an
    installed package has it: ``PYTHONDONTWRITEBYTECODE`` would make every process compile ptah from
    source again."""
    environment = {
        key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"
    }
    environment["PYTHONPYCACHEPREFIX"] = os.path.join(work, "pycache")
    return environment


def process(argv: list[str], cwd: str, env: dict | None = None) -> tuple[float, float, str]:
    """Run one process; its wall seconds, CPU seconds (user + system) and stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    clock = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - clock
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{argv[:3]} exited {done.returncode}: {done.stderr.strip()[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout


def measure(paths: dict, repeats: int, other_tree: str | None = None) -> dict:
    import ptah

    os.makedirs(paths["output"], exist_ok=True)
    cli_out, api_out = (
        os.path.join(paths["output"], "cli.json"),
        os.path.join(paths["output"], "api.json"),
    )
    python, env = sys.executable, child_environment(paths["work"])
    outputs: dict[str, object] = {}

    def bare():
        wall, cpu, out = process(
            [python, "-c", BARE, paths["bare"], paths["qrels"]], paths["project"], env
        )
        outputs["bare"] = out
        return wall, cpu

    def arguments_of_cli() -> list[str]:
        return [
            "inference",
            "evaluate",
            "--corpus",
            paths["corpus"],
            "--spec",
            paths["spec"],
            "--output",
            cli_out,
        ]

    def cli():
        wall, cpu, out = process([*paths["ptah"], *arguments_of_cli()], paths["project"], env)
        outputs["cli_stdout_lines"] = out.count("\n")
        return wall, cpu

    def api():
        wall, cpu, _ = process(
            [python, "-c", API, paths["spec"], paths["corpus"], api_out], paths["project"], env
        )
        return wall, cpu

    project = ptah.open_project(paths["spec"])
    project.evaluate(paths["corpus"])  # the first call in this process: imports, caches

    def in_process():
        cpu, clock = time.process_time(), time.perf_counter()
        outputs["in_process"] = project.evaluate(paths["corpus"])
        return time.perf_counter() - clock, time.process_time() - cpu

    sides = {"bare": bare, "cli": cli, "api": api, "api-in-process": in_process}
    if other_tree:

        def other_cli():
            script = "import sys; sys.path.insert(0, sys.argv.pop(1)); from ptah.cli import main; main(sys.argv[1:])"
            argv = [
                python,
                "-c",
                script,
                os.path.abspath(other_tree),
                "inference",
                "evaluate",
                "--corpus",
                paths["corpus"],
                "--spec",
                paths["spec"],
                "--output",
                os.path.join(paths["output"], "other.json"),
            ]
            return process(argv, paths["project"], env)[:2]

        sides["cli (other tree)"] = other_cli
    quiet = env | {"OPENBLAS_THREAD_TIMEOUT": "4"}  # what ptah's command line sets
    listing = os.path.join(paths["output"], "cli-modules.txt")
    process(
        [python, "-c", MODULES, listing, *arguments_of_cli()], paths["project"], env
    )  # untimed: the modules a CLI evaluate imports
    references = {
        "bare, OPENBLAS_THREAD_TIMEOUT=4": lambda: process(
            [python, "-c", BARE, paths["bare"], paths["qrels"]], paths["project"], quiet
        )[:2],
        "the CLI's imports alone, OPENBLAS_THREAD_TIMEOUT=4": lambda: process(
            [python, "-c", IMPORTS, listing], paths["project"], quiet
        )[:2],
        "the same but ptah's own modules (the libraries), OPENBLAS_THREAD_TIMEOUT=4": lambda: (
            process([python, "-c", IMPORTS, listing, "--libraries"], paths["project"], quiet)[:2]
        ),
        "python -c pass": lambda: process([python, "-c", "pass"], paths["project"], env)[:2],
        "ptah --help": lambda: process([*paths["ptah"], "--help"], paths["project"], env)[:2],
    }
    for warm_up in (
        *sides.values(),
        *references.values(),
    ):  # untimed: bytecode written, files in the page cache
        warm_up()
    walls: dict[str, list[float]] = {name: [] for name in [*sides, *references]}
    cpus: dict[str, list[float]] = {name: [] for name in walls}
    order = list(sides) + list(references)
    try:
        for repeat in range(repeats):
            for name in order if repeat % 2 == 0 else reversed(order):
                wall, cpu = {**sides, **references}[name]()
                walls[name].append(wall)
                cpus[name].append(cpu)
    finally:
        project.close()

    medians = {name: statistics.median(values) for name, values in walls.items()}
    cpu_medians = {name: statistics.median(values) for name, values in cpus.items()}
    report = outputs["in_process"]
    return {
        "repeats": repeats,
        "command": paths["ptah"]
        + ["inference", "evaluate", "--corpus", "corpora/test-k10.yaml", "--output", "FILE"],
        "wall_seconds": walls,
        "cpu_seconds": cpus,
        "median_wall_seconds": medians,
        "median_cpu_seconds": cpu_medians,
        "ratios": {
            "api / cli": medians["api"] / medians["cli"],
            "cli / bare": medians["cli"] / medians["bare"],
            "api / bare": medians["api"] / medians["bare"],
            "cli / bare, CPU": cpu_medians["cli"] / cpu_medians["bare"],
            "cli / bare with OPENBLAS_THREAD_TIMEOUT=4, CPU": cpu_medians["cli"]
            / cpu_medians["bare, OPENBLAS_THREAD_TIMEOUT=4"],
            "the CLI's imports alone / bare with OPENBLAS_THREAD_TIMEOUT=4, CPU": cpu_medians[
                "the CLI's imports alone, OPENBLAS_THREAD_TIMEOUT=4"
            ]
            / cpu_medians["bare, OPENBLAS_THREAD_TIMEOUT=4"],
            "api / bare, CPU": cpu_medians["api"] / cpu_medians["bare"],
            **(
                {
                    "cli (other tree) / bare, CPU": cpu_medians["cli (other tree)"]
                    / cpu_medians["bare"]
                }
                if "cli (other tree)" in cpu_medians
                else {}
            ),
        },
        "cli_target_ratio": 2.5,  # issue 42, item 1: the CLI process within 2.5x the bare one
        "in_process_timings": dict(report.timings),
        "cli_stdout_lines": outputs["cli_stdout_lines"],
        "agreement": agreement(report, cli_out, api_out, json.loads(outputs["bare"])),
        "environment": dict(report.environment),
    }


def agreement(report, cli_out: str, api_out: str, bare: dict) -> dict:
    """The CLI's, the API's and the in-process reports hold the same runs; ptah's per-case numbers
    equal the bare pipeline's pytrec_eval ones."""
    with open(cli_out, encoding="utf-8") as handle:
        cli_runs = json.load(handle)["runs"]
    with open(api_out, encoding="utf-8") as handle:
        api_runs = json.load(handle)["runs"]
    in_process_runs = json.loads(json.dumps(report.to_dict()["runs"]))
    worst = 0.0
    for case in cli_runs[0]["cases"]:
        theirs = bare.get(case["id"], {})
        for mine, their in MEASURES.items():
            worst = max(worst, abs(case["metrics"][mine] - theirs.get(their, 0.0)))
    aggregates = cli_runs[0]["aggregates"]
    means = {name: aggregates[name]["value"] for name in MEASURES}
    bare_means = {
        name: float(np.mean([bare[q][key] for q in bare])) for name, key in MEASURES.items()
    }
    # a run's cost is its own process's timings; everything else must be the same
    cli_runs, api_runs, in_process_runs = (
        [{key: value for key, value in run.items() if key != "cost"} for run in runs]
        for runs in (cli_runs, api_runs, in_process_runs)
    )
    same_runs = cli_runs == api_runs == in_process_runs
    recorded = all(abs(means[name] - value) < 5e-8 for name, value in RECORDED.items())
    return {
        "cli_api_in_process_runs_identical": same_runs,
        "max_abs_difference_ptah_vs_bare_per_case": worst,
        "means": means,
        "bare_means": bare_means,
        "equal_recorded_scifact_numbers": recorded,
        "agrees": same_runs and worst <= 1e-9 and recorded,
    }


# -- the results ------------------------------------------------------------------------------


def print_results(results: dict) -> None:
    walls, cpus = results["median_wall_seconds"], results["median_cpu_seconds"]
    print(
        f"warm SciFact evaluate (300 cases, 5,183 x 384), median of {results['repeats']}, interleaved"
    )
    print()
    print("| side | wall s (median) | CPU s (median) | all wall s |")
    print("| --- | --- | --- | --- |")
    for name, values in results["wall_seconds"].items():
        print(
            f"| {name} | {walls[name]:.3f} | {cpus[name]:.3f} | {', '.join(f'{v:.3f}' for v in values)} |"
        )
    print()
    for name, value in results["ratios"].items():
        print(f"{name}: {value:.2f}x")
    target = results["cli_target_ratio"]
    quiet = "bare, OPENBLAS_THREAD_TIMEOUT=4"
    for what, bare, medians in (
        ("CPU", "bare", cpus),
        ("wall", "bare", walls),
        ("CPU", quiet, cpus),
    ):
        ratio = medians["cli"] / medians[bare]
        met = "met" if ratio <= target else "NOT met"
        print(f"CLI within {target}x the {bare} process in {what}: {met} ({ratio:.2f}x)")
    imports = cpus["the CLI's imports alone, OPENBLAS_THREAD_TIMEOUT=4"]
    print(
        f"CPU the target leaves the CLI against the {quiet} process: {target * cpus[quiet]:.3f} s, "
        f"of which its imports alone take {imports:.3f} s"
    )
    print(
        "in-process steps (s): "
        + ", ".join(f"{k} {v:.3f}" for k, v in results["in_process_timings"].items())
    )
    agreed = results["agreement"]
    print(
        f"numbers: CLI, API and in-process runs identical: {agreed['cli_api_in_process_runs_identical']}; "
        f"ptah vs bare per case max |diff| {agreed['max_abs_difference_ptah_vs_bare_per_case']:.3g}; "
        + ", ".join(f"{k} {v:.7f}" for k, v in agreed["means"].items())
        + f"; equal to the recorded SciFact numbers: {agreed['equal_recorded_scifact_numbers']}"
    )


if __name__ == "__main__":
    sys.exit(main())
