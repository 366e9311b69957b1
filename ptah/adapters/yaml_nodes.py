"""Reading ptah's YAML files (corpora, the specification, the judgement record) as located nodes,
for loaders that report ``FILE:LINE``.

libyaml (PyYAML's C parser; its pure-Python one where libyaml is missing) composes PyYAML's
nodes (:mod:`yaml.nodes`) and nothing is constructed, so every value keeps its line, a scalar the
text written (an unquoted key ``0042`` stays ``"0042"``), an alias is refused and a duplicate key
is found. A plain scalar's type is ptah's own: YAML 1.2's core schema as ruamel.yaml spells it
(``true``, ``0o17``, ``1_000``, ``.inf``, ``~``; ``yes`` and ``on`` are text), or YAML 1.1's after a
``%YAML 1.1`` directive. A quoted or block scalar is text, and so are NEL, LS and PS written raw.
A document libyaml refuses raises :class:`NotAccepted` with a message and its line.
"""

from __future__ import annotations

import difflib
import gc
import math
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import yaml
from yaml.composer import Composer
from yaml.error import MarkedYAMLError, YAMLError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.parser import Parser
from yaml.reader import Reader, ReaderError
from yaml.scanner import Scanner

from ptah.adapters.files import read_bounded
from ptah.core.errors import CorpusError, InputError, Problem
from ptah.core.visible import abbreviated

TAG_STR = "tag:yaml.org,2002:str"
TAG_INT = "tag:yaml.org,2002:int"
TAG_FLOAT = "tag:yaml.org,2002:float"
TAG_BOOL = "tag:yaml.org,2002:bool"
TAG_NULL = "tag:yaml.org,2002:null"
TAG_SEQ = "tag:yaml.org,2002:seq"
TAG_MAP = "tag:yaml.org,2002:map"

ALIASES_REFUSED = "YAML anchors and aliases (&name / *name) are not accepted; write the value out"
SURROGATE_REFUSED = (
    "holds a lone surrogate escape (\\uD800-\\uDFFF), which is not text; write the character itself"
)

# The implicit types, in the order tried, with the first characters each can
# start with: ruamel.yaml's resolver table (ruamel/yaml/resolver.py), whose
# rules ptah's files were read by before, verbatim.
_IMPLICIT = [
    ({"1.2"}, TAG_BOOL, r"true|True|TRUE|false|False|FALSE", "tTfF"),
    (
        {"1.1"},
        TAG_BOOL,
        r"y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF",
        "yYnNtTfFoO",
    ),
    (
        {"1.2"},
        TAG_FLOAT,
        r"[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)"
        r"|[-+]?\.[0-9_]+(?:[eE][-+][0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)"
        r"|\.(?:nan|NaN|NAN)",
        "-+0123456789.",
    ),
    (
        {"1.1"},
        TAG_FLOAT,
        r"[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)"
        r"|\.[0-9_]+(?:[eE][-+][0-9]+)?"
        r"|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*"
        r"|[-+]?\.(?:inf|Inf|INF)"
        r"|\.(?:nan|NaN|NAN)",
        "-+0123456789.",
    ),
    (
        {"1.2"},
        TAG_INT,
        r"[-+]?0b[0-1_]+|[-+]?0o?[0-7_]+|[-+]?[0-9_]+|[-+]?0x[0-9a-fA-F_]+",
        "-+0123456789",
    ),
    (
        {"1.1"},
        TAG_INT,
        r"[-+]?0b[0-1_]+|[-+]?0?[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+"
        r"|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+",
        "-+0123456789",
    ),
    ({"1.2", "1.1"}, "tag:yaml.org,2002:merge", r"<<", "<"),
    ({"1.2", "1.1"}, TAG_NULL, r"~|null|Null|NULL|", ("~", "n", "N", "")),
    (
        {"1.2", "1.1"},
        "tag:yaml.org,2002:timestamp",
        r"[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]"
        r"|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?"
        r"(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?",
        "0123456789",
    ),
    ({"1.2", "1.1"}, "tag:yaml.org,2002:value", r"=", "="),
]


