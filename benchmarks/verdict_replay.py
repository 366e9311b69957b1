"""Replay ptah's judging loop on sparse copies of fully judged collections: is the final verdict
right, at what cost?

    python benchmarks/verdict_replay.py [--dataset NAME=DIR]... [--work DIR] [--draws 10] [--json
    FILE]

For each BEIR collection (default: SciFact and CISI in ``../shared/datasets``,
read in place) a project is made with ``ptah import beir`` (kept in
``--work DIR/NAME`` and reused when present) and its specification given four
generations of the real MiniLM model: **good** (``{title}. {text}``),
**clear** (the title alone), **small** (good's text cut by a short
``max_seq_length``, ``--small NAME=TOKENS``) and **same** (``{title}\\n\\n{text}``:
the null change). The test queries with judgements are the cases, k = 10.

Truth: on the complete corpus (every qrels-relevant row graded 1, every other
row not relevant: ``--holes misses``), each candidate is gated against good's
report, once per gate (``--max-drop nDCG=0.02``, ``--max-recall-drop 0.02``);
that verdict and the drop are the truth.

Each seeded draw makes a sparse corpus (one relevant row per case, drawn at
random; the rest kept aside as the truth), no judgement record, and a baseline
report (good on the sparse corpus). Then, for each change and gate, on a fresh
copy, the loop follows what ptah says, through its CLI only: evaluate with the
gate; on exit 4 run the command the inconclusive gate names (its
``holes.command`` when the report has one, else the backticked commands of
its ``detail``: a ``corpus sample`` answered with ``--grades`` from the
truth, else ``corpus holes`` with every hole judged from the truth in
``corpus judge --worklist``, which the loop also follows once it has judged
``--max-samples`` samples); on exit 2 naming ``ptah report rebaseline`` run
it and use the new baseline; stop at exit 0 or 1, or after
``--max-iterations`` evaluations. Each row records the exits, the judgements
used, the rebaselines, the seconds and whether the final verdict equals the
truth's; the summary table is printed per collection, change and gate.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
DATASETS = REPO.parent / "shared" / "datasets"
MODEL = "sentence-transformers/all-MiniLM-L6-v2"
CHANGES = {"clear": "clear", "small": "small", "null": "same"}  # change -> the candidate generation
GATES = {"ndcg": ["--max-drop", "nDCG=0.02"], "recall": ["--max-recall-drop", "0.02"]}
GATE_NAMES = {"ndcg": "max-ndcg-drop", "recall": "max-recall-drop"}
SMALL_TOKENS = {"cisi": 64, "scifact": 96}
BACKTICKED = re.compile(r"`([^`]+)`")


def ptah_command(argv: list[str]) -> list[str]:
    return [sys.executable, "-m", "ptah", *map(str, argv)]


def ptah(argv: list, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess:
    """Run this checkout's ptah in ``cwd``, capturing what it says."""
    environment = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run(
        ptah_command(argv),
        cwd=cwd,
        env=environment,
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
    )


def generations(small_tokens: int) -> dict[str, dict]:
    def generation(text: str, tokens: int = 256) -> dict:
        return {"model": MODEL, "normalize": True, "max_seq_length": tokens, "text": text}

    return {
        "good": generation("{title}. {text}"),
        "clear": generation("{title}"),
        "small": generation("{title}. {text}", small_tokens),
        "same": generation("{title}\n\n{text}"),
    }


def make_project(dataset: Path, project: Path, small_tokens: int) -> dict:
    """Import (once) and build the four generations; the seconds each build took (0-ish when built
    already)."""
    if not (project / "source.db").exists():
        done = ptah(["import", "beir", dataset, "--into", project, "--force"], cwd=REPO)
        if done.returncode != 0:
            raise SystemExit(f"import of {dataset} failed: {done.stderr}")
    spec = project / "ptah.yaml"
    imported = yaml.safe_load(spec.read_text())
    imported["active"] = "good"
    imported["generations"] = generations(small_tokens)
    spec.write_text(yaml.safe_dump(imported, sort_keys=False))
    seconds = {}
    for name in imported["generations"]:
        clock = time.perf_counter()
        done = ptah(["inference", "build", name, "--quiet"], cwd=project)
        if done.returncode != 0:
            raise SystemExit(f"build of {name} failed: {done.stderr}")
        seconds[name] = round(time.perf_counter() - clock, 1)
    return seconds


