"""How many SciFact questions a comparison needs to see an nDCG@10 drop, overall and per slice
(``ptah corpus plan``).

    python benchmarks/slices_plan.py --scifact PROJECT [--json FILE]

PROJECT is a SciFact project that ``ptah import beir`` made and whose MiniLM
generation is built (``benchmarks/scifact_holes.py --work DIR`` makes one).
The script tags each test query of ``PROJECT/corpora/test-k10.yaml`` by the
tercile of its claim's length in words (``short``, ``medium``, ``long``: the
queries sorted by length, then id, and cut into three equal parts) -- a
synthetic tag, for a corpus whose questions carry no category -- and writes
the tagged copy to ``PROJECT/corpora/test-k10-terciles.yaml`` (tags are
outside the corpus digest: it is the same corpus). It evaluates MiniLM
(``vector``, the reference) and BM25 (``lexical``) on it in one report,
then runs ``ptah corpus plan`` on that report for nDCG@10 drops of 0.01, 0.02
and 0.05 at power 0.8 and alpha 0.05: the paired normal approximation over
the spread of the per-case differences BM25 - MiniLM, for the 300 cases and
for each tercile's 100. It then checks the overall plans for 0.02 and 0.05 by
simulation on SciFact's own differences (:func:`simulated_power`). Printed
as a table (and ``--json``).

Run it while no other evaluation of the same project runs: the two would
share the two CPUs and the timing printed would mean nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

DROPS = (0.01, 0.02, 0.05)
SIMULATED = (
    0.02,
    0.05,
)  # the overall plans checked by simulation (0.01's 9,000-odd cases would take minutes)
SIMULATIONS, SIMULATION_RESAMPLES, SEED = 200, 2000, 0
TERCILES = ("short", "medium", "long")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--scifact",
        required=True,
        help="the SciFact project folder (ptah.yaml, corpora/test-k10.yaml)",
    )
    parser.add_argument("--json", dest="json_file", help="also write the results as JSON here")
    args = parser.parse_args(argv)
    results = measure(Path(args.scifact).resolve())
    print_results(results)
    if args.json_file:
        Path(args.json_file).write_text(json.dumps(results, indent=2) + "\n")
    return 0


def tagged_copy(project: Path) -> tuple[Path, dict[str, int]]:
    """Write the test corpus with each case tagged by its claim-length tercile; the words of each
    tercile's longest."""
    import ptah
    from ptah.adapters.beir import corpus_yaml_text

    corpus = ptah.load_corpus(project / "corpora" / "test-k10.yaml")
    order = sorted(corpus.cases, key=lambda case: (len(case.query.split()), case.id))
    size = len(order) / len(TERCILES)
    tag_of = {
        case.id: TERCILES[min(int(index // size), len(TERCILES) - 1)]
        for index, case in enumerate(order)
    }
    longest = {
        tag: max(len(case.query.split()) for case in order if tag_of[case.id] == tag)
        for tag in TERCILES
    }
    tagged = replace(
        corpus, cases=tuple(replace(case, tags=(tag_of[case.id],)) for case in corpus.cases)
    )
    assert tagged.digest == corpus.digest  # tags are outside the digest
    path = project / "corpora" / "test-k10-terciles.yaml"
    header = (
        "SciFact test, k = 10, each case tagged by the tercile of its claim's length in words (synthetic:\n"
        "written by benchmarks/slices_plan.py to plan per slice)."
    )
    path.write_text(corpus_yaml_text(tagged, header))
    return path, longest


def ptah_cli(*args: object) -> subprocess.CompletedProcess:
    environment = os.environ | {
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    }
    return subprocess.run(
        [sys.executable, "-m", "ptah", *map(str, args)],
        capture_output=True,
        text=True,
        env=environment,
        check=False,
    )


def measure(project: Path) -> dict:
    corpus, longest = tagged_copy(project)
    report = project / "slices-plan-report.json"
    clock = time.perf_counter()
    done = ptah_cli(
        "inference",
        "evaluate",
        "--spec",
        project / "ptah.yaml",
        "--corpus",
        corpus,
        "--channel",
        "vector",
        "--channel",
        "lexical",
        "--output",
        report,
    )
    seconds = time.perf_counter() - clock
    if done.returncode not in (
        0,
        1,
    ):  # 1: a run missed required keys, which is a verdict, not a failure
        raise SystemExit(f"evaluate exited {done.returncode}: {done.stderr.strip()}")
    document = json.loads(report.read_text())
    runs = {run["search"]["channel"]: run for run in document["runs"]}
    candidate = document["comparison"]["candidates"][0]
    plans = {}
    for drop in DROPS:
        done = ptah_cli(
            "corpus", "plan", corpus, "--baseline", report, "--detect", f"nDCG={drop}", "--json"
        )
        if done.returncode != 0:
            raise SystemExit(f"corpus plan exited {done.returncode}: {done.stderr.strip()}")
        (found,) = json.loads(done.stdout)["plans"]
        plans[str(drop)] = found
    slices = {}
    for tag in TERCILES:
        compared = candidate["slices"][tag]["measures"]["ndcg"]
        slices[tag] = {
            "cases": candidate["slices"][tag]["cases"],
            "longest_words": longest[tag],
            "vector": runs["vector"]["slices"][tag]["means"]["ndcg"]["value"],
            "lexical": runs["lexical"]["slices"][tag]["means"]["ndcg"]["value"],
            "delta": compared["delta"],
            "p_value": compared["test"]["p_value"],
            "adjusted_p": compared["adjusted_p"],
            "survives": compared["survives"],
        }
    whole = candidate["measures"]["ndcg"]
    reference = {case["id"]: case["metrics"]["ndcg"] for case in runs["vector"]["cases"]}
    differences = [
        case["metrics"]["ndcg"] - reference[case["id"]]
        for case in runs["lexical"]["cases"]
        if case["metrics"]["ndcg"] is not None and reference[case["id"]] is not None
    ]
    simulated = {
        str(drop): {
            "cases": plans[str(drop)]["corpus"]["needed"],
            "power": simulated_power(differences, drop, plans[str(drop)]["corpus"]["needed"]),
        }
        for drop in SIMULATED
    }
    return {
        "project": str(project),
        "corpus": str(corpus),
        "cases": document["corpus"]["cases"],
        "whole": {
            "vector": runs["vector"]["aggregates"]["ndcg"]["value"],
            "lexical": runs["lexical"]["aggregates"]["ndcg"]["value"],
            "delta": whole["delta"],
            "p_value": whole["test"]["p_value"],
        },
        "slices": slices,
        "family": document["comparison"]["family"],
        "plans": plans,
        "simulated": simulated,
        "seconds": {"evaluate": round(seconds, 1)},
    }


def simulated_power(differences: list[float], drop: float, cases: int) -> float:
    """The share of :data:`SIMULATIONS` corpora of ``cases`` cases whose sign-flip test (the
    comparison's, with :data:`SIMULATION_RESAMPLES` Monte Carlo resamples) finds p < 0.05, each
    case's difference drawn from SciFact's own BM25 - MiniLM differences moved to a mean of
    -``drop``: the plan's check on this measure's real, lumpy differences (most 0, many near +-1)
    rather than on a normal."""
    import numpy as np

    from ptah.core.significance import sign_flip_test

    rng = np.random.default_rng(SEED)
    pool = np.asarray(differences) - np.mean(differences) - drop
    found = 0
    for index in range(SIMULATIONS):
        drawn = rng.choice(pool, cases, replace=True)
        result = sign_flip_test(drawn.tolist(), resamples=SIMULATION_RESAMPLES, seed=index)
        found += result is not None and result.p_value < 0.05
    return found / SIMULATIONS


def print_results(results: dict) -> None:
    whole = results["whole"]
    print(
        f"SciFact test, {results['cases']} cases, k = 10; BM25 (lexical) against MiniLM (vector), nDCG@10"
    )
    print(
        f"{'slice':<8} {'cases':>5} {'words':>6} {'MiniLM':>7} {'BM25':>7} {'delta':>8} {'p':>7} {'Holm p':>7}"
    )
    print(
        f"{'all':<8} {results['cases']:>5} {'':>6} {whole['vector']:>7.4f} {whole['lexical']:>7.4f} "
        f"{whole['delta']:>+8.4f} {whole['p_value']:>7.4f}"
    )
    for tag, entry in results["slices"].items():
        print(
            f"{tag:<8} {entry['cases']:>5} {'<=' + str(entry['longest_words']):>6} {entry['vector']:>7.4f} "
            f"{entry['lexical']:>7.4f} {entry['delta']:>+8.4f} {entry['p_value']:>7.4f} {entry['adjusted_p']:>7.4f}"
        )
    family = results["family"]
    print(
        f"family: {family['tests']} slice tests, {family['correction']}: {family['surviving']} surviving"
    )
    print(
        "\ncases needed to see an nDCG@10 drop at power 0.8, alpha 0.05 (spread s of BM25 - MiniLM per case)"
    )
    print(
        f"{'slice':<8} {'has':>5} {'s':>7} "
        + " ".join(f"{'drop ' + drop:>10}" for drop in results["plans"])
    )
    first = next(iter(results["plans"].values()))
    rows = [("all", first["corpus"], [plan["corpus"] for plan in results["plans"].values()])]
    for index, entry in enumerate(first["slices"]):
        rows.append(
            (entry["tag"], entry, [plan["slices"][index] for plan in results["plans"].values()])
        )
    for name, entry, found in rows:
        print(
            f"{name:<8} {entry['cases']:>5} {entry['spread']:>7.4f} "
            + " ".join(f"{plan['needed']:>10,}" for plan in found)
        )
    for drop, entry in results["simulated"].items():
        print(
            f"simulated: {entry['cases']:,} cases drawn from SciFact's own differences moved to -{drop}: the "
            f"sign-flip test finds it in {entry['power']:.3f} of {SIMULATIONS} corpora (planned 0.8)"
        )
    print(f"\nevaluate: {results['seconds']['evaluate']} s")


if __name__ == "__main__":
    raise SystemExit(main())
