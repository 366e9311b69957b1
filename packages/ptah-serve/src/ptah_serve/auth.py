"""Who may do what: bearer tokens for the API, the same token in a session cookie for the page.

``Authorization: Bearer ptah.ID.SECRET`` on every ``/v1`` call (the cookie
is never read there, so a page open in a browser cannot be made to call the
API). No token, a malformed, unknown or revoked one: 401 with
``WWW-Authenticate: Bearer``; a valid token of the wrong scope: 403. The
check reads the token's record every time, so a revocation counts from the
next request.

The page's login form posts the token once; it is kept in the cookie ``ptah_session`` (``HttpOnly;
SameSite=Strict; Path=/``, and ``Secure`` when the page is served over TLS), never in a URL, and
never logged. The login and logout forms refuse a post from another site (403 ``CROSS_SITE``): its
``Sec-Fetch-Site`` says ``cross-site`` or ``same-site``, or its ``Origin`` is not this server's
(host and port, as the ``Host`` or a proxy's ``X-Forwarded-Host`` header names it), so no other page
can sign a browser in with the attacker's token or out of its session.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.requests import Request

from ptah_serve.problems import HttpProblem
from ptah_serve.tokens import Grant, check_token

COOKIE = "ptah_session"
_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="ptah"'}
_WHY = {
    "missing": "this endpoint needs a token: Authorization: Bearer …",
    "invalid": "the token is not valid.",
    "revoked": "the token was revoked.",
}


def bearer(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def grant_of(request: Request, presented: str | None) -> tuple[Grant | None, str]:
    return check_token(request.app.state.records, presented)


def require(request: Request, scope: str) -> Grant:
    """The request's grant, which allows ``scope``; HttpProblem 401 or 403 otherwise."""
    grant, why = grant_of(request, bearer(request))
    if grant is None:
        raise HttpProblem(401, "UNAUTHORIZED", _WHY[why], _CHALLENGE)
    if not grant.allows(scope):
        raise HttpProblem(
            403,
            "FORBIDDEN",
            f'the token "{grant.name}" has scope {grant.scope}; this needs {scope}.',
        )
    return grant


def page_grant(request: Request) -> Grant | None:
    """The page's session: a read grant from the cookie, or None (show the login form)."""
    grant, _ = grant_of(request, request.cookies.get(COOKIE))
    return grant if grant is not None and grant.allows("read") else None


def session_cookie(request: Request, token: str | None) -> str:
    """The Set-Cookie value keeping ``token`` (None: ending the session); ``Secure`` over TLS."""
    value = f"{COOKIE}=; Max-Age=0" if token is None else f"{COOKIE}={token}"
    return f"{value}; Path=/; HttpOnly; SameSite=Strict" + (
        "; Secure" if request.url.scheme == "https" else ""
    )


def refuse_cross_site(request: Request) -> None:
    """HttpProblem 403 for a form posted from another site (see the module docs)."""
    fetched_from = request.headers.get("sec-fetch-site")
    origin = request.headers.get("origin")
    # A proxy may rewrite Host and say the public one in X-Forwarded-Host; a cross-site form cannot
    # set that header.
    own = {request.headers.get(name, "").lower() for name in ("host", "x-forwarded-host")} - {""}
    if fetched_from in ("cross-site", "same-site") or (
        origin is not None and urlsplit(origin).netloc.lower() not in own
    ):
        raise HttpProblem(403, "CROSS_SITE", "this form must be posted from the server's own page.")
