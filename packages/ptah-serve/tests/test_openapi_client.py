"""The OpenAPI document serves a client: openapi-python-client generates one from ``/openapi.json``
and it registers a corpus and drives an evaluation through the real server; and each request
option's declaration is what the command line, the server and the document enforce."""

from __future__ import annotations

import importlib
import io
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ptah_serve.evaluations import SERVED


@pytest.fixture(scope="module")
def generated(server, tmp_path_factory):
    """The client package openapi-python-client makes of the served document, imported."""
    folder = tmp_path_factory.mktemp("client")
    (folder / "openapi.json").write_text(server.client().get("/openapi.json").text)
    (folder / "config.yaml").write_text("post_hooks: []\n")
    made = subprocess.run(
        [
            Path(sys.executable).parent / "openapi-python-client",
            "generate",
            "--path",
            folder / "openapi.json",
            "--config",
            folder / "config.yaml",
            "--meta",
            "none",
            "--output-path",
            folder / "ptah_client",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert made.returncode == 0, made.stdout + made.stderr
    sys.path.insert(0, str(folder))
    try:
        yield importlib.import_module("ptah_client")
    finally:
        sys.path.remove(str(folder))
        for name in [
            name for name in sys.modules if name == "ptah_client" or name.startswith("ptah_client.")
        ]:
            del sys.modules[name]


def test_a_generated_client_registers_a_corpus_and_drives_an_evaluation(project, server, generated):
    from ptah_client.api.default import get_evaluation, register_corpus, start_evaluation
    from ptah_client.models import (
        EvaluationRequest,
        EvaluationRequestSearch,
        EvaluationStatus,
        Problem,
    )
    from ptah_client.types import File

    client = generated.AuthenticatedClient(base_url=server.url, token=project.tokens["manage"])
    corpus = register_corpus.sync(
        client=client, body=File(payload=io.BytesIO(project.corpus.read_bytes()))
    )
    assert (corpus.name, corpus.cases) == ("support", 8)

    refused = start_evaluation.sync(
        client=client,
        body=EvaluationRequest(
            corpus=corpus.digest, search=EvaluationRequestSearch.INDEX, ef_search=1001
        ),
    )
    assert isinstance(refused, Problem)
    assert (refused.status, refused.detail) == (
        422,
        "ef_search: must be a whole number from 1 to 1,000, not 1001.",
    )

    queued = start_evaluation.sync(
        client=client,
        body=EvaluationRequest(
            corpus=corpus.digest,
            generations=["docs", "wide"],
            measures=["MAP@3"],
            bootstrap=200,
            seed=7,
        ),
    )
    assert queued.status == "queued"
    deadline = time.monotonic() + 120
    job = get_evaluation.sync(queued.id, client=client)
    while (
        job.status in (EvaluationStatus.QUEUED, EvaluationStatus.RUNNING)
        and time.monotonic() < deadline
    ):
        time.sleep(0.05)
        job = get_evaluation.sync(queued.id, client=client)
    assert job.status == EvaluationStatus.DONE, job.error
    assert (
        job.request.corpus,
        job.request.generations,
        job.request.bootstrap,
        job.request.seed,
    ) == (corpus.digest, ["docs", "wide"], 200, 7)
    report = job.report.to_dict()
    assert (
        [run.name for run in job.runs]
        == [run["generation"]["name"] for run in report["runs"]]
        == ["docs", "wide"]
    )
    for run, written in zip(job.runs, report["runs"]):
        assert set(run.means.additional_properties) == {"recall", "MRR", "nDCG", "MAP@3"}
        assert run.means["nDCG"].value == written["aggregates"]["ndcg"]["value"]
        assert run.means["MAP@3"].denominator == written["aggregates"]["MAP@3"]["denominator"] == 8
    assert report["comparison"]["statistics"]["seed"] == 7
    assert job.verdict.value == report["verdict"]


@pytest.mark.parametrize(
    "option",
    [option for option in SERVED if (option.low, option.high) != (None, None)],
    ids=lambda option: option.name,
)
def test_each_bound_is_enforced_alike_by_the_cli_the_server_and_the_document(
    project, server, cli, option
):
    beyond = option.kind(option.high + 1 if option.high is not None else option.low - 1)
    problem = f"must be {option.expected()}, not {beyond!r}."
    document = server.client().get("/openapi.json").json()
    schema = document["components"]["schemas"]["EvaluationRequest"]["properties"][option.name]
    assert (schema.get("minimum"), schema.get("maximum")) == (option.low, option.high)
    answer = server.client(project.tokens["manage"]).post(
        "/v1/evaluations", json={"corpus": "sha256:" + "0" * 64, option.name: beyond}
    )
    assert (answer.status_code, answer.json()["code"], answer.json()["detail"]) == (
        422,
        "OptionError",
        f"{option.name}: {problem}",
    )
    code, _, err = cli(
        "inference", "evaluate", "--corpus", project.corpus, f"{option.spellings[0]}={beyond}"
    )
    assert (code, err) == (2, f"{option.spellings[0]}: {problem}\n")
