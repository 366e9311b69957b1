"""Reproduce the published all-MiniLM-L6-v2 numbers on BEIR SciFact (test) with ptah, and time ptah.

    python benchmarks/scifact.py [DATASET_DIR] [--work DIR] [--json FILE]

DATASET_DIR defaults to ``../shared/datasets/scifact`` beside this repository
(read at run time, never copied into it). In one invocation the script:

1. imports the dataset into a temporary project (``ptah import beir``'s
   service): ``source.db``, ``ptah.yaml`` with generation ``minilm``,
   ``corpora/test-k10.yaml`` and ``corpora/test-k100.yaml``;
2. times ptah through its public Python API (``import ptah``), in this
   process: ``project.build()`` (loads the model, embeds the 5,183
   documents), ``project.evaluate`` on the k10 corpus
   (embeds the 300 queries) and on the k100 corpus (queries now cached);
   then a *warm* evaluate of k10 on a freshly opened project (queries from
   the store's cache, no model load), and the same through the CLI
   (``python -m ptah inference evaluate``, interpreter start included);
3. runs a bare pipeline on the same data: read the BEIR files, encode
   ``(title + " " + text).strip()`` and the queries with sentence-transformers
   (same model folder, CPU, batch size 64, max_seq_length 256, normalised, as
   ptah does), exact search with numpy, nDCG@10 / Recall@10 / Recall@100 from
   pytrec_eval (``ndcg_cut.10``, ``recall.10``, ``recall.100``) and MRR@10 as
   MTEB computes it (reciprocal rank of the first relevant doc in the top 10);
4. checks ptah's TREC export: pytrec_eval on the run ``report.save(FILE, "trec")``
   writes and on ``qrels_lines`` of the k10 corpus must give ptah's per-case
   numbers;
5. prints ptah's numbers beside the bare pipeline's and the published ones,
   the wall-time ratio of ptah's build + both evaluates to the bare pipeline
   (target <= 1.05) and the warm evaluate's speed-up over it (target >= 20x).

Before anything is timed, sentence-transformers is imported and the model is
loaded once and discarded, so neither side pays the import or a cold file
cache. The bare pipeline runs first. Exit 0 when every measure is within
0.002 of the published figure and the TREC export agrees; 1 otherwise.

Published figures (test split, 300 queries), from ``../shared/datasets/scifact/SOURCE.md``, source
(A): GitHub ``embeddings-benchmark/results``, file
``results/sentence-transformers__all-MiniLM-L6-v2/8b3219a92973c328a8e22fadcfa821b5dc75636a/SciFact.json``
(mteb 1.12.75, dataset revision ``0228b52c…``, ``scores.test[0]``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

DEFAULT_DATASET = REPO.parent / "shared" / "datasets" / "scifact"
MODEL = "sentence-transformers/all-MiniLM-L6-v2"
BATCH_SIZE = 64  # ptah's default batch_size, which the generated ptah.yaml keeps
MAX_SEQ_LENGTH = 256
TOLERANCE = 0.002
PUBLISHED = {"nDCG@10": 0.64508, "Recall@10": 0.78333, "MRR@10": 0.60472, "Recall@100": 0.925}
PUBLISHED_SOURCE = (
    "embeddings-benchmark/results, results/sentence-transformers__all-MiniLM-L6-v2/"
    "8b3219a92973c328a8e22fadcfa821b5dc75636a/SciFact.json (mteb 1.12.75), "
    "as recorded in shared/datasets/scifact/SOURCE.md, source (A)"
)
MEASURES = tuple(PUBLISHED)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "dataset", nargs="?", default=str(DEFAULT_DATASET), help="BEIR SciFact directory"
    )
    parser.add_argument(
        "--work", help="folder for the project (default: a temporary folder, removed after)"
    )
    parser.add_argument("--json", dest="json_file", help="also write the results as JSON here")
    args = parser.parse_args(argv)

    dataset = Path(args.dataset).resolve()
    with tempfile.TemporaryDirectory(prefix="ptah-scifact-") as temporary:
        work = Path(args.work).resolve() if args.work else Path(temporary)
        model_path = warm_up()
        bare = run_bare(dataset, model_path)
        ours = run_ptah(dataset, work / "project")
    results = summarise(ours, bare)
    print_results(results)
    if args.json_file:
        Path(args.json_file).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    ok = (
        all(row["within"] for row in results["measures"].values())
        and results["trec_export"]["agrees"]
    )
    return 0 if ok else 1


def warm_up() -> Path:
    """Import sentence-transformers and load the model once, untimed; the model folder ptah
    resolves."""
    from ptah.adapters.embedders.resolve import resolve_model

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer

    model_path = resolve_model(MODEL, str(REPO))
    model = SentenceTransformer(str(model_path), device="cpu", local_files_only=True)
    model.encode(["warm up"], show_progress_bar=False)
    del model
    return model_path


# -- ptah ---------------------------------------------------------------------------


def run_ptah(dataset: Path, project_dir: Path) -> dict:
    """ptah through its public Python API (``import ptah``), as a notebook or a test suite would
    call it."""
    import ptah
    from ptah.services.beir_import import import_beir

    clock = time.perf_counter()
    summary = import_beir(dataset, "test", project_dir, force=True)
    seconds = {"import": time.perf_counter() - clock}
    spec = str(project_dir / "ptah.yaml")
    k10 = project_dir / "corpora" / "test-k10.yaml"
    k100 = project_dir / "corpora" / "test-k100.yaml"

    clock = time.perf_counter()
    with ptah.open_project(spec) as project:
        built = project.build()
        seconds["build"] = time.perf_counter() - clock
        clock = time.perf_counter()
        report10 = project.evaluate(ptah.load_corpus(k10))
        seconds["evaluate_k10"] = time.perf_counter() - clock
        clock = time.perf_counter()
        report100 = project.evaluate(ptah.load_corpus(k100))
        seconds["evaluate_k100"] = time.perf_counter() - clock
    seconds["build_and_evaluate"] = (
        seconds["build"] + seconds["evaluate_k10"] + seconds["evaluate_k100"]
    )

    clock = time.perf_counter()
    with ptah.open_project(spec) as project:
        warm = project.evaluate(ptah.load_corpus(k10))
    seconds["warm_evaluate_k10"] = time.perf_counter() - clock

    clock = time.perf_counter()
    cli = subprocess.run(
        [
            sys.executable,
            "-m",
            "ptah",
            "inference",
            "evaluate",
            "--corpus",
            str(k10),
            "--spec",
            spec,
            "--json",
        ],
        capture_output=True,
        text=True,
        cwd=str(project_dir),
    )
    seconds["warm_evaluate_k10_cli"] = time.perf_counter() - clock
    if cli.returncode != 0:
        raise SystemExit(f"ptah inference evaluate exited {cli.returncode}: {cli.stderr.strip()}")

    run10, run100 = report10.runs[0], report100.runs[0]
    numbers = {
        "nDCG@10": run10.means["nDCG"].value,
        "Recall@10": run10.means["recall"].value,
        "MRR@10": run10.means["MRR"].value,
        "Recall@100": run100.means["recall"].value,
    }
    if warm.runs[0].means["nDCG"] != run10.means["nDCG"]:
        raise SystemExit("the warm evaluate measured a different nDCG@10 than the cold one")
    as_dict10, as_dict100 = report10.to_dict(), report100.to_dict()
    return {
        "numbers": numbers,
        "per_case": {case["id"]: case["metrics"] for case in as_dict10["runs"][0]["cases"]},
        "recall100_per_case": {
            case["id"]: case["metrics"]["recall"] for case in as_dict100["runs"][0]["cases"]
        },
        "trec_export": check_trec_export(report10, ptah.load_corpus(k10), project_dir),
        "ties_flagged": {"k10": run10.ties["cases_flagged"], "k100": run100.ties["cases_flagged"]},
        "documents": summary.documents,
        "cases": summary.cases,
        "embedded": built.embedded,
        "seconds": seconds,
        "environment": dict(report10.environment),
    }


def check_trec_export(report, corpus, folder: Path) -> dict:
    """pytrec_eval on the TREC run ptah writes (``report.save(FILE, "trec")``) and its qrels lines
    must give ptah's per-case numbers (1e-9)."""
    import pytrec_eval

    from ptah.core.trec import qrels_lines

    run_file = folder / "run.trec"
    report.save(run_file, "trec")
    run = pytrec_eval.parse_run(run_file.read_text(encoding="utf-8").splitlines())
    qrels = pytrec_eval.parse_qrel(qrels_lines(corpus))
    measured = pytrec_eval.RelevanceEvaluator(
        qrels, {"ndcg_cut.10", "recall.10", "recip_rank"}
    ).evaluate(run)
    worst = 0.0
    for case in report.to_dict()["runs"][0]["cases"]:
        theirs = measured.get(case["id"], {"ndcg_cut_10": 0.0, "recall_10": 0.0, "recip_rank": 0.0})
        ours = case["metrics"]
        for mine, their in (
            ("ndcg", "ndcg_cut_10"),
            ("recall", "recall_10"),
            ("mrr", "recip_rank"),
        ):
            worst = max(worst, abs(ours[mine] - theirs[their]))
    return {"max_abs_difference": worst, "agrees": worst <= 1e-9}


