"""Composing YAML text into located nodes with libyaml, PyYAML's C parser.

The nodes are PyYAML's (:mod:`yaml.nodes`): each keeps its tag, its value
(a scalar's text exactly as written), its style and its line. Nothing is
constructed, so an alias is still visible as a second reference to one node
and a duplicated key as a second pair.

Types are ptah's own, decided from a plain scalar's text: the implicit
types of YAML 1.2's core schema as ruamel.yaml spells them (``true``,
``0o17``, ``1_000``, ``.inf``, ``~``…; ``yes`` and ``on`` are text), or
YAML 1.1's after a ``%YAML 1.1`` directive -- never PyYAML's own 1.1
resolver. A quoted or block scalar is text. NEL, LS and PS written raw
are text too, as YAML 1.2 says, not the line breaks libyaml takes them for.

A document libyaml refuses raises :class:`NotAccepted` with a message and
its line. Where PyYAML has no libyaml, its pure-Python parser composes the
same nodes, more slowly.
"""

from __future__ import annotations

import gc
import re
from collections.abc import Iterator
from contextlib import contextmanager

import yaml
from yaml.composer import Composer
from yaml.error import MarkedYAMLError, YAMLError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.parser import Parser
from yaml.reader import Reader, ReaderError
from yaml.scanner import Scanner

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
