"""The specification (``ptah.yaml``) as values, and the text templates over columns.

The loader (``ptah.adapters.spec_yaml``) validates the file and builds these
objects; the objects here hold values that already passed validation.

Text templates
--------------
A template is text with ``{column}`` placeholders; ``{{`` and ``}}`` write a
literal brace. Nothing else is recognised: no format specs (``{n:>5}``), no
conversions (``{n!r}``), no attribute or index access (``{a.b}``, ``{a[0]}``),
no spaces around the name. A column's value renders as:

* text -- itself, exactly;
* NULL (``None``) -- the empty string;
* an integer or a float -- ``str(value)`` (``42``, ``1.5``, ``1e+20``);
* bytes (a BLOB) -- refused with :class:`TypeError`: binary data is not text;
* anything else (a driver's date, decimal…) -- ``str(value)``.

Keys
----
A key component is an integer or text. An integer renders as ``str(int)``
(so ``42``, never ``42.0`` or ``0042``); text as itself. Components are joined
with U+001F (:func:`ptah.core.corpus.join_key`) into the key the corpus spells.
"""

from __future__ import annotations

import os.path
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import NamedTuple
from urllib.parse import parse_qsl, urlencode

from ptah.core.errors import UnknownGeneration

DETERMINISTIC_MODEL = "ptah/deterministic"
DEFAULT_BACKEND = "torch"  # a local model's runtime; "onnx" is the other (generations.NAME.backend)
"""The model name that selects the deterministic test embedder."""

DEFAULT_DETERMINISTIC_DIMENSION = 64
DEFAULT_BATCH_SIZE = 64
DEFAULT_SERVICE_TIMEOUT_S = 60  # seconds one request to an embedding service may take in all
DEFAULT_STATEMENT_TIMEOUT_S = 600
REDACTED = "***"

_SECRET_PARAMETERS = {"password", "passwd", "pass", "pwd", "sslpassword", "secret", "token"}
# NAME = VALUE for a secret NAME, as libpq's key=value strings write it: VALUE quoted ('…',
# backslash escapes) or bare up to whitespace (a backslash escapes there too). An unclosed quote
# hides the rest. NAME may end a longer name (DB_PASSWORD=…): hiding too much is safer than showing
# a password.
_SECRET_PAIR = re.compile(
    r"(" + "|".join(sorted(_SECRET_PARAMETERS, key=len, reverse=True)) + r")(\s*=\s*)"
    r"('(?:[^'\\]|\\.)*'?|(?:\\.|[^\s\\])*\\?)",
    re.IGNORECASE | re.DOTALL,
)


def _redact_pairs(text: str) -> str:
    return _SECRET_PAIR.sub(lambda m: m.group(1) + m.group(2) + REDACTED, text)


def redact_url(url: str) -> str:
    """``url`` with any password (``user:PASSWORD@host`` or ``?password=…``) replaced by ``***``.

    The password runs from the first ``:`` after ``scheme://`` to the *last*
    ``@`` before the path's ``/``, so an unencoded ``@``, ``?`` or ``#``
    inside a password is still hidden. An unencoded ``/`` in a password
    cannot be told from the path; when an ``@`` follows a ``:`` anywhere
    before the query, everything up to that ``@`` is taken as the user
    part -- hiding too much is safer than showing a password.

    Text that is not a URL is redacted too, since a user can write anything
    where a URL belongs: every ``password=…`` of a libpq ``key=value``
    string (``host=db password='s e c'`` becomes ``host=db password=***``),
    and ``user:PASSWORD@host`` without a scheme. ``password=…`` inside a
    URL's path is hidden the same way.
    """
    scheme, sep, rest = url.partition("://")
    if not sep:
        text = _redact_pairs(url)
        at = text.rfind("@")
        colon = text.find(":", 0, at) if at > 0 else -1
        return text if colon < 0 else f"{text[: colon + 1]}{REDACTED}{text[at:]}"
    slash = rest.find("/")
    at = (rest if slash < 0 else rest[:slash]).rfind("@")
    if at < 0:
        head = rest.partition("?")[0]
        late = head.rfind("@")
        if late >= 0 and ":" in head[:late]:
            at = late
    prefix, after = "", rest
    if at >= 0:
        user, has_password, _password = rest[:at].partition(":")
        prefix = f"{user}:{REDACTED}@" if has_password else rest[: at + 1]
        after = rest[at + 1 :]
    location, question, query = after.partition("?")
    location = _redact_pairs(location)
    if question:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(name.lower() in _SECRET_PARAMETERS for name, _ in pairs):
            query = urlencode(
                [
                    (name, REDACTED if name.lower() in _SECRET_PARAMETERS else value)
                    for name, value in pairs
                ],
                safe="*",
            )
    return f"{scheme}://{prefix}{location}{question}{query}"


