"""What the server's tests share: a project of ten rows and two deterministic generations, ``ptah
serve`` on 127.0.0.1 (a free port) in its own process, and the CLI run in this one.

The server is the installed command in its own process, exactly as a user
starts it; tokens are made with ``ptah token create`` (its last stdout line);
the client is httpx. Nothing here imports ptah's own tests: these run against
an installed core.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple
from urllib.parse import quote

import httpx
import pytest

DOCS = [
    (1, "Cancel a subscription", "Open billing and press cancel.", "published"),
    (2, "Reset a password", "Use the forgot password link.", "published"),
    (3, "Export invoices", "Invoices export as PDF from billing.", "published"),
    (4, "Invite a teammate", "Admins invite people from settings.", "published"),
    (5, "Delete an account", "Contact support to delete an account.", "published"),
    (6, "Change the plan", "Upgrade or downgrade under billing.", "published"),
    (7, "Two-factor login", "Enable 2FA with an authenticator app.", "published"),
    (8, "API tokens", "Create tokens under developer settings.", "published"),
    (9, "Draft: roadmap", "Unreleased features.", "draft"),
    (10, "Webhooks", "Webhooks post JSON to your endpoint.", "published"),
]


TEXT = "{title}\n\n{body}"


class Result(NamedTuple):
    """What ``ptah ARGV`` did: its exit code, its stdout and its stderr."""

    code: int
    out: str
    err: str


def run_cli(capsys, *argv) -> Result:
    """``ptah ARGV`` in this process; ``capsys`` None where nothing captures per test (a module's
    fixture)."""
    from ptah.cli import main

    with pytest.raises(SystemExit) as info:
        main([str(a) for a in argv])
    out, err = capsys.readouterr() if capsys is not None else ("", "")
    return Result(info.value.code, out, err)


def spec_yaml(*, filter=None, store=None, generations: dict) -> str:
    """A ptah.yaml over table ``articles`` of ``source.db`` (key ``id``, text :data:`TEXT`),
    with ``generations`` (each a dict of fields, written as JSON)."""
    lines = [
        "version: 1",
        "source:",
        '  database: "sqlite:///source.db"',
        "  table: articles",
        '  key_fields: ["id"]',
        f"  text: {json.dumps(TEXT)}",
    ]
    if filter is not None:
        lines.append(f"  filter: {json.dumps(filter)}")
    if store is not None:
        lines.append(f"store: {json.dumps(store)}")
    lines += [f"active: {next(iter(generations))}", "generations:"]
    for name, fields in generations.items():
        lines.append(f"  {name}:")
        lines += [f"    {field}: {json.dumps(value)}" for field, value in fields.items()]
    return "\n".join(lines) + "\n"


class PostgresServer:
    """A running PostgreSQL with pgvector (pgserver): URLs of its databases, fresh ones made."""

    def __init__(self, server, folder: Path):
        self.server = server
        self.socket = str(folder)
        self.made = 0

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@/{database}?host={quote(self.socket)}"

    def create_database(self) -> str:
        import psycopg

        self.made += 1
        name = f"ptah_serve_test_{self.made}"
        with psycopg.connect(self.url(), autocommit=True) as connection:
            connection.execute(f"CREATE DATABASE {name}")
        return name


GENERATIONS = ("docs", "wide")
CASES = [  # (id, query, required key)
    ("cancel", "cancel a subscription in billing", "1"),
    ("password", "forgot password link", "2"),
    ("invoices", "export invoices pdf", "3"),
    ("invite", "invite people teammate", "4"),
    ("delete", "delete my account", "5"),
    ("plan", "upgrade or downgrade plan", "6"),
    ("2fa", "authenticator app login", "7"),
    ("webhooks", "webhooks post json", "10"),
]


def corpus_yaml(cases=CASES, name: str = "support", k: int = 3) -> str:
    lines = ["version: 1", f"name: {name}", f"default_k: {k}", "cases:"]
    for case_id, query, key in cases:
        lines += [f"  - id: {case_id}", f'    query: "{query}"', f'    required: ["{key}"]']
    return "\n".join(lines) + "\n"


def register(client: httpx.Client, text: str, split: str | None = None) -> httpx.Response:
    """POST /v1/corpora: ``text`` registered as a corpus (of ``split``, when given)."""
    return client.post(
        "/v1/corpora", content=text.encode("utf-8"), params={"split": split} if split else {}
    )


def ptah(*args: str) -> subprocess.CompletedProcess:
    """The ``ptah`` command in its own process, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "ptah", *args], capture_output=True, text=True, timeout=120
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    """``ptah serve`` in a subprocess; ``url``, ``client(token)``."""

    def __init__(self, spec: Path, *options: str):
        self.spec, self.options = spec, options
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = spec.parent / f"serve-{self.port}.log"
        self.process: subprocess.Popen | None = None

    def start(self) -> Server:
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "ptah",
                    "serve",
                    "--spec",
                    str(self.spec),
                    "--port",
                    str(self.port),
                    *self.options,
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.log.read_text()
            try:
                if httpx.get(f"{self.url}/openapi.json", timeout=2).status_code == 200:
                    return self
            except httpx.TransportError:
                time.sleep(0.1)
        raise AssertionError(f"the server did not answer in 60 s: {self.log.read_text()}")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()

    def client(self, token: str | None = None, **options) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=60, **options)


