"""Errors as ``application/problem+json`` (RFC 9457), and request bodies read within their byte
bound.

Every error the server answers is one JSON object: ``type``, ``title``,
``status``, ``detail`` (one or two sentences, never a traceback), ``code``
(``LIMIT_EXCEEDED``, ``CorpusError``, ``UNAUTHORIZED``…) and, for an invalid
corpus, ``problems``: each with its ``line``, ``case``, ``field`` and
``message``, as ``ptah corpus validate --json`` lists them.
"""

from __future__ import annotations

import json
import os
import re

from starlette.requests import Request
from starlette.responses import Response

from ptah import InputError, OperationalError, PtahError
from ptah_serve.corpora import CorpusConflict
from ptah_serve.limits import BodyTooLarge

PROBLEM_JSON = "application/problem+json"
TITLES = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    409: "Conflict",
    413: "Content Too Large",
    415: "Unsupported Media Type",
    422: "Unprocessable Content",
    429: "Too Many Requests",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


class HttpProblem(Exception):
    """An error answered with ``status`` and ``code``."""

    def __init__(self, status: int, code: str, detail: str, headers: dict | None = None):
        super().__init__(detail)
        self.status, self.code, self.detail, self.headers = status, code, detail, headers or {}


def problem(
    status: int,
    code: str,
    detail: str,
    *,
    problems: list | None = None,
    headers: dict | None = None,
) -> Response:
    body = {
        "type": "about:blank",
        "title": TITLES.get(status, "Error"),
        "status": status,
        "detail": detail,
        "code": code,
    }
    if problems:
        body["problems"] = problems
    return Response(
        json.dumps(body, ensure_ascii=False),
        status_code=status,
        media_type=PROBLEM_JSON,
        headers=headers,
    )


def unrooted(text: str, root: str | None) -> str:
    """``text`` with the project folder ``root`` (absolute) written relative to it: the spec's and
    the store's errors start with their absolute paths, which a client has no business learning."""
    if not root or not os.path.isabs(root) or root == os.sep:
        return text
    inside = re.compile(
        re.escape(root.rstrip(os.sep)) + r"(?:" + re.escape(os.sep) + r"|(?![\w-]|\.\w))"
    )
    return inside.sub(lambda found: "" if found.group().endswith(os.sep) else ".", text)


def from_error(exc: BaseException, root: str | None = None) -> Response:
    """The problem a typed error (or an HttpProblem) is; paths under ``root`` shown relative to
    it."""
    if isinstance(exc, HttpProblem):
        return problem(exc.status, exc.code, exc.detail, headers=exc.headers)
    if isinstance(exc, BodyTooLarge):
        return problem(413, "BODY_TOO_LARGE", str(exc))
    if isinstance(exc, CorpusConflict):
        return problem(409, "CONFLICT", str(exc))
    if isinstance(exc, PtahError):
        status = (
            422
            if isinstance(exc, InputError)
            else 503
            if isinstance(exc, OperationalError)
            else 500
        )
        code = getattr(exc, "code", None) or type(exc).__name__
        problems = [
            {
                name: unrooted(value, root) if isinstance(value, str) else value
                for name, value in item.as_dict().items()
            }
            for item in exc.problems
        ] or None
        return problem(status, code, unrooted(str(exc), root), problems=problems)
    return problem(500, "INTERNAL", "internal error; the server's log says where.")


async def bounded_body(request: Request, limit: int) -> bytes:
    """The request body, or BodyTooLarge once it passes ``limit`` bytes (read no further)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge(
            f"the request body is {int(declared):,} bytes, more than the limit of {limit:,}."
        )
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(f"the request body is more than the limit of {limit:,} bytes.")
        chunks.append(chunk)
    return b"".join(chunks)


async def json_body(request: Request, limit: int) -> object:
    """The request body as JSON (422 when it is not UTF-8 JSON; numbers as Python reads them, no
    NaN)."""
    data = await bounded_body(request, limit)

    def refuse(constant: str):
        raise ValueError(f"{constant} is not a JSON number")

    try:
        return json.loads(data.decode("utf-8"), parse_constant=refuse)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise InputError(f"the body is not JSON: {str(exc)[:120]}") from None
