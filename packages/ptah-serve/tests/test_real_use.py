"""``ptah serve`` under real use (issue 26, item 3): a second server, a stop, clients that leave,
cross-site forms, near-duplicate queries across splits, long listings, a flooded queue, concurrent
token names, the report's corpus."""

from __future__ import annotations

import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from contextlib import contextmanager

import pytest
from serving import Server, corpus_yaml, make_project, register, wait_done


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    return make_project(tmp_path_factory.mktemp("real"))


@pytest.fixture(scope="module")
def server(project):
    running = Server(project.spec, "--workers", "1").start()
    yield running
    running.stop()


@contextmanager
def source_locked(folder):
    """The source held under an exclusive lock: a job that starts cannot read it, and stays running
    meanwhile."""
    blocker = sqlite3.connect(folder / "source.db", isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")
    try:
        yield
    finally:
        blocker.rollback()
        blocker.close()


def start_running(client, digest: str) -> str:
    """A job started and seen running (its source locked): its id."""
    return wait_done(
        client,
        client.post("/v1/evaluations", json={"corpus": digest}).json()["id"],
        30,
        until=("running",),
    )["id"]


# --- one server per store ---------------------------------------------------------------


def test_a_second_server_on_the_same_store_refuses_to_start(project, server):
    second = subprocess.run(
        [
            sys.executable,
            "-m",
            "ptah",
            "serve",
            "--spec",
            str(project.spec),
            "--port",
            str(server.port + 1),
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert second.returncode == 3
    assert second.stderr == (
        f"another ptah serve is running on this store (pid {server.process.pid}); "
        "stop it first: one server per store.\n"
    )
    with server.client(project.tokens["read"]) as client:  # the first server goes on
        assert client.get("/v1/evaluations").status_code == 200


# --- a stop fails the running job at once -------------------------------------------------


def test_sigterm_marks_the_running_job_server_stopped_at_once(tmp_path):
    project = make_project(tmp_path)
    first = Server(project.spec, "--workers", "1").start()
    try:
        with source_locked(tmp_path), first.client(project.tokens["manage"]) as client:
            job_id = start_running(
                client, register(client, project.corpus.read_text()).json()["digest"]
            )
            first.process.send_signal(signal.SIGTERM)
            assert first.process.wait(30) == 0
    finally:
        first.stop()
    second = Server(project.spec).start()
    try:
        with second.client(project.tokens["read"]) as client:
            job = client.get(f"/v1/evaluations/{job_id}").json()
    finally:
        second.stop()
    assert (job["status"], job["error"]["code"]) == ("failed", "SERVER_STOPPED")


# --- clients that leave, forms from other sites ----------------------------------------------


def test_thirty_clients_that_leave_halfway_through_a_body_make_one_quiet_line_each(project, server):
    before = server.log.read_text()
    for _ in range(30):
        with socket.create_connection(("127.0.0.1", server.port)) as sock:
            sock.sendall(
                b"POST /login HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                b"Content-Length: 1000\r\n\r\ntoken=ptah."
            )
            time.sleep(0.02)
    time.sleep(0.5)
    with server.client(project.tokens["read"]) as client:  # the server goes on
        assert client.get("/v1/corpora").status_code == 200
    added = server.log.read_text()[len(before) :].splitlines()
    assert added == ["client left before sending the whole body of POST /login"] * 30


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "https://elsewhere.example"},
        {"Origin": "null"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
    ],
)
@pytest.mark.parametrize("path", ["/login", "/logout"])
def test_login_and_logout_refuse_a_post_from_another_site(project, server, headers, path):
    with server.client(follow_redirects=False) as client:
        answer = client.post(path, data={"token": project.tokens["read"]}, headers=headers)
    assert answer.status_code == 403
    assert answer.headers["content-type"] == "application/problem+json"
    assert (answer.json()["code"], answer.json()["detail"]) == (
        "CROSS_SITE",
        "this form must be posted from the server's own page.",
    )
    assert "set-cookie" not in answer.headers


@pytest.mark.parametrize("proxied", [False, True])
def test_login_from_the_servers_own_page_signs_in(project, server, proxied):
    own = {
        "Origin": "https://ptah.example" if proxied else server.url,
        "Sec-Fetch-Site": "same-origin",
        **({"X-Forwarded-Host": "ptah.example"} if proxied else {}),
    }
    with server.client(follow_redirects=False) as client:
        answer = client.post("/login", data={"token": project.tokens["read"]}, headers=own)
    assert answer.status_code == 303
    assert answer.headers["set-cookie"].startswith("ptah_session=ptah.")


# --- split leakage ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        "Rotate the API keys ",
        "rotate the\u00a0API keys",
        "ROTATE THE API KEYS",
        "\uff52otate the API keys",
        "  rotate  the API\tkeys",
        "ro\u200btate the API keys",
        "rot\u00adate the API keys",
        "rotate the\u2060 API keys",
        "rotate the A\u200cPI keys",
        "rotate the API k\u200deys",
        "\ufeffrotate the API keys\ufe0f",
    ],
)
def test_a_test_query_differing_only_in_form_from_a_development_query_is_refused(
    project, server, query
):
    with server.client(project.tokens["manage"]) as client:
        development = register(
            client,
            corpus_yaml([("keys", "rotate the API keys", "3")], name="dev-keys"),
            "development",
        )
        assert development.status_code in (200, 201)
        leaking = register(client, corpus_yaml([("keys", query, "3")], name="test-keys"), "test")
    assert leaking.status_code == 409
    assert leaking.json()["detail"] == (
        f"this test corpus shares 1 query text(s) with the development corpus {development.json()['digest']}, "
        "such as 'rotate the api keys': a query may not cross splits."
    )


