"""Benchmark: checking a baseline report against the report schema, jsonschema-rs against ptah's own
validator.

    python benchmarks/baseline_validation.py [--sizes 1000x100 50000x100] [--repeats 3]
    [--jsonschema-at 1000]

A report of CASES cases of RESULTS results each is made in memory from the
checked-in example baseline (its one run's first case, repeated with new ids
and keys), then validated -- the parsed document, as ``parse_report`` hands
it over -- by:

* **jsonschema-rs**: what ptah uses now (``ptah.adapters.report_json``);
* **ptah-subset**: the validator ptah had before (``ptah/core/json_schema.py``
  with the schema of that commit, :data:`BEFORE`), taken with ``git show``
  into a temporary folder and imported from there, in this same process;
* **jsonschema**: the pure-Python fallback (only at the sizes of
  ``--jsonschema-at``: it takes minutes past a few thousand cases).

Each is timed ``--repeats`` times (the least is kept), the three in turn, so
a drift in the machine's speed reaches each alike; ratio = the validator's
seconds / jsonschema-rs's. Peak RSS is the process's after all sizes.
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import json
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ptah.adapters import report_json  # noqa: E402

BEFORE = "bf34c1e80d4f413b61626da7221480d389cddbe1"  # the last commit with ptah/core/json_schema.py


def old_validator(folder: Path):
    """ptah's own validator of commit BEFORE, compiled from that commit's schema: raises on a
    violation."""
    for source, name in (
        ("ptah/core/json_schema.py", "old_json_schema.py"),
        ("ptah/schemas/report.schema.json", "old.json"),
    ):
        text = subprocess.run(
            ["git", "show", f"{BEFORE}:{source}"], cwd=ROOT, check=True, capture_output=True
        ).stdout
        (folder / name).write_bytes(text)
    spec = importlib.util.spec_from_file_location("old_json_schema", folder / "old_json_schema.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.compile_schema(json.loads((folder / "old.json").read_text()))


def report(cases: int, results: int) -> dict:
    document = json.loads((ROOT / "examples" / "support" / "baseline.json").read_text())
    run = document["runs"][0]
    template = run["cases"][0]
    run["cases"] = []
    for number in range(cases):
        case = copy.deepcopy(template)
        case["id"] = f"case-{number}"
        case["k"] = results
        case["results"] = [
            {"key": f"row-{number}-{rank}", "score": 1.0 - rank / results}
            for rank in range(results)
        ]
        run["cases"].append(case)
    document["corpus"]["cases"] = cases
    return document


def timed(check, document, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        check(document)
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", nargs="+", default=["1000x100", "50000x100"], help="CASESxRESULTS"
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--jsonschema-at", type=int, nargs="*", default=[1000], help="the case counts to time it at"
    )
    args = parser.parse_args()
    schema = json.loads((ROOT / "ptah" / "schemas" / "report.schema.json").read_text())
    rs = report_json._validator()
    fallback = report_json._jsonschema_validator(schema)
    print(f"python {platform.python_version()}, {platform.machine()}")
    with tempfile.TemporaryDirectory() as folder:
        old = old_validator(Path(folder))
        for size in args.sizes:
            cases, results = (int(part) for part in size.split("x"))
            document = report(cases, results)
            assert rs(document) is None and old(document) is None
            seconds = {
                "jsonschema-rs": timed(rs, document, args.repeats),
                "ptah-subset": timed(old, document, args.repeats),
            }
            if cases in args.jsonschema_at:
                assert fallback(document) is None
                seconds["jsonschema"] = timed(fallback, document, 1)
            line = ", ".join(
                f"{name} {value:.3f} s ({value / seconds['jsonschema-rs']:.1f}x)"
                for name, value in seconds.items()
            )
            print(f"{cases:,} cases x {results} results: {line}", flush=True)
            del document
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