def write_corpus(path: Path, full: dict, relevant: dict[str, list[str]]) -> None:
    """``full`` with each case's relevant rows replaced by ``relevant[case]`` (graded 1)."""
    document = {key: value for key, value in full.items() if key != "cases"}
    document["cases"] = [
        {
            "id": case["id"],
            "query": case["query"],
            "relevant": {key: 1 for key in relevant[case["id"]]},
        }
        for case in full["cases"]
    ]
    path.write_text(yaml.safe_dump(document, sort_keys=False, allow_unicode=True))


def gate_of(report: dict, gate: str) -> dict:
    (found,) = [entry for entry in report["gates"] if entry["name"] == GATE_NAMES[gate]]
    return found


def evaluate(
    project: Path, corpus: Path, generation: str, output: Path, extra: list
) -> subprocess.CompletedProcess:
    return ptah(
        ["inference", "evaluate", "--corpus", corpus, "-g", generation, "--output", output, *extra],
        cwd=project,
    )


def truth(project: Path, replay: Path, full: dict, gates: list[str]) -> tuple[dict, Path]:
    """The complete corpus's verdict and drop for each candidate and gate, and the grades file of
    every (case, key) any generation ranks in its top k."""
    corpus = replay / "full.yaml"
    write_corpus(corpus, full, {case["id"]: list(case["relevant"]) for case in full["cases"]})
    baseline = replay / "truth-good.json"
    if evaluate(project, corpus, "good", baseline, ["--holes", "misses"]).returncode != 0:
        raise SystemExit("the good generation did not evaluate on the complete corpus")
    ranked = {
        (case["id"], result["key"])
        for case in json.loads(baseline.read_text())["runs"][0]["cases"]
        for result in case["results"]
    }
    verdicts = {}
    for change, candidate in CHANGES.items():
        for gate in gates:
            output = replay / f"truth-{change}-{gate}.json"
            done = evaluate(
                project,
                corpus,
                candidate,
                output,
                ["--baseline", baseline, *GATES[gate], "--holes", "misses"],
            )
            report = json.loads(output.read_text())
            entry = gate_of(report, gate)
            verdicts[change, gate] = {
                "exit": done.returncode,
                "passed": entry["passed"],
                "drop": entry["drop"],
            }
            ranked |= {
                (case["id"], result["key"])
                for case in report["runs"][0]["cases"]
                for result in case["results"]
            }
    relevant = {case["id"]: set(case["relevant"]) for case in full["cases"]}
    grades = replay / "truth.tsv"
    grades.write_text(
        "".join(f"{case}\t{key}\t{int(key in relevant[case])}\n" for case, key in sorted(ranked))
    )
    return verdicts, grades


def pooled_truth(
    project: Path,
    folder: Path,
    full: dict,
    sparse: dict[str, list[str]],
    replay: Path,
    change: str,
    gate: str,
) -> dict:
    """The verdict and drop once every hole of both runs is judged (the pooling convention: a
    relevant row no compared run returns stays unjudged, as ptah's complete judging of the holes
    leaves it): the complete corpus's relevant rows in either run's top k, and the one each case's
    sparse copy names."""
    pool: dict[str, set[str]] = {}
    for name in ("truth-good.json", f"truth-{change}-{gate}.json"):
        for case in json.loads((replay / name).read_text())["runs"][0]["cases"]:
            pool.setdefault(case["id"], set()).update(result["key"] for result in case["results"])
    relevant = {
        case["id"]: sorted(
            (set(case["relevant"]) & pool.get(case["id"], set())) | set(sparse[case["id"]])
        )
        for case in full["cases"]
    }
    folder.mkdir(parents=True, exist_ok=True)
    corpus = folder / "pooled.yaml"
    write_corpus(corpus, full, relevant)
    baseline = folder / "pooled-good.json"
    evaluate(project, corpus, "good", baseline, ["--holes", "misses"])
    output = folder / "pooled.json"
    done = evaluate(
        project,
        corpus,
        CHANGES[change],
        output,
        ["--baseline", baseline, *GATES[gate], "--holes", "misses"],
    )
    entry = gate_of(json.loads(output.read_text()), gate)
    return {"exit": done.returncode, "passed": entry["passed"], "drop": entry["drop"]}


