"""A real rerank server on 127.0.0.1 (both API shapes) with injectable faults, and a context to open rerankers in.

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
``not-json``, ``html`` (the right answer labelled ``text/html``).
"""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler

import pytest

from ptah.adapters.rerankers import RerankContext
from tests.http_servers import serve

KEY = "rk-ptah-SENTINEL-51b0c2d9e4"
MODEL = "rerank-english-v3.0"


def overlap(query: str, document: str) -> float:
    """The server's score: how many of the query's distinct words the document holds."""
    return float(len(set(query.lower().split()) & set(document.lower().split())))


class RerankServer:
    def __init__(self):
        self.requests: list[dict] = []
        self.faults: list[str] = []
        self.always: str | None = None
        self.retry_after = "0"
        self._lock = threading.Lock()
        self.httpd, _ = serve(_handler(self))
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self.faults.clear()
            self.always, self.retry_after = None, "0"

    def next_mode(self) -> str | None:
        with self._lock:
            return self.faults.pop(0) if self.faults else self.always


def _handler(server: RerankServer):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # quiet
            pass

        def setup(self):
            super().setup()
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            mode = server.next_mode()
            with server._lock:
                server.requests.append({"path": self.path, "authorization": self.headers.get("Authorization"),
                                        "body": body, "mode": mode})
            if self.path != "/v1/rerank":
                return self.answer(404, {"error": {"message": f"no route {self.path}"}})
            if mode == "429":
                return self.answer(429, {"error": {"message": "Rate limit reached"}},
                                   {"Retry-After": server.retry_after})
            if mode == "500":
                return self.answer(500, {"error": {"message": "the model is\x1b[31m overloaded"}})
            if mode == "not-json":
                return self.answer(200, b'{"results": [{"index": 0, ')
            tei = "texts" in body
            documents = body["texts"] if tei else body["documents"]
            field = "score" if tei else "relevance_score"
            results = sorted(({"index": i, field: overlap(body["query"], text)} for i, text in enumerate(documents)),
                             key=lambda result: -result[field])
            if mode == "repeated-index":
                results[1]["index"] = results[0]["index"]
            if mode == "out-of-range":
                results[0]["index"] = len(documents)
            if mode == "fewer":
                results = results[:-1]
            if mode == "more":
                results.append({"index": 0, field: 1.0})
            if mode == "nan":
                results[0][field] = float("nan")  # json.dumps writes the literal NaN, as some servers do
            if mode == "string-score":
                results[0][field] = "0.5"
            if tei:
                return self.answer(200, results)
            model = {"other-model": "rerank-multilingual-v2.0",
                     "echo-key": self.headers.get("Authorization")}.get(mode, body["model"])
            return self.answer(200, {"id": "r1", "results": results, "model": model},
                               {"Content-Type": "text/html"} if mode == "html" else None)

        def answer(self, status: int, document, headers: dict | None = None):
            payload = document if isinstance(document, bytes) else json.dumps(document).encode()
            headers = dict(headers or {})
            self.send_response(status)
            self.send_header("Content-Type", headers.pop("Content-Type", "application/json"))
            self.send_header("Content-Length", str(len(payload)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)

    return Handler


@pytest.fixture(scope="session")
def rerank_server():
    served = RerankServer()
    yield served
    served.httpd.shutdown()
    served.httpd.server_close()


def no_embedder(name: str):
    raise AssertionError(f"no embedder was expected, yet generation {name} was asked for")


@pytest.fixture
def context(tmp_path) -> RerankContext:
    """A context whose environment holds the service's key and a cache folder of the test's own."""
    return RerankContext(str(tmp_path), {"RERANK_KEY": KEY, "PTAH_CACHE_DIR": str(tmp_path / "cache")}, no_embedder)
