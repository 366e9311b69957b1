"""How many judgements settle a drop gate: each gate's flip count m, its holes and the settling
sample.

    python benchmarks/settling_samples.py [--scifact PROJECT] [--json FILE]

For the bundled example, in a temporary copy: build body-only (the real
MiniLM model), then gate it against ``examples/support/baseline.json`` on
``corpora/support.yaml`` with ``--max-recall-drop``, ``--max-ndcg-drop`` and
``--max-mrr-drop`` 0.02 in turn. With ``--scifact PROJECT`` (a project made by
``ptah import beir`` and built, e.g. the one ``benchmarks/warm_evaluate.py``
keeps), MiniLM's vector run is gated the same way against BM25's and hybrid's
reports. For each gate: the drop, the paired p-value, m, the holes and the
smallest random sample that settles it if none of it is relevant (the numbers
in ``benchmarks/RESULTS.md``, "Verdicts that conclude").
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MEASURES = ("recall", "ndcg", "mrr")


def ptah(*argv, cwd: Path) -> int:
    return subprocess.run(
        [sys.executable, "-m", "ptah", *map(str, argv)], cwd=cwd, stdout=subprocess.DEVNULL
    ).returncode


def gate_rows(cwd: Path, label: str, evaluate: list, baseline: Path, work: Path) -> list[dict]:
    rows = []
    for measure in MEASURES:
        output = work / f"{label}-{measure}.json"
        ptah(
            *evaluate,
            "--baseline",
            baseline,
            f"--max-{measure}-drop",
            "0.02",
            "--output",
            output,
            cwd=cwd,
        )
        report = json.loads(output.read_text())
        (gate,) = [g for g in report["gates"] if g["name"] == f"max-{measure}-drop"]
        significance = report["baseline"]["comparisons"][0]["significance"][measure]
        holes = gate.get("holes") or {}
        rows.append(
            {
                "against": label,
                "gate": measure,
                "drop": gate["drop"],
                "p": significance["test"]["p_value"],
                "passed": gate["passed"],
                "m": holes.get("flip_count"),
                "holes": holes.get("holes"),
                "settling_sample": holes.get("settling_sample"),
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--scifact", type=Path, help="a built SciFact project (ptah import beir + build)"
    )
    parser.add_argument("--json", type=Path)
    options = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        example = work / "example"
        shutil.copytree(REPO / "examples", example / "examples")
        shutil.copytree(REPO / "corpora", example / "corpora")
        spec = example / "examples/support/ptah.yaml"
        subprocess.run(
            [sys.executable, str(example / "examples/support/make_db.py")],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        assert ptah("inference", "build", "body-only", "--spec", spec, "--quiet", cwd=example) == 0
        rows += gate_rows(
            example,
            "title-body (baseline.json)",
            [
                "inference",
                "evaluate",
                "--spec",
                spec,
                "--corpus",
                "corpora/support.yaml",
                "-g",
                "body-only",
            ],
            example / "examples/support/baseline.json",
            work,
        )
        if options.scifact:
            corpus = "corpora/test-k10.yaml"
            for channel in ("lexical", "hybrid"):
                baseline = work / f"{channel}.json"
                ptah(
                    "inference",
                    "evaluate",
                    "--corpus",
                    corpus,
                    "--channel",
                    channel,
                    "--output",
                    baseline,
                    cwd=options.scifact,
                )
                rows += gate_rows(
                    options.scifact,
                    f"SciFact {channel}",
                    ["inference", "evaluate", "--corpus", corpus, "--channel", "vector"],
                    baseline,
                    work,
                )
    print("| baseline | gate | drop | paired p | passed | m | holes | settling sample |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for row in rows:
        print(
            f"| {row['against']} | {row['gate']} | {row['drop']:.4f} | {row['p']:.4g} | {row['passed']} | "
            f"{row['m']} | {row['holes']} | {row['settling_sample']} |"
        )
    if options.json:
        options.json.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
