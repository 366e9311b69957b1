"""How much the holes in BEIR SciFact's judgements could move its comparisons: judged@10 and the
low/high bounds.

    python benchmarks/scifact_holes.py [DATASET_DIR] [--work DIR] [--json FILE]

DATASET_DIR defaults to ``../shared/datasets/scifact`` beside this repository
(read in place, never copied into it). The script imports the test split into
a project (``ptah import beir``'s service; kept in ``--work`` and reused when
it is already there), builds the MiniLM generation if needed, and evaluates
``corpora/test-k10.yaml`` with the vector, lexical and hybrid channels in one
evaluation (the vector run is the reference). For each run it prints judged@10
(mean, numerator / denominator, holes), and each measure's mean at its low
bound (a hole gains 0: the published convention) and its high bound (each
hole in the top 10 relevant at the case's highest grade); for each candidate,
the delta against the reference at the low bounds and at the high bounds, the
widest delta the holes allow (candidate high - reference low, candidate low -
reference high), and the finding ptah reports.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

DEFAULT_DATASET = REPO.parent / "shared" / "datasets" / "scifact"
CHANNELS = ("vector", "lexical", "hybrid")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "dataset", nargs="?", default=str(DEFAULT_DATASET), help="BEIR SciFact directory"
    )
    parser.add_argument(
        "--work", help="folder for the project (kept and reused; default: a temporary folder)"
    )
    parser.add_argument("--json", dest="json_file", help="also write the results as JSON here")
    args = parser.parse_args(argv)
    if args.work:
        results = measure(Path(args.dataset).resolve(), Path(args.work).resolve())
    else:
        with tempfile.TemporaryDirectory(prefix="ptah-scifact-holes-") as temporary:
            results = measure(Path(args.dataset).resolve(), Path(temporary) / "scifact")
    print_results(results)
    if args.json_file:
        Path(args.json_file).write_text(json.dumps(results, indent=2) + "\n")
    return 0


def measure(dataset: Path, project_dir: Path) -> dict:
    import ptah
    from ptah.services.beir_import import import_beir

    spec = project_dir / "ptah.yaml"
    if not spec.exists():
        import_beir(dataset, "test", project_dir, force=True)
    with ptah.open_project(spec) as project:
        clock = time.perf_counter()
        built = project.build()
        build_seconds = time.perf_counter() - clock
        clock = time.perf_counter()
        report = project.evaluate(
            ptah.load_corpus(project_dir / "corpora" / "test-k10.yaml"), channels=CHANNELS
        )
        evaluate_seconds = time.perf_counter() - clock
    runs = {}
    for run in report.runs:
        runs[run.name] = {
            "judged": {
                "value": run.judged.value,
                "numerator": run.judged.numerator,
                "denominator": run.judged.denominator,
                "undefined": run.judged.undefined,
                "holes": run.holes,
            },
            "cases_with_holes": sum(1 for case in run.cases if case.holes),
            "means": {
                m.key: {
                    "low": run.means[str(m)].value,
                    "high": run.means[str(m)].high,
                    "denominator": run.means[str(m)].denominator,
                }
                for m in run.measures
            },
        }
    comparisons = {}
    reference = report.runs[0]
    for candidate in report.comparison.candidates:
        run = report.run(candidate["run"])
        entries = {}
        for key, entry in candidate["measures"].items():
            name = str(next(m for m in run.measures if m.key == key))
            ref, cand = reference.means[name], run.means[name]
            entries[key] = {
                "delta_low": cand.value - ref.value,
                "delta_high": cand.high - ref.high,
                "widest": [cand.value - ref.high, cand.high - ref.value],
                "p_value": entry["test"]["p_value"],
                "finding": entry["finding"],
                "holes": entry["holes"],
            }
        comparisons[candidate["run"]] = entries
    return {
        "dataset": str(dataset),
        "cases": report.corpus["cases"],
        "reference": reference.name,
        "runs": runs,
        "comparisons": comparisons,
        "rows_embedded": getattr(built, "embedded", None),
        "seconds": {"build": round(build_seconds, 2), "evaluate": round(evaluate_seconds, 2)},
    }


def print_results(results: dict) -> None:
    print(f"SciFact test, {results['cases']} cases, k = 10; reference {results['reference']}")
    print(
        f"{'run':<22} {'judged@10':>10} {'holes':>6} {'nDCG@10 low':>12} {'high':>7} {'recall low':>11} {'high':>7}"
        f" {'MRR low':>8} {'high':>7}"
    )
    for name, run in results["runs"].items():
        means = run["means"]
        print(
            f"{name:<22} {run['judged']['value']:>10.4f} {run['judged']['holes']:>6} "
            f"{means['ndcg']['low']:>12.4f} {means['ndcg']['high']:>7.4f} {means['recall']['low']:>11.4f} "
            f"{means['recall']['high']:>7.4f} {means['mrr']['low']:>8.4f} {means['mrr']['high']:>7.4f}"
        )
    for name, entries in results["comparisons"].items():
        for key, entry in entries.items():
            print(
                f"{name} vs {results['reference']} {key}: delta {entry['delta_low']:+.4f} (low), "
                f"{entry['delta_high']:+.4f} (high), widest {entry['widest'][0]:+.4f}..{entry['widest'][1]:+.4f}; "
                f"p {entry['p_value']:.4f}; {entry['finding']}"
            )
    print(f"seconds: {results['seconds']}")


if __name__ == "__main__":
    sys.exit(main())