def sqlite_database_path(database: str, root: str) -> str | None:
    """The file a ``sqlite:///…`` URL names, or ``None`` for any other URL.

    ``sqlite:///support.db`` is relative to ``root`` (the specification's
    folder); ``sqlite:////srv/support.db`` is absolute. The path is taken
    as written: no percent-decoding.
    """
    prefix = "sqlite:///"
    if not database.startswith(prefix):
        return None
    return os.path.normpath(
        os.path.join(root, os.path.expanduser(database[len(prefix) :]))
    )  # "/…" ignores root


@dataclass(frozen=True)
class SourceSpec:
    """Where the rows come from and which text of each row is embedded."""

    database: str
    table: str
    key_fields: tuple[str, ...]
    text: str
    filter: str | None = None
    statement_timeout_s: int = (
        DEFAULT_STATEMENT_TIMEOUT_S  # PostgreSQL: each statement of the read transaction
    )
    judge_text: str | None = (
        None  # the template of the text a person judges a row by (default: Spec.judging_template)
    )

    @property
    def redacted_database(self) -> str:
        """The database URL safe to print: any password replaced by ``***``."""
        return redact_url(self.database)


@dataclass(frozen=True)
class ServiceSettings:
    """Where an embedding service is and how to talk to it (``provider:``; the key is read from
    ``api_key_env``).

    ``base_url`` has no credentials, query or fragment; ``api_key_env`` is
    ``None`` for a server that wants no key. ``timeout_s`` bounds one request
    as a whole (connecting, sending, the server's work and the answer).
    """

    provider: str
    base_url: str
    api_key_env: str | None
    max_concurrency: int
    timeout_s: int = DEFAULT_SERVICE_TIMEOUT_S


@dataclass(frozen=True)
class GenerationSettings:
    """One generation's embedding function. ``name`` is for display only.

    ``text`` overrides the source's template for this generation when set.
    ``dimension`` is ``ptah/deterministic``'s dimension (``None`` means its
    default, 64) or, with a ``service``, the ``dimensions`` asked of it
    (``None``: the model's own). ``service`` is set when an embedding service
    (``provider:``) embeds the texts instead of a local model. ``vectors`` is
    set for an *external* generation: the column of ``source.table`` that
    already holds each row's vector; the model then embeds the queries only.
    ``backend`` runs a local model with ``torch`` (the default) or ``onnx``
    (exported once, run by onnxruntime); ``quantize`` (``int8``, ONNX only)
    quantises its weights. Both change the vectors, so both are part of the
    generation's identity.
    """

    name: str
    model: str
    normalize: bool = True
    max_seq_length: int | None = None
    query_prefix: str = ""
    document_prefix: str = ""
    text: str | None = None
    batch_size: int = DEFAULT_BATCH_SIZE
    dimension: int | None = None
    service: ServiceSettings | None = None
    vectors: str | None = None
    backend: str = DEFAULT_BACKEND
    quantize: str | None = None

    def template(self, source: SourceSpec) -> str:
        """The text template this generation embeds: its own, else the source's."""
        return self.text if self.text is not None else source.text


DEFAULT_CANDIDATES = 100
DEFAULT_RERANK_BATCH = 32
RERANK_APIS = (
    "cohere",
    "tei",
)  # the body a rerank service speaks: documents/top_n -> results, or texts -> [{index, score}]


@dataclass(frozen=True)
class RerankSettings:
    """A variant's rerank stage (docs/variants.md): ``kind`` re-scores the (query,
    row text) pairs of the top ``candidates`` rows the variant's channel ranked, and the rows are
    ranked again on those scores.

    ``kind``: ``cross-encoder``, ``bi-encoder``, ``service`` or a plug-in's.
    ``generation``: a bi-encoder's model is this generation's; for every kind
    the row text is rendered by this generation's template (default: the
    variant's generation). ``model``: a cross-encoder's local folder,
    installed model package or cached Hugging Face name; the model a service
    is asked for. ``service``: a service's endpoint (``provider`` is the API
    shape, one of :data:`RERANK_APIS`). ``batch_size``: pairs a model scores
    at once, documents a service is sent at once. ``options``: what a plug-in
    kind reads, as written.
    """

    kind: str
    candidates: int = DEFAULT_CANDIDATES
    generation: str | None = None
    model: str | None = None
    service: ServiceSettings | None = None
    batch_size: int = DEFAULT_RERANK_BATCH
    options: Mapping = field(default_factory=dict)

    def controls(self) -> dict:
        """What the report keeps of it: every setting but the service's key variable."""
        service = (
            None
            if self.service is None
            else {
                "api": self.service.provider,
                "base_url": self.service.base_url,
                "timeout_s": self.service.timeout_s,
            }
        )
        return {
            "kind": self.kind,
            "candidates": self.candidates,
            "generation": self.generation,
            "model": self.model,
            "service": service,
            "batch_size": self.batch_size,
            **({"options": dict(self.options)} if self.options else {}),
        }


