"""A small project gated through the retriever channel: four rows (one a draft the filter
excludes), three cases, and a fake search service whose answers the tests turn hostile."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest

from tests.conftest import spec_yaml
from tests.http_servers import FakeService, JsonHandler

# what the fake service ranks for each query (the first letter of the query decides)
ANSWERS = {"a": ["1", "3"], "b": ["2", "3"], "c": ["4", "2"]}
SCORES = [0.9, 0.4]


def small_project(folder: Path, url: str, **options: object) -> Path:
    """Rows 1-4 and a draft 5 of table docs; variants ``svc`` (the service at ``url``, with
    ``options``) and ``rec`` (the recorded run ``run.jsonl``)."""
    with sqlite3.connect(folder / "source.db") as connection:
        connection.execute("CREATE TABLE docs (id INTEGER PRIMARY KEY, body TEXT, status TEXT)")
        connection.executemany(
            "INSERT INTO docs VALUES (?, ?, ?)",
            [
                (1, "aaaa", "ok"),
                (2, "bbbb", "ok"),
                (3, "ab", "ok"),
                (4, "cccc", "ok"),
                (5, "draft", "draft"),
            ],
        )
    connection.close()
    service = json.dumps({"url": url, "timeout_s": 1, **options})
    spec = spec_yaml(
        table="docs",
        text="{body}",
        filter="status = 'ok'",
        active="docs",
        generations={"docs": {"model": "ptah/deterministic"}},
    )
    spec += (
        f"variants:\n  svc:\n    channels: [retriever]\n    options: {service}\n"
        "  rec:\n    channels: [retriever]\n    options: {run: run.jsonl}\n"
    )
    (folder / "ptah.yaml").write_text(spec)
    (folder / "corpus.yaml").write_text(
        "version: 1\ndefault_k: 2\ncases:\n"
        '  - {id: a, query: "a", required: ["1"]}\n'
        '  - {id: b, query: "b", required: ["3"]}\n'
        '  - {id: c, query: "ccb", required: ["4"]}\n'
    )
    return folder


def _answers(queries: list[dict], mode: str | None) -> bytes:
    results = [
        {"case": q["case"], "keys": list(ANSWERS[q["query"][0]]), "scores": list(SCORES)}
        for q in queries
    ]
    first = results[0]
    if mode == "nan":
        first["scores"][1] = float("nan")
    elif mode == "duplicate":
        first["keys"][1] = first["keys"][0]
    elif mode == "unknown":
        first["keys"][1] = "99"
    elif mode == "filtered":
        first["keys"][1] = "5"
    elif mode == "number":
        first["keys"][0] = 1
    elif mode == "swapped":
        first["keys"].reverse()
    elif mode == "rising":
        first["scores"] = [0.1, 0.4]
    elif mode == "short":
        results.pop()
    elif mode == "other-case":
        first["case"] = "zzz"
    elif mode == "scoreless":
        for result in results:
            del result["scores"]
    return json.dumps({"results": results}, allow_nan=True).encode()


def _handler(service):
    class Handler(JsonHandler):
        def do_POST(self):
            body = self.body()
            mode = service.next_mode()
            self.record(body, mode)
            if mode == "slow":
                time.sleep(2.5)
            if mode == "huge":
                self.answer(200, b'{"results": [' + b" " * 3_000_000 + b"]}")
            elif mode == "html":
                self.answer(200, b"<html>sign in</html>", {"Content-Type": "text/html"})
            elif mode == "echo-key":
                said = self.headers.get("Authorization", "")
                self.answer(401, {"error": {"message": f"bad key {said}"}})
            else:
                self.answer(200, _answers(body["queries"], mode))

    return Handler


@pytest.fixture(scope="module")
def search_service():
    service = FakeService(_handler)
    yield service
    service.close()


@pytest.fixture
def service(search_service, monkeypatch):
    """The fake search service, reset, with one attempt a request (no retries to wait for)."""
    from ptah.adapters.embedders.http_client import Policy
    from ptah.retriever import service as client

    monkeypatch.setattr(client, "POLICY", Policy(attempts=1))
    search_service.reset()
    yield search_service
    search_service.reset()
