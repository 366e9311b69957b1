"""Benchmark: building through an OpenAI-compatible server against local encoding, and the latency
concurrency hides.

    python benchmarks/openai_service.py [CORPUS_JSONL] [--rows N] [--latency-rows M]

CORPUS_JSONL defaults to /work/shared/datasets/scifact/corpus.jsonl (BEIR
format); each row's text is ``(title + " " + text).strip()``, read at run time
and never copied into the repository; everything written goes to a temporary
folder removed at the end. The server is the tests' own
(``tests/adapters/openai_server.py``: the standard library's HTTP server on
127.0.0.1, in this process, on threads).

1. HTTP + JSON overhead -- the first N rows built by ptah with the local
   MiniLM (``sentence-transformers/all-MiniLM-L6-v2``, max_seq_length 256,
   batch_size 64; its kind loads the model once per process, like
   benchmarks/build.py's) and through the server serving that very loaded
   model (``provider: openai``, batch_size 64, max_concurrency 1: one encode
   at a time, as the server encodes one request at a time), each into a
   fresh store, in the order local, served, served, local so a drift in the
   machine's speed cancels out. overhead = mean served seconds / mean local
   seconds - 1 (target: under 15%), in wall and in process CPU seconds
   (client and server are both this process). The served vectors are held
   against the local ones (max absolute difference).
2. Latency -- the server adds 50 ms to every request and its model is a
   stand-in that costs nothing (a unit vector per text), so what is timed is
   the waiting: M rows at batch_size 16, max_concurrency 1 then 4 then 1
   then 4; speed-up = mean seconds at 1 / mean seconds at 4 (target: at
   least 3).
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import statistics
import sys
import tempfile
import zlib
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.build import DEFAULT_CORPUS, MODEL, LoadedOnce, cpu_timed, load_texts, write_project  # noqa: E402

LATENCY_S = 0.05


class StandIn:
    """A model that costs nothing: each text a unit vector of 384 values, one set by the text's
    CRC."""

    max_seq_length = 256

    def encode(self, texts, **_options):
        vectors = np.zeros((len(texts), 384), dtype=np.float32)
        vectors[np.arange(len(texts)), [zlib.crc32(text.encode()) % 384 for text in texts]] = 1.0
        return vectors


def served(server, batch_size: int, concurrency: int) -> str:
    from tests.adapters.openai_server import MODEL as SERVED

    return (
        f"provider: openai\n    model: {SERVED}\n    base_url: {server.base_url}\n    api_key_env: null\n"
        f"    batch_size: {batch_size}\n    max_concurrency: {concurrency}"
    )


def fresh_build(spec: Path):
    from ptah.services.build import build
    from ptah.services.project import open_project

    shutil.rmtree(spec.parent / ".ptah", ignore_errors=True)
    with open_project(str(spec)) as project:
        summary = build(project)
        matrix = project.matrix(project.generation())
    return summary, matrix


def overhead(rows: list[tuple[str, str]], folder: Path) -> dict:
    from ptah.adapters.embedders import registry
    from ptah.core.spec import GenerationSettings
    from tests.adapters.openai_server import EmbeddingServer

    loaded = LoadedOnce()
    registry.register(loaded)
    local_spec = write_project(
        folder / "local", rows, f"model: {MODEL}\n    batch_size: 64\n    max_seq_length: 256"
    )
    model = loaded.open(
        GenerationSettings("bench", MODEL, batch_size=64, max_seq_length=256), str(folder)
    ).model
    server = EmbeddingServer(model, max_seq_length=256)
    try:
        served_spec = write_project(folder / "served", rows, served(server, 64, 1))
        fresh_build(
            local_spec
        )  # first-call overheads (the model's, the store's) outside the clocks
        runs = {"local": [], "served": []}
        for name, spec in (
            ("local", local_spec),
            ("served", served_spec),
            ("served", served_spec),
            ("local", local_spec),
        ):
            wall, cpu, (summary, matrix) = cpu_timed(fresh_build, spec)
            runs[name].append((wall, cpu, matrix))
            print(
                f"  {name}: {wall:.2f} s wall, {cpu:.2f} s CPU, {summary.embedded} rows", flush=True
            )
        requests = len(server.requests)
    finally:
        server.close()
    local, remote = runs["local"][0][2], runs["served"][0][2]
    assert local.keys == remote.keys
    wall = {name: statistics.mean(run[0] for run in values) for name, values in runs.items()}
    cpu = {name: statistics.mean(run[1] for run in values) for name, values in runs.items()}
    return {
        "rows": len(rows),
        "local_seconds": round(wall["local"], 3),
        "served_seconds": round(wall["served"], 3),
        "overhead_wall": round(wall["served"] / wall["local"] - 1, 4),
        "local_cpu_seconds": round(cpu["local"], 3),
        "served_cpu_seconds": round(cpu["served"], 3),
        "overhead_cpu": round(cpu["served"] / cpu["local"] - 1, 4),
        "max_abs_difference": float(np.abs(local.vectors - remote.vectors).max()),
        "requests_per_served_build": requests // 2,
        "runs": {name: [round(run[0], 3) for run in values] for name, values in runs.items()},
    }


def latency(rows: list[tuple[str, str]], folder: Path) -> dict:
    from tests.adapters.openai_server import EmbeddingServer

    server = EmbeddingServer(StandIn())
    server.always, server.slow_s = "slow", LATENCY_S
    try:
        specs = {
            n: write_project(folder / f"latency-{n}", rows, served(server, 16, n)) for n in (1, 4)
        }
        runs = {1: [], 4: []}
        for n in (1, 4, 1, 4):
            wall, _, (summary, _) = cpu_timed(fresh_build, specs[n])
            runs[n].append(wall)
            print(
                f"  max_concurrency {n}: {wall:.2f} s, {summary.usage['requests']} requests",
                flush=True,
            )
    finally:
        server.close()
    one, four = statistics.mean(runs[1]), statistics.mean(runs[4])
    return {
        "rows": len(rows),
        "batch_size": 16,
        "latency_ms": LATENCY_S * 1000,
        "seconds_at_1": round(one, 3),
        "seconds_at_4": round(four, 3),
        "speedup": round(one / four, 2),
        "runs": {str(n): [round(s, 3) for s in values] for n, values in runs.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", default=DEFAULT_CORPUS)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--latency-rows", type=int, default=1000)
    options = parser.parse_args()
    rows = load_texts(options.corpus)
    folder = Path(tempfile.mkdtemp(prefix="ptah-openai-bench-"))
    try:
        print(f"1. HTTP + JSON overhead, {options.rows} rows", flush=True)
        first = overhead(rows[: options.rows], folder)
        print(f"2. latency {LATENCY_S * 1000:.0f} ms, {options.latency_rows} rows", flush=True)
        second = latency(rows[: options.latency_rows], folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(
        json.dumps(
            {
                "machine": platform.platform(),
                "cpus": __import__("os").cpu_count(),
                "overhead": first,
                "latency": second,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
