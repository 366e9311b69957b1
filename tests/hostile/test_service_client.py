"""The OpenAI-compatible client against hostile servers: what a server answers never costs unbounded
memory or time, never takes the key elsewhere, and never puts it in a message.

The server is tests/adapters/openai_server.py, real HTTP on 127.0.0.1, its model a stand-in (the
client is under test, not the vectors). Each test fails on a client without the protection it names.
"""

from __future__ import annotations

import sys
import time

import numpy as np
import pytest

from ptah.adapters.embedders import http_client
from ptah.adapters.embedders.http_client import Connection, EmbeddingsClient, Policy
from ptah.core.errors import EXIT_OPERATIONAL, ServiceUnavailable
from tests.adapters.openai_server import MODEL, EmbeddingServer

KEY = "sk-ptah-HOSTILE-0c4f1d2e9a"
ONCE = Policy(attempts=1, backoff_s=0.01, max_delay_s=0.2)


class StandIn:
    """Encodes any text as the same unit vector of 384 values (what the server's model would hand
    back)."""

    max_seq_length = 256

    def encode(self, texts, **_options):
        vectors = np.zeros((len(texts), 384), dtype=np.float32)
        vectors[:, 0] = 1.0
        return vectors


@pytest.fixture(scope="module")
def servers():
    served, elsewhere = EmbeddingServer(StandIn()), EmbeddingServer(StandIn())
    yield served, elsewhere
    served.close()
    elsewhere.close()


@pytest.fixture
def server(servers):
    for one in servers:
        one.reset()
    return servers[0]


def client(server, policy=ONCE, dimensions=None, timeout_s=10.0) -> EmbeddingsClient:
    connection = Connection(
        KEY, batch_size=8, max_concurrency=1, policy=policy, timeout_s=timeout_s
    )
    return EmbeddingsClient(server.base_url, MODEL, dimensions, connection)


def refused(server, mode, policy=ONCE, timeout_s=10.0) -> str:
    server.faults.append(mode)
    with pytest.raises(ServiceUnavailable) as info:
        client(server, policy, timeout_s=timeout_s).embed(["hello"])
    assert info.value.exit_code == EXIT_OPERATIONAL
    message = str(info.value)
    assert KEY not in message and "\n" not in message
    return message


def test_an_endless_body_is_read_only_to_the_bound(server):
    limit = ONCE.response_limit(1, None)  # 1 MiB + what 1 vector of up to 8192 values may take
    message = refused(server, "endless")
    assert message == (
        f"the embedding service {server.base_url}/embeddings sent more than {limit:,} bytes; the answer "
        "was refused and nothing was stored"
    )
    assert (
        server.sent < 16 * 1024 * 1024
    )  # of 64 MiB offered: the bound plus what the sockets' buffers held


def test_an_oversized_error_body_is_read_only_to_its_bound(server):
    message = refused(server, "huge-500")
    assert message.startswith(
        f"the embedding service {server.base_url}/embeddings answered HTTP 500 ("
    )
    assert message.endswith("...) to the one attempt; try again later")
    assert (
        server.sent < 16 * 1024 * 1024
    )  # the client read 64 KiB of the message, not the 64 MiB offered


def test_a_redirect_to_another_host_is_not_followed_with_the_key(servers, server):
    elsewhere = servers[1]
    server.redirect_to = f"{elsewhere.base_url}/embeddings"
    message = refused(server, "redirect")
    assert message == (
        f"the embedding service {server.base_url}/embeddings refused the request with HTTP 302 "
        "(no message); check the model, the key and base_url"
    )
    assert elsewhere.requests == []  # the key never left for the other host


def test_a_server_echoing_the_key_never_puts_it_in_a_message(server):
    message = refused(server, "echo-model")
    assert message == (
        f'the embedding service {server.base_url}/embeddings answered with model "Bearer ***", not '
        f'"{MODEL}" as asked; the answer was refused and nothing was stored'
    )
    message = refused(server, "401-echo")
    assert message.endswith(
        "refused the request with HTTP 401 (Incorrect API key provided: Bearer ***); check the "
        "model, the key and base_url"
    )


def test_an_answer_trickled_a_byte_a_second_fails_at_the_whole_request_deadline(server):
    started = time.monotonic()
    message = refused(server, "trickle", timeout_s=2)
    assert (
        2.0 <= time.monotonic() - started < 4.0
    )  # each byte came within any read timeout; the deadline held
    assert server.sent <= 4
    assert message == (
        f"the embedding service {server.base_url}/embeddings did not answer within timeout_s (2 s) "
        "to the one attempt; each retry re-sends work the server may still be doing, so try a smaller "
        "batch_size (now 8) or a larger timeout_s"
    )


def test_an_answer_that_is_not_labelled_json_is_refused(server):
    message = refused(server, "html")
    assert message == (
        f"the embedding service {server.base_url}/embeddings answered text/html, not JSON (a proxy or "
        "a login page?); the answer was refused and nothing was stored"
    )


def test_an_answer_naming_a_key_twice_is_refused(server):
    message = refused(server, "twice")
    assert message == (
        f'the embedding service {server.base_url}/embeddings answered JSON naming the key "data" twice '
        "in one object; the answer was refused and nothing was stored"
    )


@pytest.mark.parametrize("retry_after", ["999999999", "inf", "Fri, 31 Dec 9999 23:59:59 GMT"])
def test_a_huge_retry_after_is_capped(server, monkeypatch, retry_after):
    slept = []
    real_sleep = http_client.time.sleep

    def sleep(
        seconds,
    ):  # the client's waits, recorded instead of slept; another thread's (a server's) slept
        if sys._getframe(1).f_code.co_filename == http_client.__file__:
            slept.append(seconds)
        else:
            real_sleep(seconds)

    monkeypatch.setattr(http_client.time, "sleep", sleep)
    server.retry_after = retry_after
    server.faults.extend(["429", "429"])
    vectors = client(server, Policy(attempts=3, backoff_s=0.01, max_delay_s=0.2)).embed(["hello"])
    assert vectors.shape == (1, 384)
    assert len(slept) == 2 and max(slept) == 0.2
