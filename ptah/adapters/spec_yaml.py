"""Finding and loading the specification, ``ptah.yaml`` (format: docs/specification.md).

The file is read as located nodes (:mod:`ptah.adapters.yaml_nodes`), so every problem is reported
as ``FILE:LINE: field: what is wrong and how to fix it``, all at once, sorted by line. Generations
are read by :mod:`ptah.adapters.spec_generations`, variants and judges by
:mod:`ptah.adapters.spec_variants`. ``${NAME}`` is expanded in ``source.database`` and ``store``
(``store.url``) only, an unset one being an error naming it; other ``$`` are kept as written.

``source.database`` is ``sqlite:///FILE`` (relative to the specification's folder),
``sqlite:////ABSOLUTE/FILE`` or a ``postgresql://`` (``postgres://``) URL; ``store`` is one of
those URLs, ``{url: …, schema: …}``, or a file path (relative, ``~/…`` or absolute). Refused,
exit 2:

* a file path that looks like a libpq ``key=value`` string (it would become a file name holding
  the password), has a ``user:password@`` part, names a scheme ptah does not open, or holds a
  control character; a store path may hold no ``=`` at all, a source path one that cannot start a
  pair (``exports/date=2024-01-01.db``);
* the store in the source database, where ptah promises only to read: :func:`same_database`
  decides from the values as the specification is read, :func:`refuse_store_in_source` asks the
  servers before the store is opened. A store in a schema of its own may share the source's
  PostgreSQL database, outside the source table's schema.

A refused value is quoted as written (``${VAR}`` unexpanded), passwords redacted. Which kind a
value is comes from the registries alone (:func:`~ptah.adapters.sources.base.source_kind`,
:func:`~ptah.adapters.stores.registry.store_kind`): a value a package's store kind claims is that
kind's to check.
"""

from __future__ import annotations

import difflib
import getpass
import os
import re
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import parse_qsl, unquote

from ptah.adapters.sources.base import SQLITE_PREFIX, postgres_module, source_kind
from ptah.adapters.sources.rows import filter_problem
from ptah.adapters.spec_fields import _VARIABLE
from ptah.adapters.spec_generations import GenerationFields
from ptah.adapters.spec_variants import JudgeFields, VariantFields
from ptah.adapters.stores import registry as stores
from ptah.adapters.stores.pgvector_location import (
    schema_of,
    schema_problem,
    system_schema_problem,
    with_schema,
)
from ptah.adapters.stores.registry import DEFAULT as SQLITE_STORE
from ptah.adapters.stores.registry import store_kind
from ptah.adapters.yaml_nodes import (
    Field,
    MappingNode,
    Node,
    ScalarNode,
    SequenceNode,
    describe,
    integer,
    is_null,
    line_of,
    read_document,
)
from ptah.core.errors import Problem, SourceUnavailable, SpecError, StoreUnavailable
from ptah.core.spec import (
    DEFAULT_STATEMENT_TIMEOUT_S,
    SourceSpec,
    Spec,
    redact_url,
    sqlite_database_path,
)

SPEC_FILE_NAME = "ptah.yaml"
SPEC_ENV = "PTAH_SPEC"
SPEC_VERSION = 1
DEFAULT_STORE = ".ptah/ptah.db"
MAX_SPEC_BYTES = 1024 * 1024
TOP_FIELDS = ("version", "source", "store", "active", "generations", "variants", "judges")
STORE_FIELDS = ("url", "schema")
SOURCE_FIELDS = (
    "database",
    "table",
    "key_fields",
    "text",
    "filter",
    "statement_timeout_s",
    "judge_text",
)
MAX_STATEMENT_TIMEOUT_S = 86_400
_REFERENCE = re.compile(r"\$\{([^}]*)(\}?)")


def find_spec(
    explicit: str | None = None,
    env: Mapping[str, str] = os.environ,
    cwd: str | os.PathLike | None = None,
) -> Path:
    """The specification file to use: ``--spec PATH``, else ``$PTAH_SPEC``, else the nearest
    ``ptah.yaml`` upward.

    A relative PATH is taken from ``cwd``; a folder means its ``ptah.yaml``.
    Raises :class:`SpecError` naming where it looked.
    """
    base = Path(cwd) if cwd is not None else Path.cwd()
    if explicit:
        return _named_file(explicit, base, "--spec")
    if env.get(SPEC_ENV):
        return _named_file(env[SPEC_ENV], base, SPEC_ENV)
    here = base.absolute()
    for folder in (here, *here.parents):
        candidate = folder / SPEC_FILE_NAME
        if candidate.exists():
            return candidate
    raise SpecError(
        f"no {SPEC_FILE_NAME} in {here} or any folder above it; "
        f"pass --spec PATH or set {SPEC_ENV} to the specification file"
    )


