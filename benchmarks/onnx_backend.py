"""Benchmark: MiniLM on torch, ONNX fp32 and ONNX int8 -- documents per second, cosine to torch, and
SciFact quality.

    python benchmarks/onnx_backend.py [DATASET_DIR] [--docs 1000] [--rounds 2] [--project DIR]
    [--json FILE]

Needs the onnx extra (``pip install -e '.[onnx]'``). DATASET_DIR defaults to
``../shared/datasets/scifact`` beside this repository (read in place, never
copied). In one invocation:

1. the three embedders are opened through ptah (``open_embedder``) with the
   settings a SciFact generation has (all-MiniLM-L6-v2, max_seq_length 256,
   batch size 64, normalised), the ONNX ones exporting into ``--project``'s
   ``.ptah/onnx/`` (else a temporary folder); the seconds each open took are
   printed (an export included, where one was made);
2. the first ``--docs`` documents of ``corpus.jsonl``, as ``(title + " " +
   text).strip()`` (the text ``ptah import beir`` stores), are embedded by
   each, interleaved -- torch, onnx, int8, torch, onnx, int8 ... for
   ``--rounds`` rounds -- after a warm-up of 64 documents each, so a change in
   the machine's load reaches all three alike; docs/s is the median round,
   the ratio is to torch's median; the load average is printed before and
   after;
3. each backend's vectors of the last round against torch's: mean and least
   cosine;
4. with ``--project DIR`` (a SciFact project from ``ptah import beir`` whose
   ``ptah.yaml`` declares generations ``minilm``, ``minilm-onnx`` and
   ``minilm-int8``, all three built), ``ptah inference evaluate --corpus
   corpora/test-k10.yaml -g minilm -g minilm-onnx -g minilm-int8 --json`` is
   run and each measure's means, paired deltas and paired 95% intervals are
   printed (ptah's side-by-side comparison, minilm the reference).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ptah.adapters.embedders import open_embedder  # noqa: E402
from ptah.core.spec import GenerationSettings  # noqa: E402

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
BACKENDS = {
    "torch": {},
    "onnx": {"backend": "onnx"},
    "int8": {"backend": "onnx", "quantize": "int8"},
}
GENERATIONS = {"torch": "minilm", "onnx": "minilm-onnx", "int8": "minilm-int8"}


def documents(dataset: Path, count: int) -> list[str]:
    texts = []
    with open(dataset / "corpus.jsonl", encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            texts.append((row.get("title", "") + " " + row.get("text", "")).strip())
            if len(texts) == count:
                break
    return texts


def load() -> str:
    return "/".join(f"{value:.2f}" for value in os.getloadavg())


def speeds(texts: list[str], rounds: int, project: Path | None) -> None:
    print(
        f"{len(texts)} documents, {os.cpu_count()} CPUs, load average (1/5/15 min) before: {load()}"
    )
    with tempfile.TemporaryDirectory(prefix="ptah-onnx-bench-") as scratch:
        project = project or Path(
            scratch
        )  # the project's .ptah/onnx/ when given: exported once for both uses
        embedders = {}
        for name, fields in BACKENDS.items():
            started = time.perf_counter()
            settings = GenerationSettings(name, MODEL, max_seq_length=256, **fields)
            embedders[name] = open_embedder(settings, str(project))
            print(
                f"  opened {name} in {time.perf_counter() - started:.1f} s "
                "(an ONNX export or quantisation included where none was kept)"
            )
        for embedder in embedders.values():
            embedder.embed_documents(texts[:64])
        seconds: dict[str, list[float]] = {name: [] for name in BACKENDS}
        vectors: dict[str, np.ndarray] = {}
        for round_ in range(rounds):
            for name, embedder in embedders.items():
                started = time.perf_counter()
                vectors[name] = embedder.embed_documents(texts)
                seconds[name].append(time.perf_counter() - started)
                print(
                    f"  round {round_ + 1} {name}: {len(texts) / seconds[name][-1]:.1f} docs/s (load {load()})"
                )
    print(f"load average after: {load()}")
    torch_rate = len(texts) / statistics.median(seconds["torch"])
    print(
        "\n| backend | docs/s (median of rounds) | rounds | ratio to torch | mean cosine to torch | least |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    for name in BACKENDS:
        rate = len(texts) / statistics.median(seconds[name])
        cosines = np.sum(vectors[name] * vectors["torch"], axis=1)  # unit vectors
        each = ", ".join(f"{len(texts) / s:.1f}" for s in seconds[name])
        print(
            f"| {name} | {rate:.1f} | {each} | {rate / torch_rate:.2f}x | {cosines.mean():.5f} "
            f"| {cosines.min():.5f} |"
        )


def evaluation(project: Path) -> dict | None:
    command = [
        sys.executable,
        "-m",
        "ptah",
        "inference",
        "evaluate",
        "--spec",
        str(project / "ptah.yaml"),
        "--corpus",
        str(project / "corpora" / "test-k10.yaml"),
        "--json",
        *[part for generation in GENERATIONS.values() for part in ("-g", generation)],
    ]
    started = time.perf_counter()
    done = subprocess.run(
        command, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}
    )
    print(
        f"\nptah inference evaluate -g {' -g '.join(GENERATIONS.values())}: exit {done.returncode} "
        f"in {time.perf_counter() - started:.1f} s"
    )
    if not done.stdout.strip():
        print(done.stderr.strip())
        return None
    report = json.loads(done.stdout)
    comparison = report["comparison"]
    print(
        f"reference {comparison['reference']}; intervals: paired bootstrap, "
        f"{json.dumps(comparison.get('statistics'))}"
    )
    print(
        "\n| generation | measure | mean | delta to minilm | paired 95% interval | wins/ties/losses | p | finding |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for candidate in comparison["candidates"]:
        for measure, entry in candidate["measures"].items():
            interval = entry["interval"]
            shown = f"[{interval['low']:+.4f}, {interval['high']:+.4f}]" if interval else "--"
            p = entry["test"]["p_value"] if entry["test"] else None
            print(
                f"| {candidate['run']} | {measure} | {entry['candidate']:.4f} (minilm {entry['reference']:.4f}) | "
                f"{entry['delta']:+.4f} | {shown} | {entry['wins']}/{entry['ties']}/{entry['losses']} | "
                f"{'--' if p is None else f'{p:.3f}'} | {entry['finding']} |"
            )
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "dataset", nargs="?", type=Path, default=ROOT.parent / "shared" / "datasets" / "scifact"
    )
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--project", type=Path, help="a built SciFact project with the three generations"
    )
    parser.add_argument("--json", type=Path, help="write the evaluation's report here")
    args = parser.parse_args()
    speeds(documents(args.dataset, args.docs), args.rounds, args.project)
    if args.project is not None:
        report = evaluation(args.project)
        if args.json is not None and report is not None:
            args.json.write_text(json.dumps(report, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