# -- the bare pipeline -----------------------------------------------------------------


def run_bare(dataset: Path, model_path: Path) -> dict:
    """sentence-transformers + numpy exact search + pytrec_eval, nothing else."""
    import pytrec_eval
    from sentence_transformers import SentenceTransformer

    clock = time.perf_counter()
    with open(dataset / "corpus.jsonl", encoding="utf-8") as handle:
        corpus = [json.loads(line) for line in handle if line.strip()]
    with open(dataset / "queries.jsonl", encoding="utf-8") as handle:
        queries = {
            q["_id"]: q["text"] for q in (json.loads(line) for line in handle if line.strip())
        }
    qrels: dict[str, dict[str, int]] = {}
    with open(dataset / "qrels" / "test.tsv", encoding="utf-8") as handle:
        next(handle)
        for line in handle:
            if line.strip():
                query_id, doc_id, score = line.rstrip("\r\n").split("\t")
                qrels.setdefault(query_id, {})[doc_id] = int(score)
    doc_ids = [doc["_id"] for doc in corpus]
    documents = [(doc.get("title", "") + " " + doc["text"]).strip() for doc in corpus]
    query_ids = [query_id for query_id in queries if query_id in qrels]

    model = SentenceTransformer(str(model_path), device="cpu", local_files_only=True)
    model.max_seq_length = MAX_SEQ_LENGTH
    encode = dict(
        batch_size=BATCH_SIZE,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=False,
    )
    doc_vectors = model.encode(documents, **encode)
    query_vectors = model.encode([queries[q] for q in query_ids], **encode)
    scores = query_vectors @ doc_vectors.T
    top = np.argsort(-scores, axis=1, kind="stable")[:, :100]

    run = {q: {doc_ids[j]: float(scores[i, j]) for j in top[i]} for i, q in enumerate(query_ids)}
    measured = pytrec_eval.RelevanceEvaluator(
        {q: qrels[q] for q in query_ids}, {"ndcg_cut.10", "recall.10", "recall.100"}
    ).evaluate(run)
    reciprocal = {}
    for i, q in enumerate(query_ids):
        ranks = [
            rank for rank, j in enumerate(top[i][:10], start=1) if qrels[q].get(doc_ids[j], 0) > 0
        ]
        reciprocal[q] = 1.0 / ranks[0] if ranks else 0.0
    seconds = time.perf_counter() - clock
    return {
        "numbers": {
            "nDCG@10": float(np.mean([measured[q]["ndcg_cut_10"] for q in query_ids])),
            "Recall@10": float(np.mean([measured[q]["recall_10"] for q in query_ids])),
            "MRR@10": float(np.mean([reciprocal[q] for q in query_ids])),
            "Recall@100": float(np.mean([measured[q]["recall_100"] for q in query_ids])),
        },
        "per_case": {
            q: {
                "ndcg": measured[q]["ndcg_cut_10"],
                "recall": measured[q]["recall_10"],
                "mrr": reciprocal[q],
            }
            for q in query_ids
        },
        "recall100_per_case": {q: measured[q]["recall_100"] for q in query_ids},
        "seconds": seconds,
    }


