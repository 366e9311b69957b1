"""``ptah report rebaseline`` on a report of retriever runs: its runs measured again on a corpus
judged or grown since, so the new report is the baseline later evaluations are gated against."""

from __future__ import annotations

import json

from tests.retriever.conftest import small_project
from tests.retriever.test_hostile_answers import endpoint

RECORDED = (
    '{"case": "a", "keys": ["1", "3"]}\n'
    '{"case": "b", "keys": ["3", "2"]}\n'
    '{"case": "c", "keys": ["4", "2"]}\n'
)


def run(cli, folder, *extra, corpus=None):
    return cli(
        "inference",
        "evaluate",
        "--spec",
        folder / "ptah.yaml",
        "--corpus",
        corpus or folder / "corpus.yaml",
        *extra,
    )


def rebaseline(cli, folder, old, corpus, new):
    return cli(
        "report",
        "rebaseline",
        old,
        "--corpus",
        corpus,
        "--spec",
        folder / "ptah.yaml",
        "--output",
        new,
    )


def runs(path) -> list[dict]:
    return json.loads(path.read_text())["runs"]


def test_a_recorded_runs_report_is_measured_again_on_the_judged_corpus_and_gates(tmp_path, cli):
    folder = small_project(tmp_path, "http://127.0.0.1:9/unused")
    (folder / "run.jsonl").write_text(RECORDED)
    old, mixed = tmp_path / "old.json", tmp_path / "mixed.json"
    assert run(cli, folder, "--variant", "rec", "--output", old).code == 0
    both = run(cli, folder, "--channel", "lexical", "--variant", "rec", "--output", mixed)
    assert both.code == 1  # lexical misses the required keys: a report all the same
    judged = folder / "judged.yaml"
    judged.write_text(
        (folder / "corpus.yaml")
        .read_text()
        .replace('required: ["4"]}', 'required: ["4"], relevant: {"2": 1}}')
    )

    new = tmp_path / "new.json"
    again = rebaseline(cli, folder, old, judged, new)
    assert again.code == 0, again.err
    digest = json.loads(new.read_text())["corpus"]["digest"]
    assert again.out.splitlines() == [
        f"{old} measured again on {judged} ({digest}):",
        "  rec: recall 1.0000, MRR 0.8333, nDCG 0.8770",
        f"wrote {new}",
    ]
    assert [r["generation"]["identity"] for r in runs(new)] == [
        r["generation"]["identity"] for r in runs(old)
    ]
    new_mixed = tmp_path / "new-mixed.json"
    assert rebaseline(cli, folder, mixed, judged, new_mixed).code == 0
    assert [r["generation"]["name"] for r in runs(new_mixed)] == ["lexical:docs", "rec"]

    later = tmp_path / "later.json"
    gated = run(
        cli,
        folder,
        "--variant",
        "rec",
        "--baseline",
        new,
        "--max-recall-drop",
        "0",
        "--output",
        later,
        corpus=judged,
    )
    assert gated.code == 0, gated.err
    report = json.loads(later.read_text())
    drop = next(g for g in report["gates"] if g["name"] == "max-recall-drop")
    assert (drop["generation"], drop["passed"], drop["drop"]) == ("rec", True, 0.0)
    assert "sections" not in report  # the same answers as the baseline's


def test_a_services_run_is_measured_again_on_added_cases_and_refused_once_it_answers_otherwise(
    service, tmp_path, cli
):
    folder = small_project(tmp_path, endpoint(service))
    old = tmp_path / "old.json"
    assert run(cli, folder, "--variant", "svc", "--output", old).code == 0
    grown = folder / "grown.yaml"
    grown.write_text(
        (folder / "corpus.yaml").read_text() + '  - {id: d, query: "bd", required: ["2"]}\n'
    )

    new = tmp_path / "new.json"
    again = rebaseline(cli, folder, old, grown, new)
    assert again.code == 0, again.err
    (before,), (now,) = runs(old), runs(new)
    assert [case["id"] for case in now["cases"]] == ["a", "b", "c", "d"]
    assert now["generation"]["identity"] != before["generation"]["identity"]  # four cases asked
    assert [c["results"] for c in now["cases"][:3]] == [c["results"] for c in before["cases"]]
    gated = run(
        cli, folder, "--variant", "svc", "--baseline", new, "--max-recall-drop", "0", corpus=grown
    )
    assert gated.code == 0, gated.err

    service.always = "swapped"  # case a's two keys in the other order
    refused = rebaseline(cli, folder, old, grown, tmp_path / "refused.json")
    assert (refused.code, refused.err) == (
        3,
        f"cannot rebaseline {old}: run svc's search answers otherwise now than the old report "
        "recorded (case a ranked otherwise in the top k); its run can no longer be reproduced\n",
    )
    assert not (tmp_path / "refused.json").exists()


def test_a_variant_no_longer_declared_cannot_be_measured_again(tmp_path, cli):
    folder = small_project(tmp_path, "http://127.0.0.1:9/unused")
    (folder / "run.jsonl").write_text(RECORDED)
    old = tmp_path / "old.json"
    assert run(cli, folder, "--variant", "rec", "--output", old).code == 0
    spec = folder / "ptah.yaml"
    spec.write_text(
        spec.read_text().replace(
            "  rec:\n    channels: [retriever]\n    options: {run: run.jsonl}\n", ""
        )
    )
    refused = rebaseline(cli, folder, old, folder / "corpus.yaml", tmp_path / "new.json")
    assert (refused.code, refused.err) == (
        3,
        f"cannot rebaseline {old}: run rec was the variant rec, which the specification no longer "
        "declares\n",
    )
