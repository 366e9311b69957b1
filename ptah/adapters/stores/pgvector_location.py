"""A pgvector store in a schema of its own: how ``store: {url: …, schema: ptah}`` travels as one
URL.

The specification's mapping form becomes the URL with libpq's own
``options=-csearch_path=SCHEMA`` added (:func:`with_schema`), so every
connection anything opens to the store -- the build, a snapshot, the build
lock, an add-on's (the server's records, a distributed build's partition)
-- starts in that schema, and the location stays the one string every store
kind is given. The pgvector store
reads the schema back (:func:`schema_of`) to create it when missing and to put
the ``vector`` extension's own schema on the path after it
(:mod:`ptah.adapters.stores.pgvector_schema`). A URL written with
``?options=-csearch_path%3Dptah`` by hand names the schema the same way.

No psycopg here: the specification reader uses it.
"""

from __future__ import annotations

import re
from urllib.parse import quote, unquote

from ptah.adapters.stores.base import Capabilities

# what a pgvector store can do, known without psycopg
PGVECTOR_CAPABILITIES = Capabilities(lexical_index=True, vector_index=True)

SCHEMA_NAME = re.compile(
    r"[a-z_][a-z0-9_]{0,62}\Z"
)  # a lower-case SQL name: the same quoted or not
SCHEMA_HINT = (
    "a schema is a lower-case SQL name of at most 63 letters a-z, digits and _, such as ptah"
)
_SEARCH_PATH = re.compile(r"(?:^|(?<=\s))-c\s*search_path=([a-z_][a-z0-9_]*)(?=\s|$)")
_ANY_SEARCH_PATH = re.compile(r"search_path")


def _options(url: str) -> str | None:
    """The URL's ``options`` as libpq reads it: percent-decoded, a + kept as it is."""
    for part in url.partition("?")[2].split("&"):
        name, _, value = part.partition("=")
        if unquote(name) == "options":
            return unquote(value)
    return None


def schema_of(url: str) -> str | None:
    """The one schema a ``postgresql://`` URL's ``options`` sets ``search_path`` to, else None (the
    server's default path, or a path of several schemas the user manages)."""
    options = _options(url)
    match = _SEARCH_PATH.search(options) if options else None
    return match.group(1) if match else None


def system_schema_problem(schema: str | None) -> str | None:
    """Why ``schema`` is PostgreSQL's own (``information_schema``, or ``pg_…``: ``pg_catalog``,
    ``pg_toast``, ``pg_temp_3``, a name PostgreSQL reserves), or None: ptah's tables there would sit
    among the server's."""
    if schema is not None and (schema == "information_schema" or schema.startswith("pg_")):
        return f'"{schema}" is a system schema of PostgreSQL; ptah writes only into a schema of its own, such as ptah'
    return None


def schema_problem(url: str, schema: str) -> str | None:
    """Why ``schema`` cannot be added to ``url``, or None."""
    if not SCHEMA_NAME.match(schema):
        return f'"{schema}" is not a schema ptah creates; {SCHEMA_HINT}'
    if problem := system_schema_problem(schema):
        return problem
    if _ANY_SEARCH_PATH.search(_options(url) or ""):
        return "the URL's options set search_path already; name the schema once, in schema: or in the URL"
    return None


def with_schema(url: str, schema: str) -> str:
    """``url`` with ``-csearch_path=SCHEMA`` first in its ``options`` (any other options kept,
    nothing else re-encoded); ``schema`` is one :func:`schema_problem` accepts."""
    base, _, query = url.partition("?")
    parts = [part for part in query.split("&") if part]
    setting = f"-csearch_path={schema}"
    for index, part in enumerate(parts):
        name, _, value = part.partition("=")
        if unquote(name) == "options":
            parts[index] = "options=" + quote(f"{setting} {unquote(value)}".strip(), safe="")
            break
    else:
        parts.append("options=" + quote(setting, safe=""))
    return f"{base}?{'&'.join(parts)}"
