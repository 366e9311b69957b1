"""The server accepts an evaluation of ptah's retriever channel (issue 43): a variant of the
specification that replays a recorded run is evaluated as the CLI evaluates it."""

from __future__ import annotations

import json

import pytest
from serving import Server, make_project, register, run_cli, wait_done


@pytest.fixture(scope="module")
def retriever_server(tmp_path_factory):
    project = make_project(tmp_path_factory.mktemp("retriever"))
    vector = project.spec.parent / "vector.json"
    assert run_cli(
        None,
        "inference",
        "evaluate",
        "--spec",
        project.spec,
        "--corpus",
        project.corpus,
        "--output",
        vector,
    ).code in (0, 1)
    (run,) = json.loads(vector.read_text())["runs"]
    recorded = "".join(
        json.dumps({"case": case["id"], "keys": [r["key"] for r in case["results"]]}) + "\n"
        for case in run["cases"]
    )
    (project.spec.parent / "team.jsonl").write_text(recorded)
    with project.spec.open("a") as spec:
        spec.write("  team: {channels: [retriever], options: {run: team.jsonl}}\n")
    running = Server(project.spec, "--workers", "1").start()
    yield project, running, run
    running.stop()


def test_a_retriever_variant_is_evaluated_in_a_request(retriever_server):
    project, server, vector = retriever_server
    manage = server.client(project.tokens["manage"])
    digest = register(manage, project.corpus.read_text()).json()["digest"]
    started = manage.post("/v1/evaluations", json={"corpus": digest, "variants": ["team"]})
    assert started.status_code == 202, started.text
    job = wait_done(manage, started.json()["id"])
    assert job["status"] == "done", job
    (run,) = job["report"]["runs"]
    assert run["search"]["channel"] == "retriever"
    assert [case["metrics"] for case in run["cases"]] == [
        case["metrics"] for case in vector["cases"]
    ]
    note = run["generation"]["verification"]["note"]
    assert note == "coverage and freshness are not verified for an outside retriever"
