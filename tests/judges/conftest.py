"""A project with a SQLite source of the ten DOCS, the deterministic generation ``docs``, a corpus
of four cases and a chat judge ``gpt`` served by the local chat server
(tests/judges/chat_server.py)."""

from __future__ import annotations

import pytest

from ptah.adapters.embedders import http_client
from ptah.adapters.judges import chat
from tests.http_servers import FakeService
from tests.judges.chat_server import MODEL, chat_handler
from tests.services.conftest import DOCS, Workspace

KEY = "sk-judge-0123456789"
CORPUS = """\
version: 1
default_k: 3
cases:
  - id: billing
    query: cancel billing subscription
    relevant: {"1": 1}
  - id: password
    query: reset the password
    relevant: {"2": 1}
  - id: invoices
    query: export invoices
    relevant: {"3": 1}
  - id: tokens
    query: developer tokens
    relevant: {"8": 1}
"""


@pytest.fixture(scope="module")
def chat_server():
    served = FakeService(chat_handler)
    yield served
    served.close()


@pytest.fixture
def judged_space(tmp_path, chat_server, monkeypatch):
    """The workspace, its spec declaring the chat judge ``gpt`` (max_requests 100, timeout 2 s) and
    the corpus."""
    chat_server.reset()
    monkeypatch.setattr(
        chat, "POLICY", http_client.Policy(attempts=3, backoff_s=0.01, max_delay_s=0.5)
    )
    monkeypatch.setenv("JUDGE_KEY", KEY)
    space = Workspace(tmp_path)
    space.execute(
        "CREATE TABLE articles (id INTEGER PRIMARY KEY, title TEXT, body TEXT, status TEXT)"
    )
    space.execute("INSERT INTO articles VALUES (?, ?, ?, ?)", DOCS)
    space.write_spec()
    with space.spec_path.open("a") as spec:
        spec.write(
            f'judges:\n  gpt: {{kind: chat, model: {MODEL}, base_url: "{chat_server.base_url}", '
            "api_key_env: JUDGE_KEY, max_requests: 100, timeout_s: 2}\n"
        )
    (tmp_path / "c.yaml").write_text(CORPUS)
    from ptah.services.build import build

    with space.project() as project:
        build(project, "docs")
    return space
