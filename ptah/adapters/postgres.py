"""Connecting to PostgreSQL (psycopg 3), and turning its failures into ptah's typed errors.

Shared by the PostgreSQL source reader and the pgvector store. Every message
names the database by its redacted URL (:func:`ptah.core.spec.redact_url`)
and has any password the URL holds scrubbed from the server's or libpq's own
text, so no password is ever printed.

psycopg is an optional dependency (ptah's ``postgres`` extra, or ``pip install
'psycopg[binary]>=3.1'``): this module imports it, and only the PostgreSQL adapters import this
module, so a SQLite-only installation never needs it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any, NamedTuple
from urllib.parse import unquote

from ptah.core.errors import OperationalError
from ptah.core.spec import redact_url

try:
    import psycopg
    from psycopg import errors as pg_errors
    from psycopg.conninfo import conninfo_to_dict
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "PostgreSQL support needs psycopg 3: pip install 'psycopg[binary]>=3.1' (the postgres extra of ptah-eval)"
    ) from exc

DEFAULT_CONNECT_TIMEOUT_S = 10


def secrets_of(url: str) -> list[str]:
    """Every spelling of a password ``url`` carries (user:PASSWORD@, ?password=), to scrub from
    messages."""
    found: set[str] = set()
    with suppress(psycopg.Error):
        found.add(str(conninfo_to_dict(url).get("password") or ""))
    # user:PASSWORD@ read by hand too, up to the last @ before the query: a password may hold an
    # unencoded /
    head = url.partition("://")[2].partition("?")[0]
    userinfo = head[: head.rfind("@")] if "@" in head else ""
    by_hand = userinfo.partition(":")[2]
    found.update({by_hand, unquote(by_hand)})
    # ?password=… read by hand too: libpq's own parse fails on exactly the odd values worth hiding
    query = url.partition("?")[2]
    for part in query.split("&"):
        name, _, value = part.partition("=")
        if name.lower() in ("password", "sslpassword"):
            found.update({value, unquote(value), unquote(value.replace("+", " "))})
    return sorted(
        found - {""}, key=len, reverse=True
    )  # no empty text: replacing it would star every gap


def reason(exc: BaseException, url: str) -> str:
    """The server's or libpq's message on one line, with any password of ``url`` replaced by
    ``***``."""
    diagnostic = getattr(exc, "diag", None)
    text = (getattr(diagnostic, "message_primary", None) or str(exc)).strip()
    text = "; ".join(line.strip() for line in text.splitlines() if line.strip())
    for secret in secrets_of(url):
        text = text.replace(secret, "***")
    return text


def connect(
    url: str,
    error: type[OperationalError],
    what: str,
    *,
    autocommit: bool = False,
    application_name: str = "ptah",
) -> psycopg.Connection:
    """Open a connection, or raise ``error`` (exit 3) naming ``what`` and the redacted URL.

    ``connect_timeout`` defaults to 10 seconds unless the URL sets one.
    """
    options: dict = {"autocommit": autocommit, "application_name": application_name}
    try:
        given = conninfo_to_dict(url)
    except psycopg.Error as exc:
        raise error(
            f"{what} {redact_url(url)} is not a valid PostgreSQL URL: {reason(exc, url)}."
        ) from None
    if "connect_timeout" not in given:
        options["connect_timeout"] = DEFAULT_CONNECT_TIMEOUT_S
    try:
        return psycopg.connect(url, **options)
    except psycopg.Error as exc:
        raise error(
            f"cannot connect to the {what} {redact_url(url)}: {reason(exc, url)}."
        ) from None


def describe(exc: BaseException, url: str) -> str:
    """What a failed statement means for the user, with the fix where there is one."""
    text = reason(exc, url)
    if isinstance(exc, pg_errors.InsufficientPrivilege):
        return (
            f"permission denied ({text}); grant the user the privilege, or use a role that has it"
        )
    if isinstance(exc, (pg_errors.AdminShutdown, pg_errors.CannotConnectNow)) or (
        isinstance(exc, psycopg.OperationalError) and not isinstance(exc, pg_errors.QueryCanceled)
    ):
        return f"the connection failed ({text})"
    return text


@contextmanager
def guarded(url: str, error: type[OperationalError], what: str) -> Iterator[None]:
    """Turn any psycopg failure inside the block into ``error`` naming ``what`` and the redacted
    URL."""
    try:
        yield
    except psycopg.Error as exc:
        raise error(f"{what} {redact_url(url)}: {describe(exc, url)}.") from None


class DatabaseIdentity(NamedTuple):
    """Which database a URL reaches, as its server tells: ``(system_identifier, database OID)``;
    with a table asked for, the schema it lives in and its qualified name (None when there is no
    such table)."""

    database: tuple[int, int]
    table_schema: str | None = None
    table: str | None = None


_IDENTITY = """
    SELECT (SELECT system_identifier FROM pg_control_system()),
           (SELECT oid FROM pg_database WHERE datname = current_database()),
           n.nspname, quote_ident(n.nspname) || '.' || quote_ident(c.relname)
    FROM (SELECT coalesce(to_regclass(quote_ident(%s)), to_regclass(quote_ident(%s) || '.' || quote_ident(%s))) AS oid)
         AS found
    LEFT JOIN pg_class c ON c.oid = found.oid LEFT JOIN pg_namespace n ON n.oid = c.relnamespace
"""


def database_identity(
    url: str, error: type[OperationalError], what: str, table: str | None = None
) -> DatabaseIdentity:
    """Ask the server ``url`` reaches which database it is (and where ``table`` lives: the name as
    written, search_path applying, else ``schema.table`` split at the dot), in a read-only
    transaction of a connection of its own; ``error`` (exit 3) when it cannot be asked."""
    schema, dot, name = (table or "").partition(".")
    with connect(url, error, what) as connection, guarded(url, error, what):
        connection.read_only = True
        row: Any = connection.execute(
            _IDENTITY, (table, schema if dot else None, name if dot else None)
        ).fetchone()
    return DatabaseIdentity((int(row[0]), int(row[1])), row[2], row[3])


def client_label() -> str:
    """``pid N on HOST``: how a session names its process for others (``application_name``)."""
    return f"pid {os.getpid()} on {os.uname().nodename}"


def vector_literal(vector) -> str:
    """A float32 vector as pgvector's text input, exact: each value's shortest round-trip
    decimal."""
    import numpy as np

    return (
        "["
        + ",".join(repr(float(value)) for value in np.asarray(vector, dtype=np.float32).reshape(-1))
        + "]"
    )


def plan_uses_index(plan: list, index: str) -> bool:
    """Whether an ``EXPLAIN (FORMAT JSON)`` plan reads through ``index`` anywhere: ``enable_seqscan
    = off`` discourages a scan but does not forbid one, and an exact answer passed off as the
    index's would be the silent fallback ptah never makes."""

    def uses(node: dict) -> bool:
        return node.get("Index Name") == index or any(
            uses(child) for child in node.get("Plans", [])
        )

    return uses(plan[0]["Plan"])