# -- the results -------------------------------------------------------------------------


def summarise(ours: dict, bare: dict) -> dict:
    measures = {
        name: {
            "ptah": ours["numbers"][name],
            "bare": bare["numbers"][name],
            "published": PUBLISHED[name],
            "difference": ours["numbers"][name] - PUBLISHED[name],
            "within": abs(ours["numbers"][name] - PUBLISHED[name]) <= TOLERANCE,
        }
        for name in MEASURES
    }
    differing = {
        name: sum(
            1
            for q, metrics in bare["per_case"].items()
            if abs(metrics[name] - ours["per_case"][q][name]) > 1e-6
        )
        for name in ("ndcg", "recall", "mrr")
    }
    differing["recall@100"] = sum(
        1
        for q, value in bare["recall100_per_case"].items()
        if abs(value - ours["recall100_per_case"][q]) > 1e-6
    )
    seconds = dict(ours["seconds"], bare_pipeline=bare["seconds"])
    return {
        "dataset": "BEIR SciFact, test split",
        "model": MODEL,
        "documents": ours["documents"],
        "cases": ours["cases"],
        "measures": measures,
        "published_source": PUBLISHED_SOURCE,
        "tolerance": TOLERANCE,
        "cases_differing_from_bare": differing,
        "ties_flagged": ours["ties_flagged"],
        "trec_export": ours["trec_export"],
        "seconds": seconds,
        "ratio_build_and_evaluate_to_bare": seconds["build_and_evaluate"]
        / seconds["bare_pipeline"],
        "warm_evaluate_speedup_over_bare": seconds["bare_pipeline"] / seconds["warm_evaluate_k10"],
        "warm_cli_evaluate_speedup_over_bare": seconds["bare_pipeline"]
        / seconds["warm_evaluate_k10_cli"],
        "environment": ours["environment"],
    }


