"""A real rerank server on 127.0.0.1 (both API shapes) with injectable faults, and a context to open
rerankers in.

``POST /v1/rerank`` scores each document by how many of the query's words
(lower-cased, split on spaces) it holds -- :func:`overlap`, which a test
computes by hand -- and answers in the shape the body asks: ``documents``
(Cohere, Jina, infinity) -> ``{"results": [{"index", "relevance_score"}],
"model"}``, ``texts`` (text-embeddings-inference) -> ``[{"index", "score"}]``,
results sorted best first as real servers sort them. ``faults`` are the modes
the next requests take, one each; ``always`` a mode every request takes:

``429`` (``Retry-After: retry_after``), ``500``, ``repeated-index`` (the first
result's index given twice), ``out-of-range`` (an index one past the last),
``fewer`` (the last result left out), ``more`` (one result too many), ``nan``
(the JSON literal ``NaN`` as the first score), ``string-score``, ``other-model``,
``echo-key`` (the ``Authorization`` header sent back as the model),
``not-json``, ``html`` (the right answer labelled ``text/html``), ``twice`` (the
first result names ``relevance_score`` twice, 99 and then its real score).
"""

from __future__ import annotations

import json

import pytest

from ptah.adapters.rerankers import RerankContext
from tests.http_servers import FakeService, JsonHandler

KEY = "rk-ptah-SENTINEL-51b0c2d9e4"
MODEL = "rerank-english-v3.0"


def overlap(query: str, document: str) -> float:
    """The server's score: how many of the query's distinct words the document holds."""
    return float(len(set(query.lower().split()) & set(document.lower().split())))


def _handler(server: FakeService):
    class Handler(JsonHandler):
        def do_POST(self):
            body = self.body()
            mode = server.next_mode()
            self.record(body, mode)
            if self.path != "/v1/rerank":
                return self.answer(404, {"error": {"message": f"no route {self.path}"}})
            if mode == "429":
                return self.answer(
                    429,
                    {"error": {"message": "Rate limit reached"}},
                    {"Retry-After": server.retry_after},
                )
            if mode == "500":
                return self.answer(500, {"error": {"message": "the model is\x1b[31m overloaded"}})
            if mode == "not-json":
                return self.answer(200, b'{"results": [{"index": 0, ')
            tei = "texts" in body
            documents = body["texts"] if tei else body["documents"]
            field = "score" if tei else "relevance_score"
            results = sorted(
                (
                    {"index": i, field: overlap(body["query"], text)}
                    for i, text in enumerate(documents)
                ),
                key=lambda result: -result[field],
            )
            if mode == "repeated-index":
                results[1]["index"] = results[0]["index"]
            if mode == "out-of-range":
                results[0]["index"] = len(documents)
            if mode == "fewer":
                results = results[:-1]
            if mode == "more":
                results.append({"index": 0, field: 1.0})
            if mode == "nan":
                results[0][field] = float(
                    "nan"
                )  # json.dumps writes the literal NaN, as some servers do
            if mode == "string-score":
                results[0][field] = "0.5"
            if tei:
                return self.answer(200, results)
            model = {
                "other-model": "rerank-multilingual-v2.0",
                "echo-key": self.headers.get("Authorization"),
            }.get(mode, body["model"])
            answer = {"id": "r1", "results": results, "model": model}
            if mode == "twice":
                answer = json.dumps(answer).replace(
                    '"relevance_score"', '"relevance_score": 99.0, "relevance_score"', 1
                )
                return self.answer(200, answer.encode())
            return self.answer(
                200, answer, {"Content-Type": "text/html"} if mode == "html" else None
            )

    return Handler


@pytest.fixture(scope="session")
def rerank_server():
    served = FakeService(_handler)
    yield served
    served.close()


def no_embedder(name: str):
    raise AssertionError(f"no embedder was expected, yet generation {name} was asked for")


@pytest.fixture
def context(tmp_path) -> RerankContext:
    """A context whose environment holds the service's key and a cache folder of the test's own."""
    return RerankContext(
        str(tmp_path), {"RERANK_KEY": KEY, "PTAH_CACHE_DIR": str(tmp_path / "cache")}, no_embedder
    )
