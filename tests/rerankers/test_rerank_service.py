"""The service reranker against a real rerank server on 127.0.0.1 (conftest.py): both API shapes,
the shared client policy (retries honouring Retry-After, the key only in its header, usage) and
every wrong answer refused."""

from __future__ import annotations

import time

import numpy as np
import pytest

from ptah.adapters.embedders.base import usage_of
from ptah.adapters.embedders.http_client import Policy
from ptah.adapters.rerankers import open_reranker, service
from ptah.core.errors import EXIT_INPUT, EXIT_OPERATIONAL, InputError, ServiceUnavailable
from ptah.core.spec import RerankSettings, ServiceSettings
from tests.rerankers.conftest import KEY, MODEL, overlap

QUERY = "reset my password"
TEXTS = [
    "How do I reset my password?",
    "Export invoices",
    "password reset reset",
    "Cancel my plan",
    "reset",
    "my my my password",
    "",
]
EXPECTED = [
    2.0,
    0.0,
    2.0,
    1.0,
    1.0,
    2.0,
    0.0,
]  # the query's words each text holds ("password?" is not "password")


@pytest.fixture(autouse=True)
def fast_policy(monkeypatch, rerank_server):
    monkeypatch.setattr(service, "POLICY", Policy(attempts=3, backoff_s=0.01, max_delay_s=2.0))
    rerank_server.reset()


def settings(
    server,
    api="cohere",
    *,
    batch_size=3,
    key_env: str | None = "RERANK_KEY",
    model: str | None = MODEL,
    concurrency=1,
):
    return RerankSettings(
        "service",
        model=model,
        batch_size=batch_size,
        service=ServiceSettings(api, server.base_url, key_env, concurrency, timeout_s=10),
    )


def refused(server, context, mode) -> str:
    reranker = open_reranker(settings(server), context)
    server.always = mode
    with pytest.raises(ServiceUnavailable) as info:
        reranker.scores(QUERY, TEXTS[:3])
    assert info.value.exit_code == EXIT_OPERATIONAL
    message = str(info.value)
    assert KEY not in message and "\n" not in message
    return message


def test_the_cohere_shape_scores_each_text_in_order_batch_size_documents_a_request(
    rerank_server, context
):
    assert EXPECTED == [overlap(QUERY, text) for text in TEXTS]
    reranker = open_reranker(settings(rerank_server), context)
    scores = reranker.scores(QUERY, TEXTS)
    assert scores.dtype == np.float64 and scores.tolist() == EXPECTED
    assert [r["body"] for r in rerank_server.requests] == [
        {
            "model": MODEL,
            "query": QUERY,
            "documents": TEXTS[0:3],
            "top_n": 3,
            "return_documents": False,
        },
        {
            "model": MODEL,
            "query": QUERY,
            "documents": TEXTS[3:6],
            "top_n": 3,
            "return_documents": False,
        },
        {
            "model": MODEL,
            "query": QUERY,
            "documents": TEXTS[6:7],
            "top_n": 1,
            "return_documents": False,
        },
    ]
    assert {r["authorization"] for r in rerank_server.requests} == {f"Bearer {KEY}"}
    assert all(KEY not in str(r["body"]) for r in rerank_server.requests)
    usage = usage_of(reranker)
    assert usage is not None and usage["server_seconds"] > 0
    assert {**usage, "server_seconds": 0} == {
        "requests": 3,
        "retries": 0,
        "documents": 7,
        "server_seconds": 0,
        "backoff_seconds": 0.0,
    }
    assert usage_of(reranker) == {
        "requests": 0,
        "retries": 0,
        "documents": 0,
        "server_seconds": 0.0,
        "backoff_seconds": 0.0,
    }  # counted since the last call
    assert reranker.describe() == {
        "kind": "service",
        "api": "cohere",
        "model": MODEL,
        "endpoint": f"{rerank_server.base_url}/rerank",
    }


def test_requests_in_flight_together_keep_the_texts_order(rerank_server, context):
    reranker = open_reranker(settings(rerank_server, batch_size=1, concurrency=4), context)
    assert reranker.scores(QUERY, TEXTS).tolist() == EXPECTED
    assert sorted(len(r["body"]["documents"]) for r in rerank_server.requests) == [1] * 7


