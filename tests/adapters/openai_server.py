"""A real OpenAI-compatible embeddings server on 127.0.0.1 serving the bundled MiniLM, with
injectable faults.

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
``perturbed`` (the first 16 values of each vector negated), ``twice`` (``data``
named twice: a zero vector first, then the real ones).

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

from tests.http_servers import FakeService, JsonHandler

MODEL = "all-minilm-l6-v2"


class EmbeddingServer(FakeService):
    def __init__(self, model, *, max_seq_length: int = 256):
        model.max_seq_length = max_seq_length
        self.model = model
        self.slow_s = 1.0
        self.flood_bytes = 64 * 1024 * 1024
        self.redirect_to = ""
        self.connections = 0
        self._encode_lock = threading.Lock()
        super().__init__(_handler)

    def reset(self) -> None:
        super().reset()
        with self._lock:
            self.connections = 0

    def encode(self, texts: list[str]):
        with self._encode_lock:
            return self.model.encode(
                texts,
                batch_size=64,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )


def _handler(server: EmbeddingServer):
    class Handler(JsonHandler):
        def setup(self):
            super().setup()
            with server._lock:
                server.connections += 1

        def do_GET(
            self,
        ):  # what a client following a redirect of its POST would send (urllib makes it a GET)
            self.record(None, "GET")
            return self.answer(405, {"error": {"message": "POST only"}})

        def do_POST(self):
            body = self.body()
            mode = server.next_mode()
            self.record(body, mode)
            if self.path != "/v1/embeddings":
                return self.answer(404, {"error": {"message": f"no route {self.path}"}})
            if mode == "drop":
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                return None
            if mode == "slow":
                time.sleep(server.slow_s)
            if mode == "429":
                return self.answer(
                    429,
                    {"error": {"message": "Rate limit reached"}},
                    {"Retry-After": server.retry_after},
                )
            if mode == "500":
                return self.answer(500, {"error": {"message": "upstream\x1b[31m failed\nbadly"}})
            if mode == "400":
                return self.answer(400, {"error": {"message": "input is too long"}})
            if mode == "401-echo":
                return self.answer(
                    401,
                    {
                        "error": {
                            "message": f"Incorrect API key provided: "
                            f"{self.headers.get('Authorization')}"
                        }
                    },
                )
            if mode in ("endless", "huge-500"):
                return self.flood(200 if mode == "endless" else 500)
            if mode == "trickle":
                return self.trickle(60)
            if mode == "redirect":
                return self.answer(302, b"", {"Location": server.redirect_to})
            if mode == "echo-model":
                return self.answer(
                    200,
                    {
                        "object": "list",
                        "model": self.headers.get("Authorization"),
                        "data": [{"index": 0, "embedding": [1.0, 0.0]}],
                    },
                )
            if mode == "malformed":
                return self.answer(200, b'{"data": [{"embedding": [0.1, ')
            texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
            dimensions = body.get("dimensions")
            if dimensions is not None and dimensions != 384:
                return self.answer(
                    400, {"error": {"message": "This model does not support dimensions"}}
                )
            vectors = [[float(v) for v in row] for row in server.encode(texts)]
            if mode == "wrong-dimension":
                vectors = [row[:383] for row in vectors]
            if mode == "fewer":
                vectors = vectors[:-1]
            if mode == "nan":
                vectors[0][0] = float("nan")
            if (
                mode == "perturbed"
            ):  # the first 16 values negated: cosine with the true vector about 0.9
                vectors = [[-v for v in row[:16]] + row[16:] for row in vectors]
            data = [
                {"object": "embedding", "index": i, "embedding": row}
                for i, row in enumerate(vectors)
            ]
            model = {"other-model": "other-model", "no-model": None}.get(mode, body["model"])
            tokens = sum(len(text.split()) for text in texts)
            answer = {
                "object": "list",
                "data": data,
                "model": model,
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
            if mode == "twice":
                zeros = json.dumps([{"object": "embedding", "index": 0, "embedding": [0.0] * 384}])
                return self.answer(
                    200,
                    json.dumps(answer).replace('"data"', f'"data": {zeros}, "data"', 1).encode(),
                )
            return self.answer(
                200, answer, {"Content-Type": "text/html"} if mode == "html" else None
            )

        def flood(self, status: int):
            """A body of ``flood_bytes`` with no length, written until done or the client hangs
            up."""
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

    return Handler
