"""Benchmark: MiniLM on torch, ONNX fp32 and ONNX int8 -- CPU seconds, peak memory and vectors of a
fresh process per backend beside a bare ``SentenceTransformer.encode``, and SciFact quality.

    python benchmarks/onnx_backend.py [DATASET_DIR] [--docs 300] [--rounds 2] [--project DIR]
    [--before DIR] [--arena-options] [--json FILE]

Needs the onnx extra (``pip install -e '.[onnx]'``). DATASET_DIR defaults to
``../shared/datasets/scifact`` beside this repository (read in place, never
copied). In one invocation:

1. the first ``--docs`` documents of ``corpus.jsonl``, as ``(title + " " +
   text).strip()`` (the text ``ptah import beir`` stores), are written to a
   scratch file; each ONNX backend is opened once in a process of its own,
   embedding nothing, so its export is made (into ``--project``'s
   ``.ptah/onnx/``, else a scratch project) before anything is measured, and
   the seconds that took are printed;
2. each backend runs in a fresh process, interleaved -- bare, torch, onnx,
   int8 (and, with ``--before DIR``, a checkout of ptah before the change,
   ``onnx@before`` and ``int8@before``; with ``--arena-options``, onnx and
   int8 with each other setting of onnxruntime's memory arena and memory
   pattern, ``onnx/arena=1,pattern=1`` ...), then again for ``--rounds`` rounds --
   so a change in the machine's load reaches all alike. A process opens its
   embedder with the settings a SciFact generation has (all-MiniLM-L6-v2,
   max_seq_length 256, batch size 64, normalised; ``bare`` is
   ``SentenceTransformer.encode`` with the same, no ptah), embeds the first 64
   documents (one batch, warm-up), then all of them; it reports the CPU
   seconds (``os.times``: every thread of the process, user and system) of
   the measured embedding and of the whole process (import, load, warm-up
   and embedding), the embedding's wall seconds, and its peak resident memory
   (``VmHWM``). The load average is printed before and after and with each
   process;
3. the table: each figure the median of the rounds, as a ratio to bare and to
   torch; each backend's vectors (the last round's) against bare's (mean and
   least cosine), and an ``@before``'s against its own after (bit for bit);
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
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
MODEL = "sentence-transformers/all-MiniLM-L6-v2"
BACKENDS = {
    "torch": {},
    "onnx": {"backend": "onnx"},
    "int8": {"backend": "onnx", "quantize": "int8"},
}
GENERATIONS = {"torch": "minilm", "onnx": "minilm-onnx", "int8": "minilm-int8"}
WARM_UP = 64


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


def cpu() -> float:
    times = os.times()
    return times.user + times.system


def memory_mib(field: str) -> float:
    """``field`` of this process's ``/proc/self/status`` (``VmHWM``: its peak resident memory)."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def with_arena_options(arena: bool, pattern: bool) -> None:
    """ptah's session options, with onnxruntime's CPU memory arena and memory pattern as given."""
    from ptah.adapters.embedders import onnx_backend

    chosen = onnx_backend.session_options

    def session_options():
        options = chosen()
        options.enable_cpu_mem_arena = arena
        options.enable_mem_pattern = pattern
        return options

    onnx_backend.session_options = session_options