def test_the_tei_shape_sends_texts_and_reads_scores_without_a_key(rerank_server, context):
    reranker = open_reranker(
        settings(rerank_server, "tei", batch_size=4, key_env=None, model=None), context
    )
    assert reranker.scores(QUERY, TEXTS).tolist() == EXPECTED
    assert [r["body"] for r in rerank_server.requests] == [
        {"query": QUERY, "texts": TEXTS[:4], "truncate": True},
        {"query": QUERY, "texts": TEXTS[4:], "truncate": True},
    ]
    assert {r["authorization"] for r in rerank_server.requests} == {None}
    assert (
        reranker.scores(QUERY, []).tolist() == [] and len(rerank_server.requests) == 2
    )  # nothing to ask


def test_a_429_with_retry_after_is_waited_for_and_retried(rerank_server, context):
    reranker = open_reranker(settings(rerank_server), context)
    rerank_server.faults, rerank_server.retry_after = ["429"], "1"
    started = time.monotonic()
    assert reranker.scores(QUERY, TEXTS[:3]).tolist() == EXPECTED[:3]
    assert time.monotonic() - started >= 1.0
    assert [r["mode"] for r in rerank_server.requests] == ["429", None]
    usage = usage_of(reranker)
    assert usage is not None and (usage["requests"], usage["retries"], usage["documents"]) == (
        2,
        1,
        3,
    )
    assert usage["backoff_seconds"] >= 1.0


def test_a_lasting_500_is_one_sentence_after_every_attempt(rerank_server, context):
    message = refused(rerank_server, context, "500")
    assert message == (
        f"the rerank service {rerank_server.base_url}/rerank answered HTTP 500 (the model "
        "is\\x1b[31m overloaded) to all 3 attempts; try again later"
    )
    assert len(rerank_server.requests) == 3


@pytest.mark.parametrize(
    ("mode", "what"),
    [
        ("repeated-index", "answered results whose index fields are not each of 0 to n-1 once"),
        ("out-of-range", "answered results whose index fields are not each of 0 to n-1 once"),
        ("fewer", "answered 2 scores for 3 documents"),
        ("more", "answered 4 scores for 3 documents"),
        ("nan", "answered a relevance_score that is not a finite number"),
        ("string-score", "answered a relevance_score that is not a number"),
        ("other-model", f'answered with model "rerank-multilingual-v2.0", not "{MODEL}" as asked'),
        ("echo-key", f'answered with model "Bearer ***", not "{MODEL}" as asked'),
        ("not-json", "answered with something that is not JSON"),
        ("html", "answered text/html, not JSON (a proxy or a login page?)"),
        ("twice", 'answered JSON naming the key "relevance_score" twice in one object'),
    ],
)
def test_a_wrong_answer_is_refused_in_one_sentence_exit_3(rerank_server, context, mode, what):
    message = refused(rerank_server, context, mode)
    assert (
        message
        == f"the rerank service {rerank_server.base_url}/rerank {what}; the answer was refused"
    )
    assert len(rerank_server.requests) == 1  # a wrong answer is not retried


def test_tei_answers_are_checked_as_strictly(rerank_server, context):
    reranker = open_reranker(settings(rerank_server, "tei", key_env=None, model=None), context)
    rerank_server.always = "nan"
    with pytest.raises(ServiceUnavailable) as info:
        reranker.scores(QUERY, TEXTS[:3])
    assert str(info.value) == (
        f"the rerank service {rerank_server.base_url}/rerank answered a score that is not a "
        "finite number; the answer was refused"
    )


def test_a_key_variable_that_is_not_set_is_exit_2_naming_it(rerank_server, context):
    with pytest.raises(InputError) as info:
        open_reranker(settings(rerank_server, key_env="UNSET_RERANK_KEY"), context)
    assert info.value.exit_code == EXIT_INPUT
    assert str(info.value) == (
        f"the environment variable UNSET_RERANK_KEY that should hold the key of "
        f"{rerank_server.base_url} is not set; set it, or name another with api_key_env"
    )
    assert rerank_server.requests == []


@pytest.mark.parametrize(
    ("changed", "message"),
    [
        (
            {"service": None},
            "the service reranker needs service: the base_url and api of a rerank server",
        ),
        (
            {"model": None},
            "the service reranker with api cohere needs model: the model the server is asked for",
        ),
    ],
)
def test_a_missing_setting_is_exit_2(rerank_server, context, changed, message):
    wanting = RerankSettings(**{**settings(rerank_server).__dict__, **changed})
    with pytest.raises(InputError) as info:
        open_reranker(wanting, context)
    assert (info.value.exit_code, str(info.value)) == (EXIT_INPUT, message)
