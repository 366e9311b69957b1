"""Load on loopback, bounded in count and time: 50 concurrent clients; and a restart during a
running job."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from serving import CASES, Server, corpus_yaml, make_project, wait_done

CLIENTS = 50


def test_fifty_clients_posting_and_polling_lose_and_duplicate_no_job(project, server):
    text = corpus_yaml(
        [
            (f"{case_id}-{i}", f"{query} {i}", key)
            for i in range(3)
            for case_id, query, key in CASES
        ],
        name="load",
    )

    def register(_):
        with server.client(project.tokens["manage"]) as client:
            answer = client.post("/v1/corpora", content=text.encode())
            return answer.status_code, answer.json()["digest"]

    with ThreadPoolExecutor(CLIENTS) as pool:
        registered = list(pool.map(register, range(CLIENTS)))
    assert sorted(status for status, _ in registered) == [200] * (CLIENTS - 1) + [
        201
    ]  # one registration, 49 found it
    digest = registered[0][1]
    assert {found for _, found in registered} == {digest}

    def evaluate(number: int) -> dict:
        with server.client(project.tokens["manage"]) as client:
            started = client.post(
                "/v1/evaluations",
                json={
                    "corpus": digest,
                    "seed": number,
                    "bootstrap": 200,
                    "generations": ["docs", "wide"],
                },
            )
            assert started.status_code == 202, started.text
            return wait_done(client, started.json()["id"], timeout=240)

    began = time.monotonic()
    with ThreadPoolExecutor(CLIENTS) as pool:
        jobs = list(pool.map(evaluate, range(CLIENTS)))
    assert time.monotonic() - began < 240
    ids = [job["id"] for job in jobs]
    assert len(set(ids)) == CLIENTS
    assert [job["status"] for job in jobs] == ["done"] * CLIENTS, [
        job["error"] for job in jobs if job["error"]
    ][:3]
    for number, job in enumerate(jobs):
        report = job["report"]
        assert report["corpus"]["digest"] == digest
        assert [len(run["cases"]) for run in report["runs"]] == [len(CASES) * 3] * 2
        assert report["comparison"]["statistics"]["seed"] == number
        assert job["request"]["seed"] == number
    listed = (
        server.client(project.tokens["read"])
        .get("/v1/evaluations", params={"corpus": digest, "limit": 200})
        .json()
    )
    assert sorted(job["id"] for job in listed["items"]) == sorted(ids)


def test_a_job_running_when_the_server_dies_is_failed_on_restart_and_the_others_are_intact(
    tmp_path,
):
    project = make_project(tmp_path)
    first = Server(project.spec, "--workers", "1").start()
    try:
        manage = first.client(project.tokens["manage"])
        small = manage.post("/v1/corpora", content=project.corpus.read_bytes()).json()["digest"]
        big_cases = [
            (f"{case_id}-{i}", f"{query} number {i}", key)
            for i in range(64)
            for case_id, query, key in CASES
        ]
        big = manage.post(
            "/v1/corpora", content=corpus_yaml(big_cases, name="big").encode()
        ).json()["digest"]
        done = wait_done(
            manage, manage.post("/v1/evaluations", json={"corpus": small}).json()["id"]
        )
        slow = manage.post(
            "/v1/evaluations",
            json={"corpus": big, "generations": ["docs", "wide"], "bootstrap": 1_000_000},
        ).json()["id"]
        queued = manage.post("/v1/evaluations", json={"corpus": small}).json()["id"]
        wait_done(manage, slow, 60, until=("running",))
        assert manage.get(f"/v1/evaluations/{queued}").json()["status"] == "queued"
    finally:
        first.kill()
    second = Server(project.spec, "--workers", "1").start()
    try:
        read = second.client(project.tokens["read"])
        failed = read.get(f"/v1/evaluations/{slow}").json()
        assert (failed["status"], failed["error"]["code"], failed["report"]) == (
            "failed",
            "SERVER_RESTARTED",
            None,
        )
        assert read.get(f"/v1/evaluations/{done['id']}").json() == done
        assert wait_done(read, queued)["status"] == "done"
    finally:
        second.stop()