def estimates(folder: Path, gate: str) -> list[dict]:
    """Each evaluation's estimate of the drop and its interval, as the loop's reports gave them."""
    found = []
    for report in sorted(
        folder.glob("report-*.json"), key=lambda path: int(path.stem.split("-")[1])
    ):
        try:
            entry = gate_of(json.loads(report.read_text()), gate)
        except (ValueError, json.JSONDecodeError):
            continue
        estimate = (entry.get("holes") or {}).get("estimate")
        if estimate:
            found.append(
                {
                    "drop": estimate["drop"],
                    "low": estimate["interval"][0],
                    "high": estimate["interval"][1],
                }
            )
    return found


def judged_now(corpus: Path, sparse: dict[str, list[str]]) -> dict[tuple[str, str], float]:
    """Every (case, key) judged since the sparse copy was made: the record's entries and the
    corpus's new grades."""
    judged = {}
    record = corpus.with_name(corpus.stem + ".judged.yaml")
    if record.exists():
        for case, keys in (yaml.safe_load(record.read_text()).get("cases") or {}).items():
            for key, entry in (keys or {}).items():
                judged[str(case), str(key)] = float(entry["grade"])
    for case in yaml.safe_load(corpus.read_text())["cases"]:
        for key, grade in (case.get("relevant") or {}).items():
            if str(key) not in sparse[case["id"]]:
                judged[case["id"], str(key)] = float(grade)
    return judged


def named_commands(entry: dict) -> list[str]:
    """The commands an inconclusive gate names: its ``holes.command`` first when present, then the
    detail's."""
    named = []
    command = (entry.get("holes") or {}).get("command")
    if command:
        named.append(command)
    return named + BACKTICKED.findall(entry.get("detail", ""))


def ptah_argv(command: str) -> list[str]:
    words = shlex.split(command)
    if words[0] != "ptah":
        raise ValueError(f"not a ptah command: {command}")
    return words[1:]


def judge_all_holes(
    project: Path, argv: list[str], folder: Path, grades: dict[tuple[str, str], int], step: int
) -> int:
    """Run the named ``corpus holes`` command, then judge every hole it lists from the truth in the
    terminal session (one answer a line, in the worklist's order); the number of holes listed."""
    worklist = folder / f"worklist-{step}.json"
    if ptah([*argv, "--output", worklist], cwd=project).returncode != 0:
        raise RuntimeError(f"ptah {shlex.join(argv)} failed")
    listed = json.loads(worklist.read_text())
    answers = [
        str(grades.get((case["id"], hole["key"]), "s"))
        for case in listed["cases"]
        for hole in case["holes"]
    ]
    corpus = argv[argv.index("holes") + 1]
    done = ptah(
        ["corpus", "judge", corpus, "--worklist", worklist],
        cwd=project,
        stdin="\n".join(answers) + "\nq\n",
    )
    if done.returncode != 0:
        raise RuntimeError(f"judging the worklist failed: {done.stderr}")
    return len(answers)


