"""Reading a large judgement record: the line reader against the YAML reader, in one process.

    python benchmarks/judgement_record.py [--entries 200000] [--repeats 3]

Writes a record of ``--entries`` judgements (20 keys a case) with
``write_record`` into a temporary folder, then reads it alternately through
``read_record`` (which takes the line reader for a record in the written form)
and through the YAML reader alone (``parse_document`` + the node reader, the
only path before), ``--repeats`` times each, and prints the best time of each
and their ratio. The YAML side is skipped above 50,000 entries unless
``--yaml`` is given (it takes minutes there).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ptah.adapters import judgements_yaml  # noqa: E402
from ptah.adapters.yaml_nodes import parse_document  # noqa: E402
from ptah.core.judged import Judgement, JudgementRecord  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--yaml", action="store_true", help="time the YAML reader above 50,000 entries too"
    )
    options = parser.parse_args()
    sha = "0123456789abcdef" * 4
    cases = {
        f"case {c}": {
            str(c * 20 + k): Judgement(float(k % 3), sha, "2026-11-30T12:00:00Z") for k in range(20)
        }
        for c in range(options.entries // 20)
    }
    with tempfile.TemporaryDirectory() as folder:
        corpus = Path(folder) / "c.yaml"
        path = judgements_yaml.write_record(
            corpus, JudgementRecord(corpus="sha256:" + "0" * 64, cases=cases)
        )
        data = path.read_bytes()

        def by_yaml() -> JudgementRecord:
            root = parse_document(
                data,
                name=str(path),
                max_bytes=judgements_yaml.MAX_RECORD_BYTES,
                what="judgement record",
            )
            return judgements_yaml._Reader(str(path)).record(root)

        sides = {"lines": lambda: judgements_yaml.read_record(corpus)}
        if options.entries <= 50_000 or options.yaml:
            sides["yaml"] = by_yaml
        best: dict[str, float] = {}
        results = {}
        for _ in range(options.repeats):
            for name, read in sides.items():
                started = time.perf_counter()
                results[name] = read()
                best[name] = min(best.get(name, float("inf")), time.perf_counter() - started)
        assert all(len(record) == options.entries for record in results.values())
        if "yaml" in results:
            assert results["yaml"] == results["lines"]
    print(f"{options.entries:,} judgements, {len(data) / 1e6:.1f} MB")
    for name, seconds in best.items():
        print(f"  {name:5}  {seconds:8.3f} s")
    if "yaml" in best:
        print(f"  lines / yaml = {best['lines'] / best['yaml']:.4f}")


if __name__ == "__main__":
    main()