def _by_first_character(version: str) -> dict[str, tuple[tuple[str, re.Pattern], ...]]:
    """The rules of ``version``, by the first character of the text they can match ("" for the empty
    text)."""
    rules: dict[str, list[tuple[str, re.Pattern]]] = {}
    for versions, tag, pattern, firsts in _IMPLICIT:
        if version in versions:
            for first in firsts:
                rules.setdefault(first, []).append((tag, re.compile(f"(?:{pattern})\\Z")))
    return {first: tuple(found) for first, found in rules.items()}


_RULES = {"1.2": _by_first_character("1.2"), "1.1": _by_first_character("1.1")}
# `%YAML 1.1` before the first document, after any comments, blank lines and other directives
_YAML_1_1 = re.compile(rb"(?:[ \t]*(?:#[^\n]*)?\n|%[^\n]*\n)*%YAML[ \t]+1\.1(?![0-9])")


class _Types:
    """The resolver the composer asks for each node's tag: ptah's rules (module docs), no path
    resolvers."""

    rules = _RULES["1.2"]

    def resolve(self, kind: type, value: str | None, implicit: tuple[bool, bool]) -> str:
        if kind is ScalarNode:
            if implicit[0] and value is not None:
                for tag, pattern in self.rules.get(value[:1], ()):
                    if pattern.match(value):
                        return tag
            return TAG_STR
        return TAG_SEQ if kind is SequenceNode else TAG_MAP

    def descend_resolver(self, parent: Node | None, index: object) -> None:
        pass

    def ascend_resolver(self) -> None:
        pass


class _PurePythonComposer(Reader, Scanner, Parser, Composer, _Types):
    """PyYAML's parser in Python: the same nodes, where PyYAML was built without libyaml."""

    def __init__(self, data: bytes) -> None:
        Reader.__init__(self, data.decode("utf-8"))
        Scanner.__init__(self)
        Parser.__init__(self)
        Composer.__init__(self)


try:
    from yaml._yaml import CParser
except ImportError:  # PyYAML built without libyaml
    _Composer: type = _PurePythonComposer
else:

    class _LibyamlComposer(CParser, _Types):
        """libyaml's parser with PyYAML's composer in C (Cython), which asks :class:`_Types` for
        each tag."""

    _Composer = _LibyamlComposer


class NotAccepted(Exception):
    """A document that is not YAML ptah reads: ``message`` for a ``FILE:LINE: message``, at ``line``
    (1-based)."""

    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