def settle(
    project: Path,
    folder: Path,
    entry: dict,
    truth_file: Path,
    grades: dict,
    seed: int,
    step: int,
    samples_left: bool,
) -> str:
    """Follow what an inconclusive gate names (its sample while ``samples_left``, else its hole
    listing when it names one); what was run."""
    commands = named_commands(entry)
    sample = [command for command in commands if " corpus sample " in f" {command} "]
    holes = [command for command in commands if " corpus holes " in f" {command} "]
    if sample and (samples_left or not holes):
        argv = ptah_argv(sample[0])
        if "--seed" not in argv:
            argv += ["--seed", str(seed)]
        argv += ["--grades", truth_file]
        done = ptah(argv, cwd=project)
        if done.returncode != 0:
            raise RuntimeError(f"ptah {shlex.join(map(str, argv))} failed: {done.stderr}")
        return f"sample {argv[argv.index('sample') + 2]}"
    if holes:
        return f"holes {judge_all_holes(project, ptah_argv(holes[0]), folder, grades, step)}"
    raise RuntimeError(f"the inconclusive gate names no command to follow: {entry.get('detail')!r}")


def rebaseline(project: Path, message: str, corpus: Path, folder: Path, count: int) -> Path | None:
    """Run the ``ptah report rebaseline`` an exit 2 names (its placeholders CORPUS and NEW.json
    filled in)."""
    named = [
        command
        for command in BACKTICKED.findall(message)
        if command.startswith("ptah report rebaseline")
    ]
    if not named:
        return None
    output = folder / f"baseline-{count}.json"
    argv = [
        str(corpus) if word == "CORPUS" else str(output) if word == "NEW.json" else word
        for word in ptah_argv(named[0])
    ]
    if "--output" in argv:
        output = Path(argv[argv.index("--output") + 1])
    done = ptah(argv, cwd=project)
    if done.returncode != 0:
        raise RuntimeError(f"ptah {shlex.join(argv)} failed: {done.stderr}")
    return output if output.is_absolute() else project / output


