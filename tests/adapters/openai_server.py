"""A real OpenAI-compatible embeddings server on 127.0.0.1 serving the bundled MiniLM, with injectable faults.

``POST /v1/embeddings`` encodes ``input`` with sentence-transformers
(normalised, like ``normalize: true`` locally) and writes each float32 value
as the float64 it equals, so JSON carries it exactly. Each request is
recorded (``requests``) and each connection counted (``connections``);
``faults`` is a list of modes the next requests take, one each, and
``always`` a mode every request takes:

``429`` (``Retry-After: retry_after``), ``500`` (a message with a control
character), ``400``, ``401-echo`` (echoes the key it was sent), ``slow``
(sleeps ``slow_s`` before answering), ``drop`` (closes the connection
unanswered), ``malformed`` (not JSON), ``nan``, ``wrong-dimension``, ``fewer``
(one vector fewer than inputs), ``other-model``, ``no-model`` (answers ``model: null``),
``perturbed`` (the first 16 values of each vector negated).

Hostile modes (tests/hostile/test_service_client.py): ``endless`` (a 200 whose
body streams ``flood_bytes`` of JSON-looking bytes, with no length), ``huge-500``
(a 500 whose message is ``flood_bytes`` long), ``redirect`` (302 to
``redirect_to``), ``echo-model`` (a 200 naming the key it was sent as its model),
``html`` (a 200 holding the right embeddings JSON, labelled ``text/html``), ``trickle``
(a 200 with ``Content-Length: 100000`` whose body comes one byte a second). ``sent``
counts the bytes of a flooding or trickling body the client took before it hung up.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler

from tests.http_servers import serve

MODEL = "all-minilm-l6-v2"


class EmbeddingServer:
    def __init__(self, model, *, max_seq_length: int = 256):
        model.max_seq_length = max_seq_length
        self.model = model
        self.requests: list[dict] = []
        self.faults: list[str] = []
        self.always: str | None = None
        self.retry_after = "0"
        self.slow_s = 1.0
        self.flood_bytes = 64 * 1024 * 1024
        self.redirect_to = ""
        self.sent = 0
        self.connections = 0
        self._lock = threading.Lock()
        self._encode_lock = threading.Lock()
        self.httpd, self.thread = serve(_handler(self))
        self.port = self.httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self.faults.clear()
            self.always = None
            self.retry_after = "0"
            self.sent = 0
            self.connections = 0

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def next_mode(self) -> str | None:
        with self._lock:
            return self.faults.pop(0) if self.faults else self.always

    def encode(self, texts: list[str]):
        with self._encode_lock:
            return self.model.encode(texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True,
                                     show_progress_bar=False)


def _handler(server: EmbeddingServer):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # quiet
            pass

        def setup(self):
            super().setup()
            # headers and body are two writes: without this, Nagle holds the body for the client's delayed ACK
            # (40 ms a request on a kept-alive connection), as no production server would
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with server._lock:
                server.connections += 1

        def do_GET(self):  # what a client following a redirect of its POST would send (urllib makes it a GET)
            with server._lock:
                server.requests.append({"path": self.path, "authorization": self.headers.get("Authorization"),
                                        "body": None, "mode": "GET"})
            return self.answer(405, {"error": {"message": "POST only"}})

        def do_POST(self):
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length))
            mode = server.next_mode()
            with server._lock:
                server.requests.append({"path": self.path, "authorization": self.headers.get("Authorization"),
                                        "body": body, "mode": mode})
            if self.path != "/v1/embeddings":
                return self.answer(404, {"error": {"message": f"no route {self.path}"}})
            if mode == "drop":
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                return None
            if mode == "slow":
                time.sleep(server.slow_s)
            if mode == "429":
                return self.answer(429, {"error": {"message": "Rate limit reached"}},
                                   {"Retry-After": server.retry_after})
            if mode == "500":
                return self.answer(500, {"error": {"message": "upstream\x1b[31m failed\nbadly"}})
            if mode == "400":
                return self.answer(400, {"error": {"message": "input is too long"}})
            if mode == "401-echo":
                return self.answer(401, {"error": {"message": f"Incorrect API key provided: "
                                                              f"{self.headers.get('Authorization')}"}})
            if mode in ("endless", "huge-500"):
                return self.flood(200 if mode == "endless" else 500)
            if mode == "trickle":
                return self.trickle()
            if mode == "redirect":
                return self.answer(302, b"", {"Location": server.redirect_to})
            if mode == "echo-model":
                return self.answer(200, {"object": "list", "model": self.headers.get("Authorization"),
                                         "data": [{"index": 0, "embedding": [1.0, 0.0]}]})
            if mode == "malformed":
                return self.answer(200, b'{"data": [{"embedding": [0.1, ')
            texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
            dimensions = body.get("dimensions")
            if dimensions is not None and dimensions != 384:
                return self.answer(400, {"error": {"message": "This model does not support dimensions"}})
            vectors = [[float(v) for v in row] for row in server.encode(texts)]
            if mode == "wrong-dimension":
                vectors = [row[:383] for row in vectors]
            if mode == "fewer":
                vectors = vectors[:-1]
            if mode == "nan":
                vectors[0][0] = float("nan")
            if mode == "perturbed":  # the first 16 values negated: cosine with the true vector about 0.9
                vectors = [[-v for v in row[:16]] + row[16:] for row in vectors]
            data = [{"object": "embedding", "index": i, "embedding": row} for i, row in enumerate(vectors)]
            model = {"other-model": "other-model", "no-model": None}.get(mode, body["model"])
            tokens = sum(len(text.split()) for text in texts)
            return self.answer(200, {"object": "list", "data": data, "model": model,
                                     "usage": {"prompt_tokens": tokens, "total_tokens": tokens}},
                               {"Content-Type": "text/html"} if mode == "html" else None)

        def flood(self, status: int):
            """A body of ``flood_bytes`` with no length, written until done or the client hangs up."""
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            chunk = b'{"error": {"message": "' if status >= 400 else b'{"data": [{"embedding": ['
            filler = (b"x" if status >= 400 else b"0.1, ") * 65536
            try:
                self.wfile.write(chunk)
                while server.sent < server.flood_bytes:
                    self.wfile.write(filler)
                    server.sent += len(filler)
            except OSError:
                pass  # the client hung up: what it took is in server.sent

        def trickle(self):
            """A 200 announcing 100,000 bytes, then one byte a second until the client hangs up (a minute at most)."""
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "100000")
            self.end_headers()
            self.close_connection = True
            try:
                for _ in range(60):
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    server.sent += 1
                    time.sleep(1.0)
            except OSError:
                pass  # the client hung up

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