class Project:
    """The project folder, its spec, its tokens by scope (``manage``, ``read``, ``revoked``)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.spec = folder / "ptah.yaml"
        self.tokens: dict[str, str] = {}
        self.corpus = folder / "support.yaml"

    def token(self, scope: str, name: str) -> str:
        """A new token made by ``ptah token create``: the last line of its output."""
        made = ptah("token", "create", "--scope", scope, "--name", name, "--spec", str(self.spec))
        assert made.returncode == 0, made.stderr
        return made.stdout.splitlines()[-1]

    def revoke(self, name: str) -> None:
        revoked = ptah("token", "revoke", name, "--spec", str(self.spec))
        assert revoked.returncode == 0, revoked.stderr


def make_project(folder: Path, store: str | None = None) -> Project:
    """The ten DOCS, generations docs and wide built, tokens manage, read and revoked; ``store``: a
    URL."""
    import sqlite3

    project = Project(folder)
    connection = sqlite3.connect(folder / "source.db")
    with connection:
        connection.execute(
            "CREATE TABLE articles (id INTEGER PRIMARY KEY, title TEXT, body TEXT, status TEXT)"
        )
        connection.executemany("INSERT INTO articles VALUES (?, ?, ?, ?)", DOCS)
    connection.close()
    project.spec.write_text(
        spec_yaml(
            filter="status = 'published'",
            store=store,
            generations={
                "docs": {"model": "ptah/deterministic", "dimension": 32},
                "wide": {"model": "ptah/deterministic", "dimension": 64, "text": "{body}"},
            },
        )
        + "variants:\n  bm25: {channels: [lexical]}\n  fused: {channels: [lexical, vector], generation: wide}\n"
    )
    project.corpus.write_text(corpus_yaml())
    for name in GENERATIONS:
        assert (
            run_cli(None, "inference", "build", name, "--spec", project.spec, "--quiet").code == 0
        )
    for scope in ("manage", "read", "revoked"):
        project.tokens[scope] = project.token("manage" if scope == "revoked" else scope, scope)
    project.revoke("revoked")
    return project


def wait_done(
    client: httpx.Client, job_id: str, timeout: float = 120, until=("done", "failed", "cancelled")
) -> dict:
    """The job once its status is one of ``until`` (by default: finished); AssertionError past
    ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = client.get(f"/v1/evaluations/{job_id}").json()
        if job["status"] in until:
            return job
        time.sleep(0.02)
    raise AssertionError(f"evaluation {job_id} was not {' or '.join(until)} in {timeout} s")
