"""A model judge on BEIR SciFact: calibrated on a sample whose truth is known, and what it does to a
gate's U.

    python benchmarks/model_judge.py --work DIR [--dataset DIR] [--sample 100] [--dev-queries 150]
    [--seed 7]

The work folder holds a SciFact project (``ptah import beir`` of the test
split, with the MiniLM generation built; made when missing). Then, in one
invocation:

1. **The threshold, on the development split.** ``--dev-queries`` queries of
   SciFact's *train* split (drawn with the seed) are searched with MiniLM; each
   of their top-10 rows is a pair whose truth is the train qrels (a row they do
   not list is not relevant, SciFact's convention). The encoder judge's score
   (the bi-encoder's dot product of the query and the row's judging text) is
   computed for every pair and the threshold with the highest Cohen's kappa is
   chosen. The test split is not looked at.
2. **Holes whose truth is known.** Half of the test corpus's judgements
   (drawn with the seed) are hidden: a hidden relevant row that a run ranks in
   its top 10 is a hole that is truly relevant; every other hole is taken as
   not relevant (SciFact's convention). The person's random sample is played
   by that truth -- a benchmark's labels, not a fresh person.
3. **The gate.** BM25 (the lexical channel) is the baseline and MiniLM the
   current run on the hidden corpus, with ``--max-drop nDCG=0``; the drop is
   decided by the holes. A random sample of ``--sample`` of MiniLM's holes is
   judged from the truth (``ptah corpus sample --grades``), the encoder
   judge grades every hole (``ptah corpus judge-model``), and the gate is
   evaluated again. The report's judge entry gives kappa, TPR/TNR, the FNR
   bound and U with and without the judge; the truth of every hole checks the
   bound.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

DEFAULT_DATASET = REPO.parent / "shared" / "datasets" / "scifact"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--work", required=True, help="the folder of the SciFact project (made when missing)"
    )
    parser.add_argument(
        "--dataset", default=str(DEFAULT_DATASET), help="BEIR SciFact directory (read in place)"
    )
    parser.add_argument(
        "--sample", type=int, default=100, help="holes a 'person' judges at random (default 100)"
    )
    parser.add_argument(
        "--dev-queries", type=int, default=150, help="train queries that choose the threshold"
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", dest="json_file", help="also write the results as JSON here")
    args = parser.parse_args(argv)
    results = measure(
        Path(args.dataset).resolve(),
        Path(args.work).resolve(),
        args.sample,
        args.dev_queries,
        args.seed,
    )
    print(json.dumps(results, indent=2))
    if args.json_file:
        Path(args.json_file).write_text(json.dumps(results, indent=2) + "\n")
    return 0


def ptah_cli(work: Path, *argv: str, ok=(0,)) -> str:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "ptah", *argv], cwd=work, env=env, capture_output=True, text=True
    )
    if done.returncode not in ok:
        raise SystemExit(f"ptah {' '.join(argv)}: exit {done.returncode}\n{done.stderr}")
    return done.stdout


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def qrels(path: Path) -> dict[str, dict[str, float]]:
    found: dict[str, dict[str, float]] = {}
    for line in path.read_text().splitlines()[1:]:
        query, key, grade = line.split("\t")
        if float(grade) > 0:
            found.setdefault(query, {})[key] = float(grade)
    return found


def corpus_yaml(name: str, cases: list[tuple[str, str, dict[str, float]]]) -> str:
    lines = ["version: 1", f"name: {json.dumps(name)}", "default_k: 10", "cases:"]
    for case_id, query, relevant in cases:
        lines += [f"  - id: {json.dumps(case_id)}", f"    query: {json.dumps(query)}"]
        if relevant:
            lines.append("    relevant:")
            lines += [
                f"      {json.dumps(key)}: {grade:g}" for key, grade in sorted(relevant.items())
            ]
    return "\n".join(lines) + "\n"


def measure(dataset: Path, work: Path, sample: int, dev_queries: int, seed: int) -> dict:
    import ptah
    from ptah.adapters.rerankers import RerankContext, open_reranker
    from ptah.core.calibration import Agreement
    from ptah.core.spec import RerankSettings
    from ptah.services.beir_import import import_beir

    clock = time.perf_counter()
    spec = work / "ptah.yaml"
    if not spec.exists():
        import_beir(dataset, "test", work, force=True)
    queries = {row["_id"]: row["text"] for row in read_jsonl(dataset / "queries.jsonl")}
    train, test = qrels(dataset / "qrels" / "train.tsv"), qrels(dataset / "qrels" / "test.tsv")
    rng = random.Random(seed)

    # 1. the threshold, chosen on train queries only
    dev_ids = sorted(rng.sample(sorted(train), min(dev_queries, len(train))), key=int)
    cached = (
        work / f"dev-scores-{seed}-{len(dev_ids)}.json"
    )  # the slow part (a text embedded at a time), kept
    if cached.exists():
        scored = [(score, truth) for score, truth in json.loads(cached.read_text())]
    else:
        (work / "dev.yaml").write_text(
            corpus_yaml("scifact train (dev)", [(q, queries[q], train[q]) for q in dev_ids])
        )
        with ptah.open_project(spec) as project:
            project.build()
            report = project.evaluate(ptah.load_corpus(work / "dev.yaml"), generations=["minilm"])
            pairs = [(case.id, key) for case in report.runs[0].cases for key in case.keys[:10]]
            inner = project._opened  # the service layer's project: its source and embedders
            texts = inner.judging_texts({key for _, key in pairs})
            context = RerankContext(
                inner.spec.root,
                os.environ,
                lambda name: inner.embedder(inner.spec.generation(name)),
            )
            reranker = open_reranker(RerankSettings("bi-encoder", generation="minilm"), context)
            scored = []
            for case_id in dev_ids:
                keys = [key for case, key in pairs if case == case_id]
                for key, score in zip(
                    keys, reranker.scores(queries[case_id], [texts[key] for key in keys])
                ):
                    scored.append((float(score), key in train[case_id]))
        cached.write_text(json.dumps(scored))
    dev_seconds = time.perf_counter() - clock

    def kappa_at(threshold: float) -> float:
        table = Agreement.of(
            (1.0 if truth else 0.0, 1.0 if score >= threshold else 0.0) for score, truth in scored
        )
        return table.kappa if table.kappa is not None else -1.0

    candidates = sorted({score for score, _ in scored})
    threshold = max(candidates, key=kappa_at)
    dev = {
        "queries": len(dev_ids),
        "pairs": len(scored),
        "relevant": sum(1 for _, truth in scored if truth),
        "threshold": threshold,
        "kappa": kappa_at(threshold),
        "seconds": round(dev_seconds, 1),
    }

    # 2. half of the test judgements hidden
    judged = sorted((q, key) for q in test for key in test[q])
    hidden = set(rng.sample(judged, len(judged) // 2))
    kept = {q: {key: g for key, g in test[q].items() if (q, key) not in hidden} for q in test}
    # a case whose every judgement is hidden declares nothing, which a corpus refuses: it is left
    # out (every measure is N/A on it anyway), and its hidden rows are no hole of any case Each
    # step's output is kept in the work folder and a second invocation reuses it (the judging steps
    # take minutes on two CPUs); delete the folder's hidden.* and *.json files to start afresh.
    if not (work / "hidden.yaml").exists():
        (work / "hidden.judged.yaml").unlink(missing_ok=True)
        (work / "hidden.yaml").write_text(
            corpus_yaml(
                "scifact test @10, half of its judgements hidden",
                [(q, queries[q], kept[q]) for q in sorted(test, key=int) if kept[q]],
            )
        )
    truth = {(q, key) for q, key in hidden}
    text = spec.read_text().split("\njudges:\n")[0]
    spec.write_text(
        text.rstrip("\n") + f"\njudges:\n  encoder: {{kind: encoder, generation: minilm, "
        f"threshold: {threshold!r}}}\n"
    )

    # 3. the gate: MiniLM against BM25, before and after the sample and the judge
    if not (work / "bm25.json").exists():
        ptah_cli(
            work,
            "inference",
            "evaluate",
            "--corpus",
            "hidden.yaml",
            "--channel",
            "lexical",
            "--output",
            "bm25.json",
        )

    def gated(output: str, again: bool = False) -> dict:
        if again or not (work / output).exists():
            ptah_cli(
                work,
                "inference",
                "evaluate",
                "--corpus",
                "hidden.yaml",
                "-g",
                "minilm",
                "--baseline",
                "bm25.json",
                "--max-drop",
                "nDCG=0",
                "--output",
                output,
                ok=(0, 1, 4),
            )
        return json.loads((work / output).read_text())

    before = gated("before.json")
    holes = json.loads(ptah_cli(work, "corpus", "holes", "hidden.yaml", "-g", "minilm", "--json"))
    population = [(case["id"], hole["key"]) for case in holes["cases"] for hole in case["holes"]]
    (work / "truth.tsv").write_text(
        "".join(f"{case}\t{key}\t{1 if (case, key) in truth else 0}\n" for case, key in population)
    )
    from ptah.adapters.judgements_yaml import read_record

    if not read_record(work / "hidden.yaml").samples:
        ptah_cli(
            work,
            "corpus",
            "sample",
            "hidden.yaml",
            str(sample),
            "--seed",
            str(seed),
            "-g",
            "minilm",
            "--grades",
            "truth.tsv",
        )
    sampled = gated("sampled.json")
    clock = time.perf_counter()
    judged_out = json.loads(
        ptah_cli(work, "corpus", "judge-model", "hidden.yaml", "encoder", "-g", "minilm", "--json")
    )
    judge_seconds = time.perf_counter() - clock
    after = gated("after.json", again=True)

    def gate_of(report: dict) -> dict:
        (gate,) = [g for g in report["gates"] if g["name"].startswith("max-ndcg")]
        return gate

    models = read_record(work / "hidden.yaml").models
    (by,) = models
    grades = {(case, key): j.grade for case, keys in models[by].items() for key, j in keys.items()}
    now_holes = [
        (case["id"], hole["key"])
        for case in json.loads(
            ptah_cli(work, "corpus", "holes", "hidden.yaml", "-g", "minilm", "--json")
        )["cases"]
        for hole in case["holes"]
    ]
    rejected = [pair for pair in now_holes if grades.get(pair) == 0]
    accepted = [pair for pair in now_holes if (grades.get(pair) or 0) > 0]
    all_pairs = Agreement.of(
        (1.0 if pair in truth else 0.0, grades[pair]) for pair in now_holes if pair in grades
    )
    result = {
        "dev": dev,
        "hidden": {
            "judgements": len(judged),
            "hidden": len(hidden),
            "cases_kept": sum(1 for q in test if kept[q]),
            "hidden_in_kept_cases": sum(1 for q, _ in hidden if kept[q]),
        },
        "aggregates": {
            "bm25": json.loads((work / "bm25.json").read_text())["runs"][0]["aggregates"],
            "minilm": before["runs"][0]["aggregates"],
        },
        "gate_before": {
            key: gate_of(before)["holes"][key]
            for key in ("holes", "flip_count", "plausible_relevant")
        }
        | {"inconclusive": gate_of(before)["inconclusive"], "passed": gate_of(before)["passed"]},
        "gate_sampled": {
            key: gate_of(sampled)["holes"][key]
            for key in ("holes", "flip_count", "plausible_relevant")
        }
        | {"inconclusive": gate_of(sampled)["inconclusive"], "passed": gate_of(sampled)["passed"]},
        "gate_after": {
            key: gate_of(after)["holes"][key]
            for key in ("holes", "flip_count", "plausible_relevant")
        }
        | {
            "inconclusive": gate_of(after)["inconclusive"],
            "passed": gate_of(after)["passed"],
            "judges": gate_of(after)["holes"].get("judges"),
        },
        "judge_run": judged_out | {"seconds": round(judge_seconds, 1)},
        "truth_on_every_hole_now": {
            "holes": len(now_holes),
            "relevant": sum(1 for p in now_holes if p in truth),
            "model_rejected": len(rejected),
            "relevant_among_rejected": sum(1 for p in rejected if p in truth),
            "model_accepted": len(accepted),
            "relevant_among_accepted": sum(1 for p in accepted if p in truth),
            "agreement": all_pairs.as_dict(),
        },
        "seconds": round(time.perf_counter() - clock, 1),
    }
    shutil.copy(work / "after.json", work / "model-judge-report.json")
    return result


if __name__ == "__main__":
    sys.exit(main())