@dataclass(frozen=True)
class Variant:
    """A named configuration evaluated side by side with others (``variants:``): the channels it
    fuses (``channel`` is the registered channel they make: ``[lexical, vector]`` is ``hybrid``),
    its generation (None: the active one), an optional rerank stage and its own vector search
    (``search``: exact, index or both; ``ef_search``); ``options``: what a plug-in channel reads
    (it checks them when it measures)."""

    name: str
    channels: tuple[str, ...]
    channel: str
    generation: str | None = None
    rerank: RerankSettings | None = None
    search: str | None = None
    ef_search: int | None = None
    options: Mapping = field(default_factory=dict, compare=False)  # a plug-in channel's settings


DEFAULT_MAX_JUDGE_REQUESTS = 10_000


@dataclass(frozen=True)
class JudgeSettings:
    """A model judge (``judges:``; docs/judges.md): ``kind`` grades (query, judging text)
    pairs.

    ``encoder``: a generation's model (``generation``, as the bi-encoder reranker
    scores) or a cross-encoder (``model``) scores each pair, and ``thresholds``
    (grade -> least score) turn the score into the highest grade whose
    threshold it reaches, else 0. ``chat``: an OpenAI-compatible chat
    completions ``service`` asked for ``model``, one request a pair, at most
    ``max_requests`` an invocation. ``options``: what a plug-in kind reads.
    """

    kind: str
    model: str | None = None
    generation: str | None = None
    thresholds: Mapping[float, float] = field(default_factory=dict)
    service: ServiceSettings | None = None
    max_requests: int = DEFAULT_MAX_JUDGE_REQUESTS
    batch_size: int = DEFAULT_RERANK_BATCH
    options: Mapping = field(default_factory=dict)

    def controls(self) -> dict:
        """What decides its grades, as JSON values (its identity is their digest): every setting but
        the service's key variable, its time-out and the spend cap."""
        return {
            "kind": self.kind,
            "model": self.model,
            "generation": self.generation,
            "thresholds": [[grade, score] for grade, score in sorted(self.thresholds.items())],
            "base_url": None if self.service is None else self.service.base_url,
            **({"options": dict(self.options)} if self.options else {}),
        }


@dataclass(frozen=True)
class Spec:
    """A validated ``ptah.yaml``. ``root`` is the folder holding it.

    ``store`` is an absolute file path (SQLite) or a ``postgresql://`` URL.
    """

    path: str
    root: str
    source: SourceSpec
    store: str
    active: str | None
    generations: dict[str, GenerationSettings] = field(default_factory=dict)
    variants: dict[str, Variant] = field(default_factory=dict)
    judges: dict[str, JudgeSettings] = field(default_factory=dict)

    def judging_template(self) -> str:
        """The template of a row's *judging text* (docs/holes.md, "The judgement record"):
        ``source.judge_text``, else every column that the source's or any generation's template
        uses, each on its line after its name (``title: {title}``), in order of first use. A person
        judges the row, never one generation's rendering of it, so adding or changing a generation
        never changes it."""
        if self.source.judge_text is not None:
            return self.source.judge_text
        templates = [
            self.source.text,
            *(g.text for g in self.generations.values() if g.text is not None),
        ]
        columns = dict.fromkeys(
            column for template in templates for column in template_columns(template)
        )
        return "\n".join(f"{column}: {{{column}}}" for column in columns)

    def generation(self, name: str | None = None) -> GenerationSettings:
        """The generation called ``name``; ``None`` means the active one.

        Raises :class:`UnknownGeneration` (exit 2) naming the declared ones.
        """
        declared = ", ".join(self.generations) or "none"
        if name is None:
            if self.active is None:
                raise UnknownGeneration(
                    f"{self.path}: no generation is active; name one ({declared}) or set active: in the specification"
                )
            name = self.active
        try:
            return self.generations[name]
        except KeyError:
            raise UnknownGeneration(
                f'{self.path}: no generation named "{name}"; the specification declares {declared}'
            ) from None


