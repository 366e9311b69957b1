"""Every endpoint x (no token, read, manage, revoked): the documented status, and revocation counts
at once."""

from __future__ import annotations

import pytest
from serving import wait_done
from starlette.requests import Request

from ptah_serve.auth import session_cookie

OK = {"none": 401, "revoked": 401}


def endpoints(digest: str, job_id: str, corpus_text: str) -> list[tuple[str, str, dict, dict]]:
    """(method, path, request options, {grant: status}) for every endpoint."""
    read_ok = {"read": 200, "manage": 200}
    return [
        ("GET", "/openapi.json", {}, {"none": 200, "revoked": 200, "read": 200, "manage": 200}),
        ("POST", "/v1/corpora", {"content": corpus_text.encode()}, {"read": 403, "manage": 200}),
        ("GET", "/v1/corpora", {}, read_ok),
        ("GET", f"/v1/corpora/{digest}", {}, read_ok),
        ("POST", "/v1/evaluations", {"json": {"corpus": digest}}, {"read": 403, "manage": 202}),
        ("GET", "/v1/evaluations", {}, read_ok),
        ("GET", f"/v1/evaluations/{job_id}", {}, read_ok),
        ("DELETE", f"/v1/evaluations/{job_id}", {}, {"read": 403, "manage": 200}),
    ]


@pytest.fixture(scope="module")
def registered(project, server):
    manage = server.client(project.tokens["manage"])
    digest = manage.post("/v1/corpora", content=project.corpus.read_bytes()).json()["digest"]
    job = wait_done(manage, manage.post("/v1/evaluations", json={"corpus": digest}).json()["id"])
    return digest, job["id"]


@pytest.mark.parametrize("grant", ["none", "read", "manage", "revoked"])
def test_every_endpoint_answers_each_grant_as_documented(project, server, registered, grant):
    digest, job_id = registered
    client = server.client(None if grant == "none" else project.tokens[grant])
    seen = {}
    for method, path, options, statuses in endpoints(digest, job_id, project.corpus.read_text()):
        answer = client.request(method, path, **options)
        seen[f"{method} {path}"] = answer.status_code
        expected = statuses.get(grant, OK.get(grant))
        assert answer.status_code == expected, (method, path, answer.text)
        if answer.status_code in (401, 403):
            assert answer.headers["content-type"] == "application/problem+json"
            assert answer.json()["code"] == (
                "UNAUTHORIZED" if answer.status_code == 401 else "FORBIDDEN"
            )
        if answer.status_code == 401:
            assert answer.headers["www-authenticate"] == 'Bearer realm="ptah"'
    assert len(seen) == 8


@pytest.mark.parametrize(
    "header",
    [
        "Bearer",
        "Basic dXNlcjpwYXNz",
        "Bearer ptah.AAAAAAAAAAAA." + "A" * 43,
        "Bearer not-a-token",
        "bearer {manage}x",
        "Bearer {manage_wrong_secret}",
    ],
)
def test_a_malformed_unknown_or_altered_token_is_401(project, server, header):
    manage = project.tokens["manage"]
    wrong = manage[:-1] + ("A" if manage[-1] != "A" else "B")
    value = header.format(manage=manage, manage_wrong_secret=wrong)
    answer = server.client().get("/v1/corpora", headers={"Authorization": value})
    assert answer.status_code == 401


def test_a_revoked_token_is_refused_from_the_next_request(project, server):
    token = project.token("read", "short-lived")
    client = server.client(token)
    assert [client.get("/v1/corpora").status_code for _ in range(3)] == [200, 200, 200]
    project.revoke("short-lived")
    answer = client.get("/v1/corpora")
    assert (answer.status_code, answer.json()["detail"]) == (401, "the token was revoked.")


def test_the_page_wants_a_read_token_in_the_session_cookie_never_in_the_url(project, server):
    anonymous = server.client()
    login = anonymous.get("/")
    assert (
        login.status_code == 200
        and 'action="/login"' in login.text
        and 'type="password"' in login.text
    )
    refused = anonymous.post("/login", data={"token": project.tokens["revoked"]})
    assert refused.status_code == 401 and "set-cookie" not in refused.headers
    signed_in = anonymous.post(
        "/login", data={"token": project.tokens["read"]}, follow_redirects=False
    )
    assert (signed_in.status_code, signed_in.headers["location"]) == (303, "/")
    cookie = signed_in.headers["set-cookie"]
    assert cookie == f"ptah_session={project.tokens['read']}; Path=/; HttpOnly; SameSite=Strict"
    home = anonymous.get("/")
    assert "ptah: evaluations" in home.text and project.tokens["read"] not in home.text
    assert home.headers["content-security-policy"].startswith("default-src 'none'")
    api = anonymous.get("/v1/corpora")  # the cookie is never a token for the API
    assert api.status_code == 401
    out = anonymous.post("/logout", follow_redirects=False)
    assert out.headers["set-cookie"].startswith("ptah_session=; Max-Age=0")


def test_unknown_paths_methods_and_oversized_sign_ins_are_problems_not_tracebacks(project, server):
    client = server.client(project.tokens["manage"])
    for method, path, status, code in (
        ("GET", "/v1/nothing", 404, "NOT_FOUND"),
        ("PUT", "/v1/corpora", 405, "METHOD_NOT_ALLOWED"),
        ("GET", "/v1/corpora/..%2F..%2Fetc%2Fpasswd", 404, "NOT_FOUND"),
        ("GET", "/v1/evaluations/ev_../../x", 404, "NOT_FOUND"),
    ):
        answer = client.request(method, path)
        assert (answer.status_code, answer.json()["code"]) == (status, code), (method, path)
        assert answer.headers["content-type"] == "application/problem+json"
    huge = server.client().post(
        "/login",
        content=b"token=" + b"a" * 10_000,
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert huge.status_code == 401 and "set-cookie" not in huge.headers


def test_the_session_cookie_is_secure_when_the_page_is_served_over_tls():
    def cookie(scheme, token):
        return session_cookie(
            Request(
                {
                    "type": "http",
                    "scheme": scheme,
                    "server": ("ptah.example", 443),
                    "path": "/",
                    "headers": [],
                    "query_string": b"",
                }
            ),
            token,
        )

    assert (
        cookie("https", "ptah.x.y")
        == "ptah_session=ptah.x.y; Path=/; HttpOnly; SameSite=Strict; Secure"
    )
    assert (
        cookie("https", None)
        == "ptah_session=; Max-Age=0; Path=/; HttpOnly; SameSite=Strict; Secure"
    )
    assert cookie("http", "ptah.x.y") == "ptah_session=ptah.x.y; Path=/; HttpOnly; SameSite=Strict"