# --- token names ------------------------------------------------------------------------------


class _ScanTogether:
    """A real record store whose every listing of tokens waits (up to 2 s) for the other creator's:
    the interleaving in which two creators both look for the name before either writes its token."""

    def __init__(self, records, barrier: threading.Barrier):
        self._records, self._barrier = records, barrier

    def __getattr__(self, name):
        return getattr(self._records, name)

    def items(self, kind):
        found = self._records.items(kind)
        try:
            self._barrier.wait()
        except threading.BrokenBarrierError:
            pass
        return found


def test_two_concurrent_creations_of_one_token_name_cannot_both_succeed(project):
    import ptah
    from ptah.core.errors import InputError
    from ptah_serve.corpora import open_records
    from ptah_serve.tokens import create_token, list_tokens

    with ptah.open_project(project.spec) as opened:
        spec = opened.spec
    barrier = threading.Barrier(2, timeout=2)
    stores = [open_records(spec), open_records(spec)]  # two connections, as two processes have
    outcomes: list[str] = []

    def create(records) -> None:
        try:
            create_token(_ScanTogether(records, barrier), "read", "twin")
            outcomes.append("created")
        except InputError as exc:
            outcomes.append(str(exc))

    threads = [threading.Thread(target=create, args=(records,)) for records in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    try:
        assert sorted(outcomes) == [
            'an active token is named "twin" already; revoke it first or choose another name.',
            "created",
        ]
        assert [token["name"] for token in list_tokens(stores[0])].count("twin") == 1
    finally:
        for records in stores:
            records.close()


def test_token_create_of_a_name_in_use_exits_2_and_a_revoked_name_is_free_again(project):
    from serving import ptah

    assert project.token("read", "reused").startswith("ptah.")
    again = ptah(
        "token", "create", "--scope", "read", "--name", "reused", "--spec", str(project.spec)
    )
    assert (again.returncode, again.stdout) == (2, "")
    assert (
        again.stderr
        == 'an active token is named "reused" already; revoke it first or choose another name.\n'
    )
    project.revoke("reused")
    assert project.token("manage", "reused").startswith("ptah.")


# --- listings and the queue --------------------------------------------------------------------


def test_a_listing_reads_the_job_records_no_further_than_its_page(project, server):
    import ptah
    from ptah_serve.corpora import open_records

    with server.client(project.tokens["manage"]) as client:
        digest = register(client, project.corpus.read_text()).json()["digest"]
        ids = [
            client.post("/v1/evaluations", json={"corpus": digest}).json()["id"] for _ in range(3)
        ]
        for job_id in ids:
            wait_done(client, job_id)
        with ptah.open_project(project.spec) as opened:
            records = open_records(opened.spec)
        # a record past the page that cannot be read: a listing that read every record would fail on
        # it
        try:
            records.put("evaluation", "ev_" + "f" * 24, "{not a job")
            first = client.get("/v1/evaluations", params={"limit": 2}).json()
        finally:
            records.remove("evaluation", "ev_" + "f" * 24)
            records.close()
        second = client.get("/v1/evaluations", params={"limit": 1, "after": first["next"]}).json()
    listed = [job["id"] for job in first["items"] + second["items"]]
    assert listed == ids and second["next"] is None
    assert first["next"] == first["items"][-1]["id"]
    with server.client(project.tokens["read"]) as client:
        gone = client.get("/v1/evaluations", params={"after": "ev_" + "0" * 24})
    assert (gone.status_code, gone.json()["detail"]) == (
        422,
        "after: not an evaluation of this listing (use the previous page's next).",
    )


def test_a_manage_token_past_its_queue_bound_gets_429_with_retry_after(tmp_path):
    project = make_project(tmp_path)
    other = project.token("manage", "other")
    bounded = Server(project.spec, "--workers", "1", "--max-queued", "2").start()
    try:
        with (
            source_locked(tmp_path),
            bounded.client(project.tokens["manage"]) as client,
            bounded.client(other) as second,
        ):
            digest = register(client, project.corpus.read_text()).json()["digest"]
            start_running(client, digest)  # the one worker is busy: the others wait
            queued = [client.post("/v1/evaluations", json={"corpus": digest}) for _ in range(2)]
            refused = client.post("/v1/evaluations", json={"corpus": digest})
            elsewhere = second.post(
                "/v1/evaluations", json={"corpus": digest}
            )  # the bound is per token
            assert (
                client.delete(f"/v1/evaluations/{queued[0].json()['id']}").json()["status"]
                == "cancelled"
            )
            after_cancel = client.post("/v1/evaluations", json={"corpus": digest})
    finally:
        bounded.stop()
    assert [answer.status_code for answer in queued] == [202, 202]
    assert (refused.status_code, refused.headers["retry-after"], refused.json()["code"]) == (
        429,
        "10",
        "QUEUE_FULL",
    )
    assert refused.json()["detail"] == (
        'the token "manage" has 2 evaluations queued, the limit; try again once some have started.'
    )
    assert (elsewhere.status_code, after_cancel.status_code) == (202, 202)


# --- the report names the registered corpus ----------------------------------------------------


def test_a_served_report_names_the_registered_corpus_by_its_name_and_digest(project, server):
    with server.client(project.tokens["manage"]) as client:
        digest = register(client, project.corpus.read_text()).json()["digest"]
        job = wait_done(
            client, client.post("/v1/evaluations", json={"corpus": digest}).json()["id"]
        )
        report = client.get(f"/v1/evaluations/{job['id']}").json()["report"]
    with server.client(cookies={"ptah_session": project.tokens["read"]}) as browser:
        page = browser.get(f"/evaluations/{job['id']}/report.html")
    label = f"support ({digest[:19]}\u2026)"
    assert (report["corpus"]["path"], report["corpus"]["name"], report["corpus"]["digest"]) == (
        label,
        "support",
        digest,
    )
    assert f'corpus <span class="mono">{label}</span>, 8 cases' in page.text