class SourceRow(NamedTuple):
    """One source row as ptah sees it: its key, its row identity and the text to embed.

    A named tuple rather than a frozen dataclass: sources make one per row,
    and a tuple is several times cheaper to build.
    """

    key: str
    identity: str
    text: str


# -- templates -----------------------------------------------------------------


class TemplateSyntaxError(ValueError):
    """A text template that is not ``{column}`` placeholders and literal text.

    ``offset`` is the 0-based character position of the problem.
    """

    def __init__(self, message: str, offset: int):
        super().__init__(message)
        self.message = message
        self.offset = offset


_NOT_IN_NAME = re.compile(r"[{}:!.\[\]\x00-\x1f\x7f]")


# A literal brace written twice, a placeholder, or a lone brace (an error), tried in that order at
# each brace.
_TOKEN = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")


@lru_cache(maxsize=256)
def parse_template(template: str) -> tuple[tuple[bool, str], ...]:
    """The template as pieces ``(is_column, text_or_column_name)``.

    Raises :class:`TemplateSyntaxError` naming the position and the fix.
    """
    pieces: list[tuple[bool, str]] = []
    literal, at = "", 0
    for token in _TOKEN.finditer(template):
        i, name = token.start(), token[1]
        literal += template[at:i]
        at = token.end()
        if token[0] == "}":
            raise TemplateSyntaxError(
                f"a single }} at character {i + 1}; write }}}} for a literal brace", i
            )
        if token[0] == "{":
            raise TemplateSyntaxError(
                f"the {{ at character {i + 1} is not closed; write {{column}}, or {{{{ for a literal brace",
                i,
            )
        if name is None:
            literal += token[0][0]
            continue
        _check_name(name, i)
        if literal:
            pieces.append((False, literal))
            literal = ""
        pieces.append((True, name))
    literal += template[at:]
    if literal:
        pieces.append((False, literal))
    return tuple(pieces)


def _check_name(name: str, offset: int) -> None:
    shown = "{" + name + "}"
    if not name.strip():
        raise TemplateSyntaxError(
            f"{shown} at character {offset + 1} names no column; write {{column}}", offset
        )
    if name != name.strip():
        raise TemplateSyntaxError(
            f"{shown} at character {offset + 1} has spaces around the column name; write {{{name.strip()}}}",
            offset,
        )
    bad = _NOT_IN_NAME.search(name)
    if bad is not None:
        head = name[: bad.start()] or "column"
        raise TemplateSyntaxError(
            f"{shown} at character {offset + 1}: only plain {{column}} placeholders are supported "
            f"(no format specs, conversions, attribute or index access); write {{{head}}}",
            offset,
        )


def template_columns(template: str) -> tuple[str, ...]:
    """The columns a template names, each once, in order of first use."""
    return tuple(dict.fromkeys(value for is_column, value in parse_template(template) if is_column))


def render_value(value: object, column: str) -> str:
    """How one column value reads inside a template (see module docs)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        raise TypeError(f'column "{column}" holds binary data (a BLOB), not text')
    return str(value)


def renderer(template: str, columns: tuple[str, ...]) -> Callable[[Sequence[object]], str]:
    """A function filling ``template`` from a row's values given in ``columns`` order.

    The same result as :func:`render`, without parsing the template or
    building a mapping per row -- for streaming many rows.
    """
    position = {column: index for index, column in enumerate(columns)}
    pieces = tuple(
        (position[value], value) if is_column else (None, value)
        for is_column, value in parse_template(template)
    )

    def fill(values: Sequence[object]) -> str:
        parts = []
        for index, text in pieces:
            if index is None:
                parts.append(text)
            else:
                value = values[index]
                parts.append(value if type(value) is str else render_value(value, text))
        return "".join(parts)

    return fill


def render(template: str, row: Mapping[str, object]) -> str:
    """The template filled from ``row`` (see module docs for how values read).

    Raises :class:`KeyError` for a column ``row`` lacks and :class:`TypeError`
    for a binary value.
    """
    return "".join(
        render_value(row[value], value) if is_column else value
        for is_column, value in parse_template(template)
    )


def key_component(value: object, column: str) -> str:
    """A key column's value as the corpus spells it: ``str(int)`` or the text itself.

    Raises :class:`TypeError` for anything else (a float, a BLOB, NULL, a boolean).
    """
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if value is None:
        kind = "NULL"
    elif isinstance(value, float):
        kind = f"the real number {value!r}"
    elif isinstance(value, (bytes, bytearray, memoryview)):
        kind = "binary data (a BLOB)"
    else:
        kind = f"a {type(value).__name__} value ({value!r})"
    raise TypeError(f'key column "{column}" holds {kind}; key columns must hold integers or text')
