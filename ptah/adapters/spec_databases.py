"""What ``source.database`` and ``store`` may name, checked when the specification is read.

``source.database`` is ``sqlite:///FILE`` (relative to the specification's
folder), ``sqlite:////ABSOLUTE/FILE``, or a ``postgresql://`` (``postgres://``)
URL. ``store`` is one of those URLs, or a file path: relative to the
specification's folder, ``~/…``, or absolute. A file path (a store, or what
follows ``sqlite:///``) is refused, exit 2, when it

* looks like a libpq ``key=value`` connection string (``host=db password=…
  dbname=src``): taken as a path, it would become a file name with the
  password in it. A store path may hold no ``=`` at all (ptah creates the
  store, so choosing a name without one costs nothing); a source path may
  hold one where it cannot start a pair (``exports/date=2024-01-01.db``);
* has a ``user:password@`` part, or names a URL scheme ptah does not open;
* holds a control character.

A refused value is quoted as written in the specification -- ``${VAR}``
unexpanded, so nothing from the environment is echoed -- with every password
redacted (:func:`ptah.core.spec.redact_url`).

The store may not be the source database: ptah writes its own tables into the
store, and promises only to read the source. A store in a schema of its own
(``store: {url: …, schema: ptah}``) may share the source's PostgreSQL
database, in a schema the source table does not live in. The specification
reader refuses what the values alone show (:func:`same_database`: one SQLite
file; one host, port and database name in both URLs and no schema named);
:func:`refuse_store_in_source` then asks the servers before the store is
opened, so a second spelling of one database (``?host=/run/pg/`` and
``?host=/run/pg``, two names of one host) is refused too.

Which kind a value is comes from the registries alone
(:func:`~ptah.adapters.sources.base.source_kind`,
:func:`~ptah.adapters.stores.registry.store_kind`): the checks above are the
SQLite kinds' (file paths) and a ``postgresql://`` URL's; a value a store kind
added by a package claims is that kind's to check when it opens it.
"""

from __future__ import annotations

import getpass
import os
import re
from collections.abc import Mapping
from urllib.parse import parse_qsl, unquote

from ptah.adapters.sources.base import SQLITE_PREFIX, postgres_module, source_kind
from ptah.adapters.stores.pgvector_location import schema_of, system_schema_problem
from ptah.adapters.stores.registry import DEFAULT as SQLITE_STORE
from ptah.adapters.stores.registry import store_kind
from ptah.core.errors import Problem, SourceUnavailable, SpecError, StoreUnavailable
from ptah.core.spec import Spec, redact_url, sqlite_database_path

SQLITE_SOURCE, POSTGRES_SOURCE, PGVECTOR_STORE = "sqlite", "postgresql", "pgvector"
DEFAULT_POSTGRES_PORT = "5432"

_CONNINFO = re.compile(
    r"(?:^|\s)[A-Za-z_]+\s*="
)  # a key=value pair starts the text or follows whitespace
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
SAME_DATABASE = (
    "names the source database itself; ptah writes its own tables into the store and only ever reads the source, "
    "so give the store a database of its own (the default file .ptah/ptah.db, or another PostgreSQL database)"
)
_URL_HINT = (
    "write postgresql://USER@HOST:PORT/DBNAME, the password in PGPASSWORD, ~/.pgpass or ${VAR}"
)


def database_problem(written: str, expanded: str) -> str | None:
    """Why ``source.database`` (as ``written``, and after ``${VAR}`` expansion) is refused; None
    when it is not."""
    shown = f'"{redact_url(written)}"'
    kind = source_kind(expanded)
    if kind is not None and kind != SQLITE_SOURCE:
        return None
    if kind == SQLITE_SOURCE:
        reason = _path_problem(expanded.removeprefix(SQLITE_PREFIX), store=False)
        return f"{shown} {reason}" if reason else None
    if _CONNINFO.search(expanded):
        return f"{shown} is a libpq key=value connection string, and ptah reads URLs: {_URL_HINT}"
    if expanded.startswith("sqlite:"):
        hint = "write sqlite:///FILE (three slashes, then a path relative to this file) or sqlite:////ABSOLUTE/PATH"
    else:
        hint = "write sqlite:///FILE (relative to this file) or postgresql://USER@HOST/DATABASE"
    return f"{shown} is not a database URL ptah reads; {hint}"


def store_problem(written: str, expanded: str) -> str | None:
    """Why ``store`` (as ``written``, and after ``${VAR}`` expansion) is refused; None when it is
    not."""
    shown = f'"{redact_url(written)}"'
    if store_kind(expanded) != SQLITE_STORE:
        return system_schema_problem(
            schema_of(expanded)
        )  # a search_path written in the URL by hand
    path = expanded.removeprefix(SQLITE_PREFIX)
    if "://" in path or path.startswith(
        "sqlite:"
    ):  # another scheme, or sqlite://x.db misspelt: not a file name
        return f"{shown} is not a store ptah opens; write a file path or postgresql://…"
    reason = _path_problem(path, store=True)
    return f"{shown} {reason}" if reason else None