def worker(backend: str, code: str, project: str, texts_file: str, vectors_file: str) -> None:
    """One measured process: ``backend`` (bare, or one of BACKENDS) with ptah imported from
    ``code``; one JSON line on stdout."""
    sys.path.insert(0, code)
    texts = json.loads(Path(texts_file).read_text(encoding="utf-8"))
    started = cpu()
    if backend == "bare":
        from sentence_transformers import SentenceTransformer

        from ptah.adapters.embedders.resolve import resolve_model

        model = SentenceTransformer(
            str(resolve_model(MODEL, project)), device="cpu", local_files_only=True
        )
        model.max_seq_length = 256

        def embed(rows: list[str]) -> np.ndarray:
            return model.encode(
                rows,
                batch_size=64,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
    else:
        from ptah.adapters.embedders import open_embedder
        from ptah.core.spec import GenerationSettings

        backend, _, arena = backend.partition("/")  # onnx/arena=0,pattern=1: --arena-options
        if arena:
            flags = dict(part.split("=") for part in arena.split(","))
            with_arena_options(flags["arena"] == "1", flags["pattern"] == "1")
        settings = GenerationSettings("g", MODEL, max_seq_length=256, **BACKENDS[backend])
        embedder = open_embedder(settings, project)
        embed = embedder.embed_documents
    opened, opened_mib = cpu(), memory_mib("VmRSS")
    embed(texts[:WARM_UP])
    warm = cpu()
    wall = time.perf_counter()
    vectors = embed(texts)
    wall = time.perf_counter() - wall
    done = cpu()
    np.save(vectors_file, vectors)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    figures = {
        "open_cpu": opened - started,
        "warm_cpu": warm - opened,
        "encode_cpu": done - warm,
        "encode_wall": wall,
        "process_cpu": usage.ru_utime + usage.ru_stime,
        "opened_mib": opened_mib,
        "peak_mib": memory_mib("VmHWM"),
    }
    print(json.dumps(figures))


def measured(
    backend: str, code: Path, project: Path, scratch: Path, tag: str, texts: str = "texts.json"
) -> dict:
    """``worker`` in a fresh process (embedding the texts in ``scratch / texts``); its figures, and
    its vectors' file."""
    vectors = scratch / (tag.replace("/", "_") + ".npy")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env.pop("PYTHONPATH", None)
    done = subprocess.run(
        [
            sys.executable,
            __file__,
            "--worker",
            backend,
            str(code),
            str(project),
            str(scratch / texts),
            str(vectors),
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    if done.returncode != 0:
        raise SystemExit(f"{tag} failed: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1]) | {"vectors": vectors}


def speeds(
    texts: list[str],
    rounds: int,
    project: Path | None,
    before: Path | None,
    arena_options: list[tuple[bool, bool]],
) -> None:
    print(
        f"{len(texts)} documents, {len(os.sched_getaffinity(0))} CPUs, "
        f"load average (1/5/15 min) before: {load()}"
    )
    runs = {"bare": ("bare", ROOT)} | {name: (name, ROOT) for name in BACKENDS}
    if before is not None:
        runs |= {f"{name}@before": (name, before) for name in ("onnx", "int8")}
    for arena, pattern in arena_options:
        runs |= {
            f"{name}/arena={arena:d},pattern={pattern:d}": (
                f"{name}/arena={arena:d},pattern={pattern:d}",
                ROOT,
            )
            for name in ("onnx", "int8")
        }
    with tempfile.TemporaryDirectory(prefix="ptah-onnx-bench-") as folder:
        scratch = Path(folder)
        (scratch / "texts.json").write_text(json.dumps(texts), encoding="utf-8")
        (scratch / "none.json").write_text("[]", encoding="utf-8")
        project = project or scratch  # the project's .ptah/onnx/ when given: exported once
        for name in ("onnx", "int8"):
            started = time.perf_counter()
            measured(name, ROOT, project, scratch, f"prepare-{name}", "none.json")
            print(
                f"  opened {name} in {time.perf_counter() - started:.1f} s "
                "(a process, embedding nothing: an export or quantisation included where none "
                "was kept)"
            )
        figures: dict[str, list[dict]] = {name: [] for name in runs}
        for round_ in range(rounds):
            for name, (backend, code) in runs.items():
                result = measured(backend, code, project, scratch, f"{name}-{round_}")
                figures[name].append(result)
                print(
                    f"  round {round_ + 1} {name}: encode {result['encode_cpu']:.1f} CPU s, "
                    f"{result['encode_wall']:.1f} s wall; process {result['process_cpu']:.1f} CPU s; "
                    f"{result['opened_mib']:.0f} MiB opened, peak {result['peak_mib']:.0f} MiB "
                    f"(load {load()})"
                )
        print(f"load average after: {load()}")
        table(figures, len(texts))


def table(figures: dict[str, list[dict]], count: int) -> None:
    def median(name: str, field: str) -> float:
        return statistics.median(result[field] for result in figures[name])

    bare = np.load(figures["bare"][-1]["vectors"])
    print(
        "\n| backend | encode CPU s | / bare | / torch | encode wall s | / torch | process CPU s "
        "| / torch | opened MiB | peak MiB | / torch | mean cosine to bare | least |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in figures:
        vectors = np.load(figures[name][-1]["vectors"])
        cosines = np.sum(vectors * bare, axis=1)  # unit vectors
        ratios = [
            f"{median(name, field):.1f} | {median(name, field) / median('torch', field):.2f}x"
            for field in ("encode_wall", "process_cpu")
        ]
        print(
            f"| {name} | {median(name, 'encode_cpu'):.1f} | "
            f"{median(name, 'encode_cpu') / median('bare', 'encode_cpu'):.2f}x | "
            f"{median(name, 'encode_cpu') / median('torch', 'encode_cpu'):.2f}x | "
            f"{' | '.join(ratios)} | {median(name, 'opened_mib'):.0f} | "
            f"{median(name, 'peak_mib'):.0f} | "
            f"{median(name, 'peak_mib') / median('torch', 'peak_mib'):.2f}x | "
            f"{cosines.mean():.5f} | {cosines.min():.5f} |"
        )
    for name in figures:
        if name.endswith("@before"):
            after = np.load(figures[name.removesuffix("@before")][-1]["vectors"])
            same = np.array_equal(np.load(figures[name][-1]["vectors"]), after)
            print(f"{name} vectors bit for bit equal to after's: {same} ({count} documents)")


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
    if sys.argv[1:2] == ["--worker"]:
        worker(*sys.argv[2:7])
        return
    sys.path.insert(0, str(ROOT))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "dataset", nargs="?", type=Path, default=ROOT.parent / "shared" / "datasets" / "scifact"
    )
    parser.add_argument("--docs", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--project", type=Path, help="a built SciFact project with the three generations"
    )
    parser.add_argument(
        "--before", type=Path, help="a checkout of ptah before the change, measured beside it"
    )
    parser.add_argument(
        "--arena-options",
        action="store_true",
        help="also onnx and int8 with the other settings of the memory arena and pattern",
    )
    parser.add_argument("--json", type=Path, help="write the evaluation's report here")
    args = parser.parse_args()
    options = [(True, True), (False, True), (False, False)] if args.arena_options else []
    speeds(documents(args.dataset, args.docs), args.rounds, args.project, args.before, options)
    if args.project is not None:
        report = evaluation(args.project)
        if args.json is not None and report is not None:
            args.json.write_text(json.dumps(report, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