def compose_documents(data: bytes) -> list[Node]:
    """The root node of each document of ``data`` (UTF-8 without a byte order mark, as the caller
    checked: libyaml reads the bytes themselves, no copy); raises :class:`NotAccepted` for text that
    is no YAML."""
    stand_ins = _stand_ins(data)
    for character, stand_in in stand_ins.items():
        data = data.replace(character.encode("utf-8"), stand_in.encode("utf-8"))
    composer = _Composer(data)
    if _YAML_1_1.match(data):
        composer.rules = _RULES["1.1"]
    try:
        with collector_paused():
            documents = []
            while composer.check_node():
                documents.append(composer.get_node())
    except RecursionError:  # the pure-Python composer; libyaml stops at a depth of 1,000
        raise NotAccepted("not accepted: the YAML is nested too deeply", None) from None
    except YAMLError as exc:
        raise _refusal(exc, data, isinstance(composer, _PurePythonComposer)) from None
    finally:
        composer.dispose()
    if stand_ins:
        _put_back(
            {ord(stand_in): character for character, stand_in in stand_ins.items()}, documents
        )
    return documents


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cycle collector off for the ``with`` block, and back on after unless it was off
    before.

    For composing a document and reading its nodes: the tree is kept whole until it is read, and
    each pass of the collector walks all of it again, which was most of the time of reading a large
    judgement record (benchmarks/RESULTS.md). Nodes are freed by their reference counts; a cycle
    (a recursive alias, refused, or other code's) is collected once the block ends.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


# YAML 1.1 (libyaml, PyYAML) reads these as line breaks; YAML 1.2, as ptah reads its files, as text.
_TEXT_NOT_BREAKS = ("\x85", "\u2028", "\u2029")


def _stand_ins(data: bytes) -> dict[str, str]:
    """For each of NEL, LS and PS that ``data`` holds, a character of the private use area it holds
    neither written nor as an escape, to stand in for it while libyaml reads: so that it stays text,
    and every line after it keeps its number."""
    found = [character for character in _TEXT_NOT_BREAKS if character.encode("utf-8") in data]
    if not found:
        return {}
    lower = data.lower()
    free = (
        chr(code)
        for code in range(0xE000, 0xF900)
        if chr(code).encode("utf-8") not in data and f"{code:x}".encode() not in lower
    )
    return {character: next(free) for character in found}


def _put_back(table: dict[int, str], documents: list[Node]) -> None:
    """Each stand-in in a scalar of ``documents`` turned back into the character it stood for."""
    stack = list(documents)
    while stack:
        node = stack.pop()
        if isinstance(node, ScalarNode):
            node.value = node.value.translate(table)
        elif isinstance(node, MappingNode):
            stack.extend(part for pair in node.value for part in pair)
        elif isinstance(node, SequenceNode):
            stack.extend(node.value)


_SURROGATE = re.compile("[\ud800-\udfff]")
_ESCAPE = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8}))")


def _refusal(exc: YAMLError, data: bytes, in_python: bool) -> NotAccepted:
    """What a parser's error means to the author, at its line."""
    if isinstance(
        exc, ReaderError
    ):  # its position counts bytes in libyaml, characters in PyYAML's reader
        before = (
            data.decode("utf-8")[: exc.position].encode("utf-8")
            if in_python
            else data[: exc.position]
        )
        return NotAccepted(
            f"not valid YAML: the character U+{exc.character:04X} is not allowed in YAML; write it as "
            "an escape (\\u...) in a double-quoted text, or remove it",
            before.count(b"\n") + 1,
        )
    if not isinstance(exc, MarkedYAMLError):
        return NotAccepted(f"not valid YAML: {exc}", None)
    mark = exc.problem_mark or exc.context_mark
    line = mark.line + 1 if mark is not None else None
    reason = exc.problem or exc.context or "malformed"
    if "undefined alias" in reason or "duplicate anchor" in (exc.context or ""):
        return NotAccepted(ALIASES_REFUSED, line)
    if reason.startswith("exceeded max"):  # libyaml stops at a depth of 1,000
        return NotAccepted("not accepted: the YAML is nested too deeply", line)
    if (
        reason == "found invalid Unicode character escape code"
        and mark is not None
        and _surrogate_at(data, mark)
    ):
        return NotAccepted(SURROGATE_REFUSED, line)
    return NotAccepted(f"not valid YAML: {reason}", line)


def _surrogate_at(data: bytes, mark: yaml.Mark) -> bool:
    """Whether the escape libyaml stopped at (the last one starting at or before ``mark``) is a lone
    surrogate."""
    line = data.split(b"\n", mark.line + 1)[mark.line].decode("utf-8")
    escapes = [found for found in _ESCAPE.finditer(line) if found.start() <= mark.column]
    if not escapes:
        return False
    code = int(escapes[-1].group(1) or escapes[-1].group(2), 16)
    return 0xD800 <= code <= 0xDFFF