def store_location(expanded: str, root: str) -> str:
    """Where a ``store`` value :func:`store_problem` accepts points: its URL, or its file's absolute
    path."""
    if store_kind(expanded) != SQLITE_STORE:
        return expanded
    return os.path.normpath(
        os.path.join(root, os.path.expanduser(expanded.removeprefix(SQLITE_PREFIX)))
    )


def _path_problem(path: str, *, store: bool) -> str | None:
    if _CONTROL.search(path):
        return "holds a control character, which ptah does not accept in a file name"
    if _CONNINFO.search(path):
        return f"is a libpq key=value connection string, not a file path; {_URL_HINT}"
    if store and "=" in path:
        return f"holds =, which a store path may not (a key=value connection string is no file name); {_URL_HINT}"
    if redact_url(path) != path:
        return f"has a user:password@ part, which a file path cannot have; {_URL_HINT}"
    if "://" in path:
        return "names a URL scheme ptah does not open; write sqlite:///FILE or postgresql://…"
    return None


def same_database(
    database: str, store: str, root: str, env: Mapping[str, str] = os.environ
) -> bool:
    """Whether the store (a resolved file path or a URL) is the source ``database``, as the values
    show.

    SQLite: the same file (one inode, else one resolved path -- symbolic links
    followed). PostgreSQL: the same host, port and database name, as libpq
    would fill them in from the URL, its query and the ``PG*`` environment,
    and no schema named for the store. A quick answer that names the line of
    the specification; :func:`refuse_store_in_source` is the one that decides
    for PostgreSQL.
    """
    pair = (source_kind(database), store_kind(store))
    if pair == (POSTGRES_SOURCE, PGVECTOR_STORE):
        return schema_of(store) is None and _target(database, env) == _target(store, env)
    source = sqlite_database_path(database, root)
    if pair != (SQLITE_SOURCE, SQLITE_STORE) or source is None:
        return False
    try:
        return os.path.samefile(source, store)
    except OSError:  # one of them does not exist (yet)
        return os.path.realpath(source) == os.path.realpath(store)


def _target(url: str, env: Mapping[str, str]) -> tuple[str, str, str]:
    """(host, port, database) a ``postgresql://`` URL connects to."""
    location, _, query = url.partition("://")[2].partition("?")
    netloc, _, path = location.partition("/")
    userinfo, _, hostspec = netloc.rpartition("@")
    params = dict(parse_qsl(query, keep_blank_values=True))
    hosts, ports = [], []
    for part in filter(None, hostspec.split(",")):
        host, _, port = (
            part.rpartition(":") if not part.endswith("]") and ":" in part else (part, "", "")
        )
        hosts.append(unquote(host).strip("[]").lower())
        ports.append(port)
    host = params.get("host") or ",".join(hosts) or env.get("PGHOST", "")
    default_port = env.get("PGPORT", DEFAULT_POSTGRES_PORT)
    port = params.get("port") or ",".join(p or default_port for p in ports) or default_port
    user = (
        params.get("user")
        or unquote(userinfo.partition(":")[0])
        or env.get("PGUSER")
        or getpass.getuser()
    )
    name = params.get("dbname") or unquote(path) or env.get("PGDATABASE") or user
    return host, port, name


def refuse_store_in_source(spec: Spec) -> None:
    """Refuse (:class:`SpecError`, exit 2) a PostgreSQL store in the source's database, as the
    servers tell.

    One database is one ``system_identifier`` (the cluster's, ``pg_control_system()``) and one
    database OID, whatever the URLs spell. There the store must name a schema of its own
    (:func:`same_database`'s sentence otherwise), and not the schema the source table lives in. Each
    side is asked on a connection of its own, in a read-only transaction; one that cannot be reached
    is :class:`SourceUnavailable` or :class:`StoreUnavailable` (exit 3). Other pairs of kinds were
    decided when the specification was read.
    """
    if (source_kind(spec.source.database), store_kind(spec.store)) != (
        POSTGRES_SOURCE,
        PGVECTOR_STORE,
    ):
        return
    postgres = postgres_module("ptah.adapters.postgres")
    source = postgres.database_identity(
        spec.source.database, SourceUnavailable, "source database", spec.source.table
    )
    store = postgres.database_identity(spec.store, StoreUnavailable, "store")
    if source.database != store.database:
        return
    schema = schema_of(spec.store)
    if schema is None:
        raise SpecError([Problem(SAME_DATABASE, path=spec.path, field="store")])
    if schema == source.table_schema:
        raise SpecError(
            [
                Problem(
                    f'the store\'s schema "{schema}" is the one the source table {spec.source.table} lives in '
                    f"({source.table}), and ptah writes only into a schema of its own; name another schema, such as ptah",
                    path=spec.path,
                    field="store",
                )
            ]
        )
