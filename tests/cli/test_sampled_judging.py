"""Settling an inconclusive gate with a random sample: the bundled example's body-only recall gate, end to end.

body-only's recall falls 0.16 below the checked-in baseline on the bundled corpus, but 86 rows of its top 5s
were never judged: the gate is inconclusive (18 of them taken relevant would make it pass). The gate names the
smallest random sample that settles it if none of the sample is relevant; judging that sample (from a grades
file: none relevant) makes the gate fail conclusively. The real MiniLM model (tests/cli/conftest.py).
"""

from __future__ import annotations

import json
import shutil

from tests.cli.conftest import REPO

GATE = ("--baseline", str(REPO / "examples/support/baseline.json"), "--max-recall-drop", "0.02")


def recall_gate(cli, folder, output) -> tuple[int, dict]:
    code, _out, err = cli("inference", "evaluate", "--spec", folder / "ptah.yaml", "--corpus", folder / "support.yaml",
                          "-g", "body-only", *GATE, "--output", output)
    assert code in (1, 4), err
    (gate,) = [gate for gate in json.loads(output.read_text())["gates"] if gate["name"] == "max-recall-drop"]
    return code, gate


def test_judging_the_named_sample_with_none_relevant_settles_the_gate(example_project, cli, tmp_path):
    folder = tmp_path / "support"
    shutil.copytree(example_project, folder)
    shutil.copy(REPO / "corpora/support.yaml", folder / "support.yaml")
    _, gate = recall_gate(cli, folder, tmp_path / "before.json")
    assert (gate["passed"], gate["inconclusive"]) == (False, True)
    holes = gate["holes"]
    assert (holes["holes"], holes["flip_count"], holes["plausible_relevant"], holes["settling_sample"]) == (86, 18, 86, 12)
    command = f"`ptah corpus judge {folder / 'support.yaml'} --sample 12 -g body-only`"
    assert command in gate["detail"]

    # the grades a script has: every row a case's top 5 holds, none relevant
    code, out, err = cli("corpus", "holes", folder / "support.yaml", "--spec", folder / "ptah.yaml", "-g", "body-only",
                         "--json")
    assert code == 0, err
    keys = sorted({hole["key"] for case in json.loads(out)["cases"] for hole in case["holes"]})
    (tmp_path / "grades.tsv").write_text("# every hole judged not relevant\n" + "".join(f"{key}\t0\n" for key in keys))
    before = (folder / "support.yaml").read_bytes()
    code, out, err = cli("corpus", "judge", folder / "support.yaml", "--spec", folder / "ptah.yaml", "--sample", "12",
                         "--seed", "7", "-g", "body-only", "--grades", tmp_path / "grades.tsv")
    assert code == 0, err
    assert "12 holes drawn at random (seed 7) from the holes of 1 run" in out
    assert out.rstrip().endswith("sample: 12 of 12 drawn holes judged, 0 relevant")
    assert (folder / "support.yaml").read_bytes() == before  # grades of 0 live in the record only

    _, gate = recall_gate(cli, folder, tmp_path / "after.json")
    assert (gate["passed"], gate["inconclusive"]) == (False, False)
    assert gate["holes"]["sample"] == {"seed": 7, "population": 86, "drawn": 12, "relevant": 0}
    assert (gate["holes"]["holes"], gate["holes"]["flip_count"], gate["holes"]["plausible_relevant"]) == (74, 18, 17)
    assert gate["detail"].endswith(
        "18 unjudged rows of 74 would have to be relevant to pass, and at most 17 plausibly are (one-sided 95% bound "
        "from a random sample of 12 of 86 holes with 0 relevant)")

    # a sample drawn from other holes (here: title-body's) does not count for body-only, and the report says so
    code, out, err = cli("corpus", "judge", folder / "support.yaml", "--spec", folder / "ptah.yaml", "--sample", "3",
                         "--seed", "1", "-g", "title-body", "--grades", tmp_path / "grades.tsv")
    assert code == 0, err
    _, gate = recall_gate(cli, folder, tmp_path / "again.json")
    assert gate["holes"]["sample"]["seed"] == 7 and gate["holes"]["samples_ignored"] == []
