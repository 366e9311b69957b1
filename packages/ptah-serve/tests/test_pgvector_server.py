"""The server over a pgvector store: tokens, corpora, jobs and reports kept in PostgreSQL, across a
restart."""

from __future__ import annotations

from serving import Server, make_project, wait_done


def test_a_server_on_a_pgvector_store_keeps_everything_there(tmp_path, postgres_url):  # noqa: F811
    project = make_project(tmp_path, store=postgres_url)
    first = Server(project.spec, "--workers", "2").start()
    try:
        manage = first.client(project.tokens["manage"])
        digest = manage.post(
            "/v1/corpora", content=project.corpus.read_bytes(), params={"split": "test"}
        ).json()["digest"]
        job = wait_done(
            manage,
            manage.post(
                "/v1/evaluations",
                json={
                    "corpus": digest,
                    "generations": ["docs", "wide"],
                    "channels": ["vector", "lexical"],
                },
            ).json()["id"],
        )
        assert job["status"] == "done", job["error"]
        assert first.client(project.tokens["revoked"]).get("/v1/corpora").status_code == 401
    finally:
        first.stop()
    assert not (tmp_path / ".ptah").exists()  # nothing went to a SQLite file
    second = Server(project.spec).start()
    try:
        read = second.client(project.tokens["read"])
        assert read.get(f"/v1/evaluations/{job['id']}").json() == job
        assert [item["split"] for item in read.get("/v1/corpora").json()["items"]] == ["test"]
    finally:
        second.stop()