def _named_file(value: str, base: Path, origin: str) -> Path:
    path = (base / Path(value).expanduser()).absolute()
    if path.is_dir():
        path = path / SPEC_FILE_NAME
    if not path.exists():  # anything but a regular file is refused when read, by what it is
        raise SpecError(f"{path}: no such specification file (named by {origin} {value})")
    return path


def load_spec(path: str | Path, *, env: Mapping[str, str] | None = None) -> Spec:
    """Read and validate a specification. Raises :class:`SpecError` listing every problem."""
    path = Path(path).absolute()
    root_node = read_document(path, max_bytes=MAX_SPEC_BYTES, what="specification", error=SpecError)
    reader = _SpecReader(str(path), str(path.parent), os.environ if env is None else env)
    spec = reader.read(root_node)
    if reader.problems or spec is None:
        raise SpecError(sorted(reader.problems, key=lambda p: p.line or 0))
    return spec


class _SpecReader(GenerationFields, VariantFields, JudgeFields):
    """Collects every problem while building a :class:`Spec`; ``read`` returns ``None`` on any."""

    def read(self, node: Node) -> Spec | None:
        if not isinstance(node, MappingNode):
            self.add(
                f"a specification is a YAML mapping (version, source, generations…), not {describe(node)}",
                line=line_of(node),
                field=None,
            )
            return None
        top = self.fields(node, TOP_FIELDS, "", "the specification")
        self.version(top.get("version"), line_of(node))
        source = self.source(top.get("source"), line_of(node))
        store = self.store(top.get("store"))
        if (
            source is not None
            and store
            and same_database(source.database, store, self.root, self.env)
        ):
            at = line_of(top["store"].value) if "store" in top else line_of(top["source"].key)
            self.add(SAME_DATABASE, line=at, field="store")
        generations = self.generations(top.get("generations"), line_of(node))
        active = self.active(top.get("active"))
        variants = self.variants(top.get("variants"))
        judges = self.judges(top.get("judges"))
        if self.problems or source is None or generations is None:
            return None
        return Spec(self.name, self.root, source, store, active, generations, variants, judges)

    def version(self, field: Field | None, line: int) -> None:
        if field is None:
            self.add(
                f"missing; write version: {SPEC_VERSION} at the top", line=line, field="version"
            )
        elif integer(field.value) != SPEC_VERSION:
            self.add(
                f"{describe(field.value)} is not a supported version; write version: {SPEC_VERSION}",
                line=line_of(field.value),
                field="version",
            )

    def source(self, field: Field | None, line: int) -> SourceSpec | None:
        if field is None:
            self.add(
                "missing; declare source: with database, table, key_fields and text",
                line=line,
                field="source",
            )
            return None
        if not isinstance(field.value, MappingNode):
            self.add(
                f"must be a mapping (database, table, key_fields, text), not {describe(field.value)}",
                line=line_of(field.value),
                field="source",
            )
            return None
        at = line_of(field.key)
        fields = self.fields(field.value, SOURCE_FIELDS, "source.", "source")
        database = self.text(
            fields, "database", "source.", at, hint="write e.g. database: sqlite:///support.db"
        )
        if database is not None:
            database = self.database(database, line_of(fields["database"].value))
        table = self.text(
            fields, "table", "source.", at, hint="name the table (or view) whose rows are embedded"
        )
        key_fields = self.key_fields(fields.get("key_fields"), at)
        text = self.template(fields.get("text"), "source.text", at, required=True)
        filter_ = self.text(
            fields, "filter", "source.", at, required=False, hint="remove it to embed every row"
        )
        if filter_ is not None and (problem := filter_problem(filter_)):
            self.add(problem, line=line_of(fields["filter"].value), field="source.filter")
            return None
        timeout = self.positive(
            fields.get("statement_timeout_s"),
            "source.statement_timeout_s",
            MAX_STATEMENT_TIMEOUT_S,
            DEFAULT_STATEMENT_TIMEOUT_S,
        )
        judge_text = self.template(
            fields.get("judge_text"), "source.judge_text", at, required=False
        )
        if database is None or table is None or key_fields is None or text is None:
            return None
        return SourceSpec(database, table, key_fields, text, filter_, timeout, judge_text)

    def database(self, value: str, line: int) -> str | None:
        expanded = self.expand(value, line, "source.database")
        problem = database_problem(value, expanded) if expanded is not None else None
        if problem:
            self.add(problem, line=line, field="source.database")
        return None if problem else expanded

    def key_fields(self, field: Field | None, at: int) -> tuple[str, ...] | None:
        where = "source.key_fields"
        if field is None:
            self.add(
                "missing; list the column(s) that identify a row, e.g. key_fields: [id]",
                line=at,
                field=where,
            )
            return None
        node = field.value
        if not isinstance(node, SequenceNode) or not node.value:
            shown = describe(node) if not isinstance(node, SequenceNode) else "an empty list"
            self.add(
                f"must be a non-empty list of column names such as [id], not {shown}",
                line=line_of(node),
                field=where,
            )
            return None
        names: list[str] = []
        ok = True
        for item in node.value:
            text = item.value if isinstance(item, ScalarNode) and not is_null(item) else None
            if not text or not str(text).strip():
                self.add(
                    f"each key field is a column name, not {describe(item)}",
                    line=line_of(item),
                    field=where,
                )
                ok = False
            elif str(text) in names:
                self.add(
                    f'"{text}" is listed twice; list each key column once',
                    line=line_of(item),
                    field=where,
                )
                ok = False
            else:
                names.append(str(text))
        return tuple(names) if ok else None

    def store(self, field: Field | None) -> str:
        if field is None:
            return os.path.normpath(os.path.join(self.root, DEFAULT_STORE))
        if isinstance(field.value, MappingNode):
            return self.store_in_schema(field.value)
        value, line = self.scalar(field, "store"), line_of(field.value)
        return self.store_url(value, line, "store")

    def store_url(self, value: str | None, line: int, where: str) -> str:
        if value == "":
            self.add(
                f"is empty; remove it for the default {DEFAULT_STORE} or name a file",
                line=line,
                field=where,
            )
        expanded = self.expand(value, line, where) if value else None
        problem = store_problem(value, expanded) if value and expanded else None
        if problem:
            self.add(problem, line=line, field=where)
        return store_location(expanded, self.root) if expanded and not problem else ""

    def store_in_schema(self, node: MappingNode) -> str:
        """``store: {url: postgresql://…, schema: ptah}``: the URL with the schema in its
        options."""
        fields = self.fields(node, STORE_FIELDS, "store.", "store")
        hint = "write store: {url: postgresql://…, schema: ptah}"
        if "url" not in fields or "schema" not in fields:
            for name in sorted({"url", "schema"} - set(fields)):
                self.add(f"missing; {hint}", line=line_of(node), field=f"store.{name}")
            return ""
        url_line, schema_line = line_of(fields["url"].value), line_of(fields["schema"].value)
        url = self.store_url(self.scalar(fields["url"], "store.url"), url_line, "store.url")
        schema = self.scalar(fields["schema"], "store.schema")
        if not url or schema is None:
            return ""
        if stores.store_kind(url) != PGVECTOR_STORE:
            self.add(
                f"a schema is for a PostgreSQL store; {hint}, or write store: FILE",
                line=url_line,
                field="store.url",
            )
            return ""
        if problem := schema_problem(url, schema):
            self.add(problem, line=schema_line, field="store.schema")
            return ""
        return with_schema(url, schema)

    def active(self, field: Field | None) -> str | None:
        if field is None or is_null(field.value):
            return self.declared[0] if len(self.declared) == 1 else None
        value = self.scalar(field, "active")
        if value is None or not self.declared or value in self.declared:
            return value
        close = difflib.get_close_matches(value, self.declared, n=1, cutoff=0.6)
        hint = f'did you mean "{close[0]}"?' if close else "declared: " + ", ".join(self.declared)
        self.add(
            f"names no generation declared under generations:; {hint}",
            line=line_of(field.value),
            field="active",
        )
        return None

    def expand(self, value: str, line: int, where: str) -> str | None:
        """``${NAME}`` replaced by the environment's value; reports unset or malformed variables."""
        failures: list[str] = []

        def substitute(match: re.Match) -> str:
            name = match.group(1)
            if not match.group(2):
                failures.append("a ${ is not closed; write ${NAME}")
            elif not _VARIABLE.match(name):
                failures.append(
                    f'"${{{name}}}" is not an environment variable name; write ${{NAME}}'
                )
            elif name not in self.env:
                failures.append(
                    f"the environment variable {name} is not set; set it before running ptah, "
                    "or write the value"
                )
            else:
                return self.env[name]
            return ""

        expanded = _REFERENCE.sub(substitute, value)
        for message in failures:
            self.add(message, line=line, field=where)
        return None if failures else expanded


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
