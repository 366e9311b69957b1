"""A local OpenAI-compatible chat completions server that grades by a deterministic rule, with fault
modes.

``POST /v1/chat/completions``: the user message ptah sends holds the query and
the row's text; the grade is 1 when they share a word of four letters or more
(case folded), else 0, answered as ``{"grade": G}`` by the model asked for,
with a ``usage`` of 10 prompt tokens and 3 completion tokens. ``faults`` are
modes the next requests take, one each; ``always`` a mode every request takes:

``malformed`` (prose, not JSON), ``offscale`` (``{"grade": 7}``), ``extra``
(``{"grade": 1, "why": "..."}``), ``fenced`` (the right answer in a ```json
fence: accepted), ``renamed`` (answered by model ``other-model``), ``notchat``
(JSON without ``choices``), ``twice`` (``{"grade": 0, "grade": 1}``), ``429``
(``Retry-After: 0``), ``500``, ``drip`` (a
200 with ``Content-Length: 100000`` whose body comes one byte a second).
Every request body and its headers are kept (``requests``).
"""

from __future__ import annotations

import json
import re

from tests.http_servers import FakeService, JsonHandler

MODEL = "judge-1"
WORD = re.compile(r"[a-z]{4,}")


def rule(message: str) -> int:
    """The server's grade of ptah's user message: 1 when the query and the row's text share a word
    of 4+ letters."""
    query = message.split("Query:\n", 1)[1].split("\n\nRow text:\n", 1)[0]
    text = message.split("\n\nRow text:\n", 1)[1]
    return int(bool(set(WORD.findall(query.lower())) & set(WORD.findall(text.lower()))))


def chat_handler(server: FakeService):
    """The handler class of a :class:`FakeService` that is this server."""

    class Handler(JsonHandler):
        def do_POST(self):
            body = self.body()
            server.requests.append((body, dict(self.headers)))
            mode = server.next_mode()
            if mode in ("429", "500"):
                return self.answer(
                    int(mode),
                    {"error": {"message": "busy" if mode == "429" else "broken"}},
                    {"Retry-After": "0"} if mode == "429" else {},
                )
            if mode == "drip":
                return self.trickle(100)
            grade = rule(body["messages"][1]["content"])
            content = {
                "malformed": "The row is relevant.",
                "offscale": '{"grade": 7}',
                "extra": json.dumps({"grade": grade, "why": "shared words"}),
                "fenced": f'```json\n{{"grade": {grade}}}\n```',
                "twice": '{"grade": 0, "grade": 1}',
            }.get(mode or "", json.dumps({"grade": grade}))
            answer = {
                "id": "x",
                "object": "chat.completion",
                "model": "other-model" if mode == "renamed" else body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13},
            }
            if mode == "notchat":
                answer = {"object": "list", "data": []}
            return self.answer(200, answer)

    return Handler