def replay_loop(
    project: Path,
    folder: Path,
    sparse_corpus: Path,
    sparse: dict,
    baseline: Path,
    candidate: str,
    gate: str,
    truth_file: Path,
    grades: dict,
    seed: int,
    cap: int,
    max_samples: int,
) -> dict:
    """One draw of one change and gate: ptah's loop followed from a fresh copy of the sparse
    corpus."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    corpus = folder / "corpus.yaml"
    shutil.copyfile(sparse_corpus, corpus)
    shutil.copyfile(baseline, folder / "baseline.json")
    baseline = folder / "baseline.json"
    exits, steps, rebaselines, problems = [], [], 0, []
    clock = time.perf_counter()
    while len(exits) < cap:
        report = folder / f"report-{len(exits)}.json"
        done = evaluate(
            project,
            corpus.relative_to(project),
            candidate,
            report,
            ["--baseline", baseline, *GATES[gate]],
        )
        exits.append(done.returncode)
        if done.returncode in (0, 1):
            break
        try:
            if done.returncode == 2:
                renewed = rebaseline(
                    project,
                    done.stderr + done.stdout,
                    corpus.relative_to(project),
                    folder,
                    rebaselines + 1,
                )
                if renewed is None:
                    problems.append(
                        f"exit 2 without a rebaseline to run: {(done.stderr or done.stdout)[-300:]}"
                    )
                    break
                baseline = renewed
                rebaselines += 1
                steps.append("rebaseline")
                continue
            if done.returncode != 4:
                problems.append(f"exit {done.returncode}: {(done.stderr or done.stdout)[-300:]}")
                break
            entry = gate_of(json.loads(report.read_text()), gate)
            samples_left = sum(step.startswith("sample") for step in steps) < max_samples
            steps.append(
                settle(
                    project,
                    folder,
                    entry,
                    truth_file,
                    grades,
                    seed * 100 + len(exits),
                    len(exits),
                    samples_left,
                )
            )
        except RuntimeError as exc:
            problems.append(str(exc)[-500:])
            break
    judged = judged_now(corpus, sparse)
    wrong = sum(1 for pair, grade in judged.items() if grade != grades.get(pair))
    final = {0: "pass", 1: "fail"}.get(exits[-1], "none")
    return {
        "exits": exits,
        "steps": steps,
        "rebaselines": rebaselines,
        "judgements": len(judged),
        "judged_relevant": sum(1 for grade in judged.values() if grade > 0),
        "judged_off_truth": wrong,
        "seconds": round(time.perf_counter() - clock, 1),
        "final": final,
        "problems": problems,
    }


def replay_collection(
    name: str, dataset: Path, work: Path, options: argparse.Namespace
) -> tuple[dict, list]:
    project = work / name
    small = options.small.get(name, SMALL_TOKENS.get(name, 64))
    build_seconds = make_project(dataset, project, small)
    replay = project / "replay"
    replay.mkdir(exist_ok=True)
    full = yaml.safe_load((project / "corpora" / "test-k10.yaml").read_text())
    if name in options.queries:
        full["cases"] = full["cases"][: options.queries[name]]
    full["cases"] = [
        {**case, "relevant": {str(key): grade for key, grade in case["relevant"].items()}}
        for case in full["cases"]
    ]
    clock = time.perf_counter()
    verdicts, truth_file = truth(project, replay, full, options.gates)
    truth_seconds = round(time.perf_counter() - clock, 1)
    grades = {}
    for line in truth_file.read_text().splitlines():
        case, key, grade = line.split("\t")
        grades[case, key] = int(grade)
    rows = []
    for draw in range(options.draws):
        chooser = random.Random(f"{options.seed}-{name}-{draw}")
        sparse = {case["id"]: [chooser.choice(sorted(case["relevant"]))] for case in full["cases"]}
        folder = replay / f"draw-{draw}"
        folder.mkdir(exist_ok=True)
        sparse_corpus = folder / "sparse.yaml"
        write_corpus(sparse_corpus, full, sparse)
        baseline = folder / "baseline.json"
        if evaluate(
            project, sparse_corpus.relative_to(project), "good", baseline, []
        ).returncode not in (0, 4):
            raise SystemExit(f"the sparse baseline of draw {draw} did not evaluate")
        for change in options.changes:
            for gate in options.gates:
                row = replay_loop(
                    project,
                    folder / f"{change}-{gate}",
                    sparse_corpus,
                    sparse,
                    baseline,
                    CHANGES[change],
                    gate,
                    truth_file,
                    grades,
                    draw,
                    options.max_iterations,
                    options.max_samples,
                )
                expected = "pass" if verdicts[change, gate]["passed"] else "fail"
                pooled = pooled_truth(
                    project, folder / f"{change}-{gate}-pooled", full, sparse, replay, change, gate
                )
                true_drop = verdicts[change, gate]["drop"]
                seen = estimates(folder / f"{change}-{gate}", gate)
                row.update(
                    {
                        "collection": name,
                        "change": change,
                        "gate": gate,
                        "draw": draw,
                        "cases": len(full["cases"]),
                        "truth": expected,
                        "true_drop": true_drop,
                        "correct": row["final"] == expected,
                        "pooled_truth": "pass" if pooled["passed"] else "fail",
                        "pooled_drop": pooled["drop"],
                        "correct_pooled": row["final"] == ("pass" if pooled["passed"] else "fail"),
                        "estimates": seen,
                        "covered": sum(e["low"] <= true_drop <= e["high"] for e in seen),
                        "covered_pooled": sum(
                            e["low"] <= pooled["drop"] <= e["high"] for e in seen
                        ),
                    }
                )
                rows.append(row)
                print(
                    f"{name} {change} {gate} draw {draw}: exits {row['exits']} {row['steps']} "
                    f"{row['judgements']} judged, {row['final']} (truth {expected}, pooled {row['pooled_truth']}), "
                    f"estimates covering {row['covered']}/{len(seen)} ({row['covered_pooled']} pooled), "
                    f"{row['seconds']} s",
                    flush=True,
                )
    setup = {
        "small_max_seq_length": small,
        "cases": len(full["cases"]),
        "build_seconds": build_seconds,
        "truth_seconds": truth_seconds,
        "truth": {f"{change} {gate}": verdict for (change, gate), verdict in verdicts.items()},
    }
    return setup, rows


def summary(rows: list[dict]) -> list[str]:
    header = (
        "| collection | change | gate | true drop | truth | draws | wrong final | wrong vs pooled | mean judgements "
        "(per question) | mean evaluations | rebaselines | first exits | estimates covering (pooled) | mean s |"
    )
    lines = [
        header,
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        groups.setdefault((row["collection"], row["change"], row["gate"]), []).append(row)
    for (collection, change, gate), group in groups.items():
        first = Counter(row["exits"][0] for row in group)
        judgements = sum(row["judgements"] for row in group) / len(group)
        lines.append(
            f"| {collection} | {change} | {gate} | {group[0]['true_drop']:+.4f} | {group[0]['truth']} | {len(group)} | "
            f"{sum(not row['correct'] for row in group)} | "
            f"{sum(not row.get('correct_pooled', row['correct']) for row in group)} | "
            f"{judgements:.1f} ({judgements / group[0]['cases']:.2f}) | "
            f"{sum(len(row['exits']) for row in group) / len(group):.1f} | "
            f"{sum(row['rebaselines'] for row in group) / len(group):.1f} | "
            f"{', '.join(f'{code}: {count}' for code, count in sorted(first.items()))} | "
            f"{covering(group)} | {sum(row['seconds'] for row in group) / len(group):.0f} |"
        )
    return lines


def covering(group: list[dict]) -> str:
    """How many of the group's estimates covered the complete-judgement drop (and the pooled one),
    of all."""
    total = sum(len(row.get("estimates", ())) for row in group)
    if not total:
        return "-"
    return (
        f"{sum(row['covered'] for row in group)}/{total} "
        f"({sum(row['covered_pooled'] for row in group)})"
    )


def pairs(values: list[str], what: str) -> dict[str, str]:
    parsed = {}
    for value in values:
        name, sep, rest = value.partition("=")
        if not sep:
            raise SystemExit(f"{what}: write NAME=VALUE, not {value!r}")
        parsed[name] = rest
    return parsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--dataset",
        action="append",
        default=[],
        metavar="NAME=DIR",
        help="a BEIR collection (repeatable; default: scifact and cisi in ../shared/datasets)",
    )
    parser.add_argument(
        "--work", required=True, type=Path, help="folder for the projects (kept and reused)"
    )
    parser.add_argument("--draws", type=int, default=10)
    parser.add_argument("--seed", type=int, default=38)
    parser.add_argument("--changes", nargs="+", default=list(CHANGES), choices=list(CHANGES))
    parser.add_argument("--gates", nargs="+", default=list(GATES), choices=list(GATES))
    parser.add_argument(
        "--small",
        action="append",
        default=[],
        metavar="NAME=TOKENS",
        help="the small regression's max_seq_length for a collection (default: cisi 64, scifact 96)",
    )
    parser.add_argument(
        "--queries",
        action="append",
        default=[],
        metavar="NAME=N",
        help="use only a collection's first N judged queries",
    )
    parser.add_argument(
        "--max-samples",
        type=int,
        default=3,
        help="samples judged before following the sentence's hole listing instead (when it names one)",
    )
    parser.add_argument(
        "--max-iterations", type=int, default=20, help="evaluations per loop at most"
    )
    parser.add_argument(
        "--json", dest="json_file", type=Path, help="write every row (and the setup) here"
    )
    options = parser.parse_args(argv)
    datasets = pairs(options.dataset, "--dataset") or {
        "scifact": str(DATASETS / "scifact"),
        "cisi": str(DATASETS / "cisi"),
    }
    options.small = {name: int(tokens) for name, tokens in pairs(options.small, "--small").items()}
    options.queries = {
        name: int(count) for name, count in pairs(options.queries, "--queries").items()
    }
    options.work.mkdir(parents=True, exist_ok=True)
    setups, rows = {}, []
    clock = time.perf_counter()
    for name, directory in datasets.items():
        setups[name], found = replay_collection(
            name, Path(directory).resolve(), options.work.resolve(), options
        )
        rows += found
        if options.json_file:
            options.json_file.write_text(
                json.dumps({"setup": setups, "rows": rows}, indent=2) + "\n"
            )
    print("\n".join(summary(rows)))
    print(f"total {time.perf_counter() - clock:.0f} s; setup {json.dumps(setups)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
