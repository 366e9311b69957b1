"""The application keeps writing to its SQLite table while ``ptah serve`` evaluates over it (issue
26, item 2).

The source is the application's file in SQLite's default rollback-journal
mode, where a reader holding a transaction makes every writer wait. The
writer is a process of its own, as the application is; it times each write
(its busy timeout is 3 s, so a held snapshot shows as a 3 s wait or a
``database is locked``) while the server runs several evaluations.
"""

from __future__ import annotations

import json
import subprocess
import sys

from serving import Server, make_project, wait_done

WRITER = r"""
import json, sqlite3, sys, time
path, stop = sys.argv[1], sys.argv[2]
connection = sqlite3.connect(path, timeout=3, isolation_level=None)
waits, errors = [], []
while True:
    started = time.monotonic()
    try:
        connection.execute("UPDATE articles SET body = body || '' WHERE id = 1")
    except sqlite3.OperationalError as exc:
        errors.append(str(exc))
    waits.append(time.monotonic() - started)
    try:
        open(stop).close()
        break
    except FileNotFoundError:
        time.sleep(0.02)
print(json.dumps({"writes": len(waits), "max_wait": max(waits), "errors": errors}))
"""


def test_the_application_writes_to_its_table_while_the_server_evaluates(tmp_path):
    project = make_project(tmp_path)
    server = Server(project.spec, "--workers", "1").start()
    stop = tmp_path / "stop-writing"
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(tmp_path / "source.db"), str(stop)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        with server.client(project.tokens["manage"]) as client:
            digest = client.post("/v1/corpora", content=project.corpus.read_bytes()).json()[
                "digest"
            ]
            for generation in ("docs", "wide", "docs", "wide"):
                started = client.post(
                    "/v1/evaluations", json={"corpus": digest, "generations": [generation]}
                )
                assert wait_done(client, started.json()["id"])["status"] == "done"
    finally:
        stop.touch()
        out, _ = writer.communicate(timeout=30)
        server.stop()
    written = json.loads(out)
    assert written["errors"] == []
    assert written["writes"] >= 5
    assert written["max_wait"] < 1.0, written