def refuse_repeats(root: Node, data: bytes) -> None:
    """Raise :class:`NotAccepted` where a node occurs twice (the composer makes an alias a second
    reference to its anchor's node) or a scalar holds a lone surrogate (a double-quoted
    ``"\\ud800"``: no Unicode text, which could be neither digested nor embedded).

    Only a ``*`` writes an alias, and libyaml refuses a surrogate escape itself, so without a ``*``
    in ``data`` there is nothing to walk.
    """
    if b"*" not in data and _Composer is not _PurePythonComposer:
        return
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, ScalarNode) and _SURROGATE.search(node.value):
            raise NotAccepted(SURROGATE_REFUSED, node.start_mark.line + 1)
        if id(node) in seen:
            raise NotAccepted(ALIASES_REFUSED, node.start_mark.line + 1)
        seen.add(id(node))
        if isinstance(node, MappingNode):
            for key, value in node.value:
                stack.append(key)
                stack.append(value)
        elif isinstance(node, SequenceNode):
            stack.extend(node.value)


_DECIMAL_INT = re.compile(r"[-+]?[0-9]+\Z")


def tag_of(node: Node) -> str:
    return node.tag


def line_of(node: Node) -> int:
    return node.start_mark.line + 1


def shown(node: Node, limit: int = 40) -> str:
    """A scalar's text for a message, cut to ``limit`` characters (and its length said) so a huge
    value cannot flood it."""
    return abbreviated(str(node.value), limit)


def describe(node: Node) -> str:
    """How a node reads in an error message: ``a list``, ``the boolean true``…"""
    if isinstance(node, MappingNode):
        return "a mapping"
    if isinstance(node, SequenceNode):
        return "a list"
    tag = tag_of(node)
    kinds = {
        TAG_NULL: "nothing (null)",
        TAG_BOOL: f"the boolean {node.value}",
        TAG_INT: f"the number {shown(node)}",
        TAG_FLOAT: f"the number {shown(node)}",
    }
    return kinds.get(tag, f'the text "{shown(node)}"')


Refusal = Callable[[list[Problem]], Exception]  # the error a loader raises: CorpusError, SpecError


def read_document(path: Path, *, max_bytes: int, what: str, error: Refusal = CorpusError) -> Node:
    """Read ``path`` as exactly one YAML document and return its root node.

    Raises ``error([problem])`` for a missing, oversized, empty, non-UTF-8
    or malformed file, for several documents, and for any alias; only a
    regular file is read, and never more than ``max_bytes + 1`` bytes of it
    (:func:`ptah.adapters.files.read_bounded`).
    """
    name = str(path)
    try:
        data = read_bounded(path, limit=max_bytes, what=what, hint="split it")
    except InputError as exc:  # missing, a folder, not a regular file, over the limit, unreadable
        raise error([exc.problems[0]]) from None
    return parse_document(data, name=name, max_bytes=max_bytes, what=what, error=error)


def parse_document(
    data: bytes, *, name: str, max_bytes: int, what: str, error: Refusal = CorpusError
) -> Node:
    """Like :func:`read_document`, for bytes already in hand."""
    if len(data) > max_bytes:
        raise error(
            [
                Problem(
                    f"the file is {len(data):,} bytes, more than the {what} limit of {max_bytes:,}; split it",
                    path=name,
                )
            ]
        )
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        blank = not data.decode("utf-8").strip()
    except UnicodeDecodeError as exc:
        line: int | None = data[: exc.start].count(b"\n") + 1
        raise error(
            [
                Problem(
                    f"byte 0x{data[exc.start]:02x} is not UTF-8; save the file as UTF-8",
                    path=name,
                    line=line,
                )
            ]
        ) from None
    if blank:
        raise error([Problem(f"the file is empty; a {what} is a YAML mapping", path=name)])
    try:
        documents = compose_documents(data)
    except NotAccepted as exc:
        raise error([Problem(exc.message, path=name, line=exc.line)]) from None
    documents = [d for d in documents if d is not None]
    if not documents:
        raise error([Problem(f"the file is empty; a {what} is a YAML mapping", path=name)])
    if len(documents) > 1:
        raise error(
            [
                Problem(
                    f"holds {len(documents)} YAML documents; a {what} file holds one",
                    path=name,
                    line=line_of(documents[1]),
                )
            ]
        )
    root = documents[0]
    try:
        refuse_repeats(root, data)
    except NotAccepted as exc:
        raise error([Problem(exc.message, path=name, line=exc.line)]) from None
    return root


