"""Does the reranker pay for itself? Lexical, vector, hybrid and BM25 -> MiniLM reranked on SciFact,
with costs.

    python benchmarks/variants.py --scifact PROJECT [--corpus corpora/test-k10.yaml] [--candidates
    100] [--json FILE]

PROJECT is a SciFact project made by ``ptah import beir`` and built (e.g. the
one ``benchmarks/warm_evaluate.py`` keeps). The script writes
``ptah.variants.yaml`` beside its ``ptah.yaml``: the same spec with four
variants -- ``vector`` (MiniLM, exact), ``lexical`` (BM25), ``hybrid`` (RRF
of both) and ``reranked`` (BM25's top ``--candidates`` re-scored by MiniLM as
a bi-encoder) -- and evaluates them in one ``ptah inference evaluate``, vector
first, so every other variant is compared with it (paired bootstrap interval
and sign-flip test per measure). It prints, per variant, the means, the nDCG
delta against vector with its interval and p-value, and each variant's time
per query (p50/p95) and its share of the evaluation's time: the table in
``benchmarks/RESULTS.md``, "Rerankers and variants".
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

VARIANTS = """
variants:
  vector: {{channels: [vector]}}
  lexical: {{channels: [lexical]}}
  hybrid: {{channels: [lexical, vector]}}
  reranked:
    channels: [lexical]
    rerank: {{kind: bi-encoder, generation: minilm, candidates: {candidates}}}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scifact", type=Path, required=True, help="a built SciFact project")
    parser.add_argument("--corpus", default="corpora/test-k10.yaml")
    parser.add_argument("--candidates", type=int, default=100)
    parser.add_argument("--json", type=Path)
    options = parser.parse_args()
    project = options.scifact.resolve()
    spec = project / "ptah.variants.yaml"
    spec.write_text(
        (project / "ptah.yaml").read_text() + VARIANTS.format(candidates=options.candidates)
    )
    with tempfile.TemporaryDirectory() as folder:
        output = Path(folder) / "report.json"
        command = [
            sys.executable,
            "-m",
            "ptah",
            "inference",
            "evaluate",
            "--spec",
            str(spec),
            "--corpus",
            options.corpus,
            "--output",
            str(output),
        ]
        for name in ("vector", "lexical", "hybrid", "reranked"):
            command += ["--variant", name]
        code = subprocess.run(command, cwd=project, stdout=subprocess.DEVNULL).returncode
        if code not in (0, 1, 4):
            sys.exit(f"ptah inference evaluate exited {code}")
        report = json.loads(output.read_text())
    rows = table(report)
    print(
        "| variant | recall@10 | MRR@10 | nDCG@10 | nDCG vs vector (95% CI, p) | p50 ms/query | p95 ms/query "
        "| share of evaluation |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['variant']} | {row['recall']:.4f} | {row['mrr']:.4f} | {row['ndcg']:.4f} | {row['versus']} | "
            f"{row['p50_ms']:.1f} | {row['p95_ms']:.1f} | {row['share']:.1%} |"
        )
    print(
        f"evaluation: {report['timings']['total']:.1f} s; cpu: {report['environment']['cpu']} "
        f"({report['environment']['cpus']} cpus)"
    )
    if options.json:
        options.json.write_text(
            json.dumps({"rows": rows, "timings": report["timings"]}, indent=2) + "\n"
        )


def table(report: dict) -> list[dict]:
    """One row per variant: means, the nDCG comparison with the reference (vector) and the costs."""
    compared = {
        entry["run"]: entry["measures"]["ndcg"] for entry in report["comparison"]["candidates"]
    }
    total = report["timings"]["total"]
    rows = []
    for run in report["runs"]:
        name, means, cost = run["generation"]["name"], run["aggregates"], run["cost"]
        versus = "reference"
        if name in compared:
            ndcg = compared[name]
            low, high = ndcg["interval"]["low"], ndcg["interval"]["high"]
            versus = (
                f"{ndcg['delta']:+.4f} ({low:+.4f}..{high:+.4f}, p {ndcg['test']['p_value']:.4f})"
            )
        seconds = sum(stage["seconds"] for stage in cost["stages"].values())
        rows.append(
            {
                "variant": name,
                "recall": means["recall"]["value"],
                "mrr": means["mrr"]["value"],
                "ndcg": means["ndcg"]["value"],
                "versus": versus,
                "p50_ms": cost["p50_ms"],
                "p95_ms": cost["p95_ms"],
                "share": seconds / total,
                "stages": {
                    stage: {
                        "p50_ms": values["p50_ms"],
                        "p95_ms": values["p95_ms"],
                        "seconds": values["seconds"],
                    }
                    for stage, values in cost["stages"].items()
                },
            }
        )
    return rows


if __name__ == "__main__":
    main()
