"""Reading a large judgement record, in the written form and with one odd byte: two trees' readers.

    python benchmarks/judgement_record.py [--entries 200000] [--repeats 3] [--before DIR]

Writes a record of ``--entries`` judgements (20 keys a case) with this
tree's ``write_record``, and a copy of it with one odd line in the middle (a
comment, and one judgement written with other spacing): the same record.
Then, ``--repeats`` rounds, each file is read with ``read_record`` in a fresh
process for each tree -- ``--before DIR`` (a folder holding another version's
``ptah/`` package, e.g. ``git archive COMMIT ptah | tar -x -C DIR``) and this
one -- alternately, so a change in the machine's load reaches every side.

Prints, for each tree and file, the best CPU seconds of the read (the
process's, after its imports), its wall seconds, and the process's peak
resident memory (the file's bytes are in memory before the read), then the
ratios this tree / before. Every read must give the same record, or the
script exits 1.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
SHA = "0123456789abcdef" * 4


def _read(tree: Path, corpus: Path) -> None:
    """In a child process: read the record beside ``corpus`` with ``tree``'s ptah; print the
    figures as JSON."""
    sys.path.insert(0, str(tree))
    from ptah.adapters.judgements_yaml import read_record, record_path

    record_path(corpus).read_bytes()  # in the page cache, as for every other read
    cpu, wall = time.process_time(), time.perf_counter()
    record = read_record(corpus)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"cpu": cpu, "wall": wall, "peak_mb": peak, "digest": record.digest()}))


def _files(folder: Path, entries: int) -> dict[str, Path]:
    """The written record and its odd copy in ``folder``: the name of each and its corpus path."""
    sys.path.insert(0, str(HERE))
    from ptah.adapters.judgements_yaml import write_record
    from ptah.core.judged import Judgement, JudgementRecord

    cases = {
        f"case {c}": {
            str(c * 20 + k): Judgement(float(k % 3), SHA, "2026-11-30T12:00:00Z") for k in range(20)
        }
        for c in range(entries // 20)
    }
    written = folder / "written.yaml"
    text = write_record(written, JudgementRecord(corpus="sha256:" + "0" * 64, cases=cases))
    lines = text.read_text().split("\n")
    middle = lines.index(f'  "case {entries // 40}":')
    lines[middle + 1] = lines[middle + 1].replace("{grade: ", "{ grade:  ", 1)
    lines.insert(middle, "# an odd line: a comment")
    odd = folder / "odd.yaml"
    (folder / "odd.judged.yaml").write_text("\n".join(lines))
    return {"written": written, "odd": odd}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--before", type=Path, help="a folder holding the ptah/ package to compare")
    parser.add_argument("--child", nargs=2, type=Path, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        _read(*options.child)
        return 0
    trees = {"before": options.before.resolve()} if options.before else {}
    trees["after"] = HERE
    with tempfile.TemporaryDirectory() as folder:
        files = _files(Path(folder), options.entries)
        size = (Path(folder) / "written.judged.yaml").stat().st_size
        found: dict[tuple[str, str], list[dict]] = {}
        for _ in range(options.repeats):
            for file, corpus in files.items():
                for tree, root in trees.items():
                    child = [sys.executable, __file__, "--child", str(root), str(corpus)]
                    out = subprocess.run(child, check=True, capture_output=True, text=True).stdout
                    found.setdefault((tree, file), []).append(json.loads(out))
    digests = {run["digest"] for runs in found.values() for run in runs}
    print(f"{options.entries:,} judgements, {size / 1e6:.1f} MB; best of {options.repeats}")
    best = {side: min(runs, key=lambda run: run["cpu"]) for side, runs in found.items()}
    for (tree, file), run in best.items():
        print(
            f"  {tree:6} {file:7} {run['cpu']:8.3f} s CPU {run['wall']:8.3f} s wall "
            f"{run['peak_mb']:7.0f} MB peak"
        )
    if "before" in trees:
        for file in files:
            after, before = best[("after", file)], best[("before", file)]
            print(
                f"  after / before, {file:7}: CPU {after['cpu'] / before['cpu']:.3f}, "
                f"peak memory {after['peak_mb'] / before['peak_mb']:.2f}"
            )
    print(f"the same record every read: {len(digests) == 1}")
    return 0 if len(digests) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