@dataclass(frozen=True)
class Size:
    """What a list or mapping must be: a ``kind`` (``shape``, its name in messages) of at most
    ``limit`` items (``over``, the message past it, formatted with the count and the limit) and,
    where ``empty`` says what to do instead, at least one."""

    kind: type[MappingNode] | type[SequenceNode]
    shape: str
    limit: int
    over: str
    empty: str = ""


class ProblemReader:
    """A pass over one composed document that collects every problem (``FILE:LINE: case "ID": field:
    message``) instead of stopping at the first; the corpus and judgement-record readers build on
    it."""

    def __init__(self, path: str):
        self.path = path
        self.problems: list[Problem] = []

    def report(
        self, message: str, *, line: int | None, field: str | None, case: str | None = None
    ) -> None:
        self.problems.append(Problem(message, path=self.path, line=line, case=case, field=field))

    def sized(self, node: Node, size: Size, *, field: str | None, case: str | None = None) -> bool:
        """Whether ``node`` is of the ``size`` asked (see :class:`Size`); otherwise reports ``must
        be {shape}, not …``, ``is empty; {empty}`` or ``over`` formatted with the count and the
        limit."""
        kind, shape, limit, over, empty = size.kind, size.shape, size.limit, size.over, size.empty
        message = (
            f"must be {shape}, not {describe(node)}"
            if not isinstance(node, kind)
            else f"is empty; {empty}"
            if empty and not node.value
            else over.format(len(node.value), limit)
            if len(node.value) > limit
            else None
        )
        if message is not None:
            self.report(message, line=line_of(node), field=field, case=case)
        return message is None

    def top(
        self, root: Node, *, known: tuple[str, ...], what: str, holds: str, format_: str
    ) -> dict[str, Field]:
        """The fields of the document's root, its ``version`` checked to be 1; raises
        :class:`CorpusError` when the root is no mapping (``holds``: the fields it needs,
        ``format_``: the format's name, for messages)."""
        if not isinstance(root, MappingNode):
            self.report(
                f"a {what} is a YAML mapping with {holds}, not {describe(root)}",
                line=line_of(root),
                field=None,
            )
            raise CorpusError(self.problems)
        fields = mapping_fields(root, known=known, report=self.report, where=f"the {what}")
        if "version" not in fields:
            self.report(
                "is missing; write `version: 1` at the top", line=line_of(root), field="version"
            )
        elif integer(node := fields["version"].value) != 1:
            self.report(
                f"must be the number 1 (this ptah reads {format_} 1), not {describe(node)}",
                line=line_of(node),
                field="version",
            )
        return fields


@dataclass
class Field:
    name: str
    key: ScalarNode
    value: Node


def suggestion(name: str, known: tuple[str, ...]) -> str | None:
    """The known field name an unknown ``name`` is most likely a misspelling of, if any."""
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return close[0] if close else None


def suggestions(node: MappingNode, known: tuple[str, ...]) -> set[str]:
    """The known field names the mapping's unknown ones are likely misspellings of (``defualt_k``:
    ``default_k``)."""
    return {
        found
        for key, _ in node.value
        if isinstance(key, ScalarNode)
        and str(key.value) not in known
        and (found := suggestion(str(key.value), known)) is not None
    }