def print_results(results: dict) -> None:
    print(
        f"{results['dataset']}: {results['documents']} documents, {results['cases']} queries; {results['model']}"
    )
    print()
    print("| measure | ptah | bare pipeline | published | ptah - published | within 0.002 |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, row in results["measures"].items():
        print(
            f"| {name} | {row['ptah']:.5f} | {row['bare']:.5f} | {row['published']:.5f} | "
            f"{row['difference']:+.5f} | {'yes' if row['within'] else 'NO'} |"
        )
    print()
    print(f"published: {results['published_source']}")
    differing = results["cases_differing_from_bare"]
    print(
        "cases where ptah and the bare pipeline differ by > 1e-6: "
        + ", ".join(f"{name} {count}" for name, count in differing.items())
        + f"; cases with ties flagged: k10 {results['ties_flagged']['k10']}, k100 {results['ties_flagged']['k100']}"
    )
    trec = results["trec_export"]
    print(
        f"TREC export: pytrec_eval on ptah's run/qrels lines vs ptah's per-case numbers, max |difference| "
        f"{trec['max_abs_difference']:.3g} ({'agrees' if trec['agrees'] else 'DISAGREES'})"
    )
    print()
    seconds = results["seconds"]
    print("| step | seconds |")
    print("| --- | --- |")
    for name in (
        "import",
        "build",
        "evaluate_k10",
        "evaluate_k100",
        "build_and_evaluate",
        "bare_pipeline",
        "warm_evaluate_k10",
        "warm_evaluate_k10_cli",
    ):
        print(f"| {name} | {seconds[name]:.3f} |")
    print()
    print(
        f"ptah build + evaluate (k10, k100) / bare pipeline: {results['ratio_build_and_evaluate_to_bare']:.3f}x "
        "(target <= 1.05; the import is not counted)"
    )
    print(
        f"warm evaluate (k10, in process, fresh project) speed-up over the bare pipeline: "
        f"{results['warm_evaluate_speedup_over_bare']:.1f}x (target >= 20x); "
        f"through the CLI with interpreter start: {results['warm_cli_evaluate_speedup_over_bare']:.1f}x"
    )


if __name__ == "__main__":
    sys.exit(main())
