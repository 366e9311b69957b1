"""Issue 43's "done when": the bundled example gated through the retriever channel, over an
embedded Qdrant collection of the very MiniLM vectors ptah stored for ``title-body``, served over
HTTP, and through the run it recorded, gives ptah's own vector channel's measures exactly and the
same rankings (rows whose scores agree to float32 rounding may trade places)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ptah.retriever.channel import NOT_VERIFIED
from tests.cli.conftest import BASELINE, CORPUS, evaluate
from tests.retriever.team_search import TeamSearch

ROUNDING = 1e-6  # float32 cosine (Qdrant) against ptah's float64 re-scoring of the same vectors


def retriever_spec(example: Path, folder: Path, url: str, run: Path) -> Path:
    """The example's specification in ``folder`` (its database and store where they are), with the
    variants ``team`` (the service), ``replay`` (the recorded run) and ``team-reranked``."""
    spec = (example / "ptah.yaml").read_text()
    spec = spec.replace("sqlite:///support.db", f"sqlite:///{example / 'support.db'}")
    spec = spec.replace("store: .ptah/ptah.db", f"store: {example / '.ptah' / 'ptah.db'}")
    spec += (
        f"  team:\n    channels: [retriever]\n    options: {{url: {url}, batch_size: 8}}\n"
        f"  replay:\n    channels: [retriever]\n    options: {{run: {run}}}\n"
        "  team-reranked:\n    channels: [retriever]\n"
        f"    options: {{url: {url}}}\n"
        "    rerank: {kind: bi-encoder, generation: title-body, candidates: 20}\n"
    )
    (folder / "ptah.yaml").write_text(spec)
    return folder / "ptah.yaml"


@pytest.fixture(scope="module")
def team(example_project):
    search = TeamSearch(example_project / "ptah.yaml", "title-body")
    yield search
    search.close()


def same_up_to_rounding(ours: list[dict], theirs: list[dict]) -> bool:
    """The two rankings hold the same keys, each at the same rank but where rows whose scores (ours,
    float64) lie within :data:`ROUNDING` of each other trade places."""
    if len(ours) != len(theirs):
        return False
    for mine, other in zip(ours, theirs):
        if mine["key"] == other["key"]:
            continue
        near = [r["key"] for r in ours if abs(r["score"] - mine["score"]) <= ROUNDING]
        if other["key"] not in near:
            return False
    return True


def test_qdrant_over_http_and_its_recorded_run_give_the_vector_channels_verdict(
    example_project, team, tmp_path, cli
):
    run = tmp_path / "team.jsonl"
    spec = retriever_spec(example_project, tmp_path, team.url, run)
    project = spec.parent
    live = cli(
        *evaluate(project, "-g", "title-body", "--variant", "team"),
        "--record-run",
        run,
        "--output",
        tmp_path / "live.json",
    )
    assert live.code == 0, live.err
    vector, served = json.loads((tmp_path / "live.json").read_text())["runs"]
    names = (vector["generation"]["name"], served["generation"]["name"])
    assert names == ("title-body", "team")
    assert served["search"]["channel"] == "retriever"
    assert served["generation"]["rows"] == vector["generation"]["rows"]  # the table's, as filtered
    for measure in ("recall", "mrr", "ndcg", "required", "forbidden", "judged"):
        assert served["aggregates"][measure] == vector["aggregates"][measure]
    for ours, theirs in zip(vector["cases"], served["cases"]):
        assert ours["metrics"] == theirs["metrics"]
        assert ours["holes"] == theirs["holes"]
        assert same_up_to_rounding(ours["results"], theirs["results"]), ours["id"]
    note = served["generation"]["verification"]["note"]
    assert note.startswith("coverage and freshness are not verified for an outside retriever")
    assert "coverage and freshness are not verified for an outside retriever" in live.out
    # the same cases asked in batches of 8: 25 cases, 4 requests
    assert len(team.service.requests) == 4

    replayed = cli(
        *evaluate(project, "-g", "title-body", "--variant", "replay"),
        "--output",
        tmp_path / "replay.json",
    )
    assert replayed.code == 0, replayed.err
    _, again = json.loads((tmp_path / "replay.json").read_text())["runs"]
    assert again["generation"]["identity"] == served["generation"]["identity"]
    assert again["aggregates"] == served["aggregates"]
    assert [c["results"] for c in again["cases"]] == [c["results"] for c in served["cases"]]
    assert len(team.service.requests) == 4  # a replay asks no service


def test_a_variant_reranks_the_services_candidates(example_project, team, tmp_path, cli):
    spec = retriever_spec(example_project, tmp_path, team.url, tmp_path / "unused.jsonl")
    team.service.reset()
    done = cli(
        *evaluate(spec.parent, "--variant", "team-reranked"), "--output", tmp_path / "r.json"
    )
    assert done.code == 0, done.err
    (run,) = json.loads((tmp_path / "r.json").read_text())["runs"]
    assert run["search"]["rerank"] == {"kind": "bi-encoder", "candidates": 20}
    assert {query["k"] for query in team.service.requests[0]["body"]["queries"]} == {20}


def test_a_replay_of_the_recorded_run_gives_the_exact_verdict_and_a_drift_is_told(
    example_project, team, tmp_path, cli
):
    recorded = tmp_path / "team.jsonl"
    live_spec = retriever_spec(example_project, tmp_path, team.url, recorded)
    replay_folder = tmp_path / "replay"
    replay_folder.mkdir()
    replay_spec = retriever_spec(example_project, replay_folder, team.url, recorded)
    text = replay_spec.read_text().replace(
        f"{{url: {team.url}, batch_size: 8}}", f"{{run: {recorded}}}"
    )
    replay_spec.write_text(text)
    team.service.reset()
    live = cli(
        *evaluate(live_spec.parent, "--variant", "team"),
        "--record-run",
        recorded,
        "--output",
        tmp_path / "live.json",
    )
    assert live.code == 0, live.err
    (served,) = json.loads((tmp_path / "live.json").read_text())["runs"]
    digest = served["generation"]["identity"]
    assert served["generation"]["verification"]["note"] == (
        "coverage and freshness are not verified for an outside retriever; its rankings "
        f"({digest}) are recorded in {recorded}"
    )
    assert len(recorded.read_text().splitlines()) == 25

    replayed = cli(
        *evaluate(replay_folder, "--variant", "team"),
        "--baseline",
        tmp_path / "live.json",
        "--max-recall-drop",
        "0",
        "--output",
        tmp_path / "replayed.json",
    )
    assert replayed.code == 0, replayed.err
    report = json.loads((tmp_path / "replayed.json").read_text())
    (again,) = report["runs"]
    assert again["generation"]["identity"] == digest
    assert [c["results"] for c in again["cases"]] == [c["results"] for c in served["cases"]]
    assert "sections" not in report  # the same answers: nothing to tell

    team.service.reset()
    team.service.always = "drifted"  # each request's first case: its top two rows swapped
    drifted = cli(
        *evaluate(live_spec.parent, "--variant", "team"),
        "--baseline",
        tmp_path / "live.json",
        "--record-run",
        recorded,
        "--output",
        tmp_path / "drifted.json",
    )
    report = json.loads((tmp_path / "drifted.json").read_text())
    (changed,) = report["sections"]["retriever"]["changed"]
    every_eighth = [case["id"] for case in served["cases"]][::8]  # batches of 8
    assert changed["cases"] == every_eighth
    assert changed["before"] == digest != changed["now"]
    gate = next(g for g in report["gates"] if g["name"] == "retriever-answers")
    assert gate["passed"] is True
    assert gate["detail"].startswith("the retriever answered otherwise than the baseline's run")
    assert "retriever-answers" in drifted.out
    (run,) = report["runs"]
    assert run["generation"]["verification"]["note"].endswith(
        f", replacing a recording that answered otherwise ({digest})"
    )
    team.service.reset()


def test_holes_samples_slices_gates_and_ci_outputs_work_on_a_retriever_run(
    example_project, team, tmp_path, cli
):
    spec = retriever_spec(example_project, tmp_path, team.url, tmp_path / "unused.jsonl")
    corpus = tmp_path / "support.yaml"
    corpus.write_text(CORPUS.read_text())
    baseline = BASELINE  # the checked-in report: title-body's vector run
    outputs = {name: tmp_path / f"report.{name}" for name in ("json", "xml", "md", "html")}
    gated = cli(
        *evaluate(spec.parent, "--variant", "team", corpus=corpus),
        "--baseline",
        baseline,
        "--max-recall-drop",
        "0.02",
        "--output",
        outputs["json"],
        "--junit",
        outputs["xml"],
        "--markdown",
        outputs["md"],
        "--html",
        outputs["html"],
    )
    assert gated.code == 0, gated.err
    report = json.loads(outputs["json"].read_text())
    (run,) = report["runs"]
    assert run["slices"]  # the corpus's tags, measured on the retriever's rankings
    drop = next(g for g in report["gates"] if g["name"] == "max-recall-drop")
    assert (drop["generation"], drop["passed"], drop["drop"]) == ("team", True, 0.0)
    assert drop["holes"]["holes"] > 0  # unjudged rows of either run, bounded
    assert 'testcase name="max-recall-drop' in outputs["xml"].read_text()
    assert "team" in outputs["md"].read_text()
    assert 'data-run="team"' in outputs["html"].read_text()
    # what ptah cannot know, said by every renderer as by the terminal
    assert f"\n- `team (retriever)`: `{NOT_VERIFIED}`\n" in outputs["md"].read_text()
    assert (
        f'<p class="meta" data-note="team">team: {NOT_VERIFIED}</p>' in outputs["html"].read_text()
    )
    assert f"\n  {NOT_VERIFIED}\n" in gated.out

    holes = cli("corpus", "holes", corpus, "--variant", "team", "--spec", spec, "--json")
    assert holes.code == 0, holes.err
    worklist = json.loads(holes.out)
    assert worklist["runs"] == ["team"]
    assert sum(len(case["holes"]) for case in worklist["cases"]) > 0

    keys = {hole["key"] for case in worklist["cases"] for hole in case["holes"]}
    grades = tmp_path / "grades.tsv"
    grades.write_text("".join(f"{key}\t0\n" for key in sorted(keys)))
    sampled = cli(
        "corpus",
        "sample",
        corpus,
        "4",
        "--seed",
        "7",
        "--grades",
        grades,
        "--variant",
        "team",
        "--spec",
        spec,
    )
    assert sampled.code == 0, sampled.err
    record = (tmp_path / "support.judged.yaml").read_text()
    assert "seed: 7" in record
    assert record.count("sample: 0") == 4