def mapping_fields(
    node: MappingNode,
    *,
    known: tuple[str, ...],
    report: Callable[..., None],
    where: str,
) -> dict[str, Field]:
    """The fields of a mapping, reporting duplicates, non-text names and unknown names.

    ``report(message, line=..., field=...)`` is called for each problem; the
    first occurrence of a duplicated field is kept so later checks can go on.
    """
    fields: dict[str, Field] = {}
    for key, value in node.value:
        if not isinstance(key, ScalarNode) or tag_of(key) == TAG_NULL:
            report(f"a field name must be text, not {describe(key)}", line=line_of(key), field=None)
            continue
        name = str(key.value)
        if name in fields:
            first = line_of(fields[name].key)
            report(
                f"is given twice in {where} (lines {first} and {line_of(key)}); keep one",
                line=line_of(key),
                field=name,
            )
            continue
        if name not in known:
            close = suggestion(name, known)
            hint = (
                f'; did you mean "{close}"?' if close else f"; known fields are {', '.join(known)}"
            )
            report(f"unknown field in {where}{hint}", line=line_of(key), field=name)
            continue
        fields[name] = Field(name, key, value)
    return fields


def integer(node: Node) -> int | None:
    """The value of an unquoted decimal integer scalar, else ``None``."""
    if not isinstance(node, ScalarNode) or tag_of(node) != TAG_INT:
        return None
    text = str(node.value).replace("_", "")
    if not _DECIMAL_INT.match(text):
        return None
    try:
        return int(text)
    except ValueError:  # more digits than Python converts (sys.get_int_max_str_digits)
        return None


def number(node: Node) -> float | None:
    """The value of an unquoted int or float scalar (``.nan``/``.inf`` included), else ``None``."""
    if not isinstance(node, ScalarNode) or tag_of(node) not in (TAG_INT, TAG_FLOAT):
        return None
    text = str(node.value).replace("_", "").lower()
    special = {".nan": math.nan, ".inf": math.inf, "+.inf": math.inf, "-.inf": -math.inf}
    if text in special:
        return special[text]
    try:
        if tag_of(node) == TAG_INT:
            # a decimal is parsed as a float directly: int() refuses more than 4,300 digits
            return float(int(text, 0)) if not _DECIMAL_INT.match(text) else float(text)
        return float(text)
    except OverflowError:  # an integer too large for a double: infinite, which callers refuse
        return -math.inf if text.startswith("-") else math.inf
    except ValueError:
        return None


def integer_like(text: str) -> bool:
    """Whether quoted text reads as a whole number (for a "remove the quotes" hint)."""
    return text.strip().lstrip("+-").isdigit()


def number_like(text: str) -> bool:
    """Whether quoted text reads as a number (for a "remove the quotes" hint)."""
    try:
        float(text)
    except ValueError:
        return False
    return True


def is_null(node: Node) -> bool:
    return isinstance(node, ScalarNode) and tag_of(node) == TAG_NULL


def scalar_text(node: Node) -> str | None:
    """The text of a scalar exactly as written (quoted or not); ``None`` for null or a
    collection."""
    if not isinstance(node, ScalarNode) or tag_of(node) == TAG_NULL:
        return None
    return str(node.value)


# -- writing ----------------------------------------------------------------------


def grade_text(grade: float) -> str:
    """A grade as YAML: ``1`` for a whole number, else the shortest float that reads back the
    same."""
    return str(int(grade)) if float(grade).is_integer() else repr(float(grade))


def quoted(text: str) -> str:
    """``text`` as a YAML double-quoted scalar that reads back as exactly ``text``: ``"`` and ``\\``
    escaped, printable characters as themselves, and everything else -- controls, line and paragraph
    separators, NEL, BOM, non-printable code points -- as a ``\\xXX``, ``\\uXXXX`` or
    ``\\UXXXXXXXX`` escape."""
    out = ['"']
    for char in text:
        code = ord(char)
        if char in '"\\':
            out.append("\\" + char)
        elif char.isprintable():
            out.append(char)
        else:
            out.append(
                f"\\x{code:02x}"
                if code <= 0xFF
                else f"\\u{code:04x}"
                if code <= 0xFFFF
                else f"\\U{code:08x}"
            )
    out.append('"')
    return "".join(out)
