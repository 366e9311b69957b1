"""The openai embedder kind against a real OpenAI-compatible server on 127.0.0.1 serving MiniLM
(openai_server.py)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

from ptah.adapters.embedders import http_client, openai_compatible
from ptah.adapters.embedders.openai_compatible import OpenAICompatibleKind
from ptah.adapters.embedders.sentence_transformers import SentenceTransformerEmbedder
from ptah.core.errors import EXIT_OPERATIONAL, ServiceUnavailable
from ptah.core.spec import GenerationSettings, ServiceSettings
from tests.adapters.openai_server import MODEL, EmbeddingServer
from tests.cli.conftest import copy_example
from tests.conftest import run_cli

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "corpora" / "support.yaml"
MINILM = "sentence-transformers/all-MiniLM-L6-v2"
KEY = "sk-ptah-SENTINEL-7f3c9a1e5b"
TEXTS = [
    "How do I reset my password?",
    "Export invoices as CSV",
    "Two-factor authentication setup",
    "Cancel a subscription",
    "",
    "Refunds take 5 to 10 days",
    "Change the billing address",
]
FAST = http_client.Policy(attempts=3, backoff_s=0.01, max_delay_s=2.0)
SLOW_S, TIMEOUT_S = (
    1.5,
    0.75,
)  # the slow fault sleeps past the timeout; a real answer comes well within it


@pytest.fixture(scope="module")
def local():
    return SentenceTransformerEmbedder(
        GenerationSettings("local", MINILM, max_seq_length=256), "/nowhere"
    )


@pytest.fixture(scope="module")
def server(local):
    served = EmbeddingServer(local.model, max_seq_length=256)
    yield served
    served.close()


@pytest.fixture(autouse=True)
def fast_policy(monkeypatch, request):
    monkeypatch.setattr(openai_compatible, "POLICY", FAST)
    if "server" in request.fixturenames:
        request.getfixturevalue("server").reset()


def service(server, *, batch_size=64, dimension=None, concurrency=4, key_env="OPENAI_API_KEY"):
    return GenerationSettings(
        "served",
        MODEL,
        batch_size=batch_size,
        dimension=dimension,
        service=ServiceSettings("openai", server.base_url, key_env, concurrency),
    )


def open_served(server, mode=None, **kwargs):
    embedder = OpenAICompatibleKind().open(
        service(server, **kwargs), "/nowhere", env={"OPENAI_API_KEY": KEY}
    )
    if mode == "slow":
        embedder.client.timeout_s = TIMEOUT_S
        server.slow_s = SLOW_S
    server.reset()
    return embedder


def test_vectors_served_over_http_equal_local_encoding(server, local):
    embedder = open_served(server, batch_size=3)
    server.requests.extend(
        [
            {
                "body": {"input": [openai_compatible.PROBE_TEXT], "model": MODEL},
                "authorization": f"Bearer {KEY}",
            }
        ]
    )  # open_served forgot the probe
    vectors = embedder.embed_documents(TEXTS)
    assert embedder.dimension == 384 and vectors.dtype == np.float32 and vectors.shape == (7, 384)
    assert np.abs(vectors - local.embed_documents(TEXTS)).max() <= 1e-6
    # a probe to learn the dimension, then requests of at most 3 inputs, 4 in flight at most
    assert sorted(len(r["body"]["input"]) for r in server.requests) == [1, 1, 3, 3]
    assert {r["authorization"] for r in server.requests} == {f"Bearer {KEY}"}
    assert [r["body"]["model"] for r in server.requests] == [MODEL] * 4
    assert embedder.client.usage.requests == 4 and embedder.client.usage.retries == 0
    assert embedder.client.usage.prompt_tokens == sum(
        len(t.split()) for t in [openai_compatible.PROBE_TEXT, *TEXTS]
    )


def test_requests_are_cut_by_an_input_size_budget_and_dimensions_are_passed(server, monkeypatch):
    monkeypatch.setattr(openai_compatible, "POLICY", http_client.Policy(max_request_chars=40))
    embedder = open_served(server, dimension=384)
    embedder.embed_queries(["a" * 30, "b" * 30, "c" * 5, "d" * 50])
    assert sorted([len(t) for t in r["body"]["input"]] for r in server.requests) == [
        [30],
        [30, 5],
        [50],
    ]
    assert {r["body"]["dimensions"] for r in server.requests} == {384}


@pytest.mark.parametrize("mode", ["429", "500", "slow", "drop"])
def test_a_passing_fault_is_retried(server, local, mode):
    embedder = open_served(server, mode)
    server.faults = [mode]
    vectors = embedder.embed_documents(TEXTS[:3])
    assert np.abs(vectors - local.embed_documents(TEXTS[:3])).max() <= 1e-6
    assert [r["mode"] for r in server.requests] == [mode, None]
    assert (embedder.client.usage.requests, embedder.client.usage.retries) == (
        3,
        1,
    )  # the probe, the failure, the retry
    if mode == "slow":
        assert embedder.client.usage.server_s >= TIMEOUT_S


def test_requests_share_the_connections_kept_alive(server):
    embedder = open_served(server, batch_size=1, concurrency=1)
    embedder.embed_documents(TEXTS)
    assert (len(server.requests), server.connections) == (
        7,
        0,
    )  # each on the connection the probe opened
    embedder = open_served(server, batch_size=1, concurrency=4)
    embedder.embed_documents(TEXTS * 4)
    assert (
        len(server.requests) == 28 and server.connections <= 3
    )  # at most 4 in flight, one kept from the probe


def test_retry_after_is_honoured(server):
    embedder = open_served(server)
    server.faults, server.retry_after = ["429"], "1"
    started = time.monotonic()
    embedder.embed_documents(TEXTS[:1])
    assert time.monotonic() - started >= 1.0
    assert embedder.client.usage.backoff_s >= 1.0


@pytest.mark.parametrize(
    ("mode", "what", "requests"),
    [
        ("429", "answered HTTP 429 (Rate limit reached) to all 3 attempts; try again later", 3),
        (
            "500",
            "answered HTTP 500 (upstream\\x1b[31m failed\\nbadly) to all 3 attempts; try again later",
            3,
        ),
        (
            "slow",
            f"did not answer within timeout_s ({TIMEOUT_S:g} s) to all 3 attempts; each retry re-sends work the "
            "server may still be doing, so try a smaller batch_size (now 64) or a larger timeout_s",
            3,
        ),
        (
            "drop",
            "could not be reached or dropped the connection (Server disconnected without sending a response.) "
            "to all 3 attempts; try again later",
            3,
        ),
        (
            "400",
            "refused the request with HTTP 400 (input is too long); check the model, the key and base_url",
            1,
        ),
        (
            "401-echo",
            "refused the request with HTTP 401 (Incorrect API key provided: Bearer ***); check the model, "
            "the key and base_url",
            1,
        ),
        (
            "malformed",
            "answered with something that is not JSON; the answer was refused and nothing was stored",
            1,
        ),
        (
            "nan",
            "answered with something that is not JSON; the answer was refused and nothing was stored",
            1,
        ),
        (
            "wrong-dimension",
            "answered vectors of dimension 383, not 384; the answer was refused and nothing was stored",
            1,
        ),
        (
            "fewer",
            "answered 2 vectors for 3 texts; the answer was refused and nothing was stored",
            1,
        ),
        (
            "other-model",
            f'answered with model "other-model", not "{MODEL}" as asked; the answer was refused and '
            "nothing was stored",
            1,
        ),
    ],
)
def test_a_lasting_fault_is_one_sentence_and_exit_3(server, mode, what, requests):
    embedder = open_served(server, mode)
    server.always = mode
    with pytest.raises(ServiceUnavailable) as caught:
        embedder.embed_documents(TEXTS[:3])
    assert caught.value.exit_code == EXIT_OPERATIONAL
    assert str(caught.value) == f"the embedding service {server.base_url}/embeddings {what}"
    assert len(server.requests) == requests


# -- the example, built and evaluated through the server
# -----------------------------------------------------------


def run(argv, capsys):
    """``ptah ARGV``: the exit code, and stdout and stderr as one text (what a key must never
    reach)."""
    code, out, err = run_cli(capsys, *argv)
    return code, out + err


def served_example(folder: Path, server, batch_size: int = 16) -> Path:
    """A copy of the example whose generation ``served`` embeds through ``server``, its key in
    PTAH_TEST_KEY."""
    spec = (
        copy_example(folder) / "ptah.yaml"
    )  # the generation goes under generations:, before the example's variants:
    served = (
        f"  served:\n    provider: openai\n    model: {MODEL}\n    base_url: {server.base_url}\n"
        f"    api_key_env: PTAH_TEST_KEY\n    batch_size: {batch_size}\n    max_concurrency: 4\n"
    )
    spec.write_text(spec.read_text().replace("\ngenerations:\n", "\ngenerations:\n" + served, 1))
    return folder


@pytest.fixture(scope="module")
def project(tmp_path_factory, server):
    return served_example(tmp_path_factory.mktemp("served"), server)


def test_the_example_served_over_http_evaluates_exactly_like_the_local_model(
    project, server, capsys, monkeypatch, tmp_path
):
    spec = project / "ptah.yaml"
    outputs: list[str] = []
    code, out = run(["inference", "build", "served", "--spec", spec, "--quiet"], capsys)
    assert (code, out) == (
        2,
        'generation "served": the environment variable PTAH_TEST_KEY that should '
        f"hold the key of {server.base_url} is not set; set it, or name another with "
        "api_key_env\n",
    )
    monkeypatch.setenv("PTAH_TEST_KEY", KEY)
    for name in ("title-body", "served"):
        code, out = run(["inference", "build", name, "--spec", spec], capsys)
        outputs.append(out)
        assert code == 0, out
    assert len(server.requests) == 1 + -(-187 // 16)  # the probe, then the rows 16 at a time
    reports = {}
    for name in ("title-body", "served"):
        code, out = run(
            [
                "inference",
                "evaluate",
                "--spec",
                spec,
                "--corpus",
                CORPUS,
                "--generation",
                name,
                "--json",
                "--html",
                tmp_path / f"{name}.html",
            ],
            capsys,
        )
        assert code in (0, 1), out
        outputs.append(out)
        document, end = json.JSONDecoder().raw_decode(
            out
        )  # the JSON on stdout, then "wrote FILE" on stderr
        loading = (
            "loading all-MiniLM-L6-v2 …\n" if name == "title-body" else ""
        )  # the local model's queries
        assert out[end:] == f"\n{loading}wrote {tmp_path / f'{name}.html'}\n"
        reports[name] = document["runs"][0]
    local, served = reports["title-body"], reports["served"]
    assert served["generation"]["model"] == MODEL
    for measure in ("recall", "mrr", "ndcg"):
        assert served["aggregates"][measure] == local["aggregates"][measure]
    assert [[r["key"] for r in c["results"]] for c in served["cases"]] == [
        [r["key"] for r in c["results"]] for c in local["cases"]
    ]
    # warm: the queries' vectors come from the cache, so no request is made and no key is needed
    requests = len(server.requests)
    monkeypatch.delenv("PTAH_TEST_KEY")
    code, out = run(
        [
            "inference",
            "evaluate",
            "--spec",
            spec,
            "--corpus",
            CORPUS,
            "--generation",
            "served",
            "--json",
            "--output",
            tmp_path / "warm.json",
        ],
        capsys,
    )
    assert code in (0, 1), out
    assert len(server.requests) == requests
    assert (
        json.loads((tmp_path / "warm.json").read_text())["runs"][0]["aggregates"]
        == served["aggregates"]
    )
    # the key went into the Authorization header and nowhere else
    assert {r["authorization"] for r in server.requests} == {f"Bearer {KEY}"}
    assert not any(KEY in text for text in outputs)
    for path in [*project.rglob("*"), *tmp_path.rglob("*")]:
        assert KEY not in path.name
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
