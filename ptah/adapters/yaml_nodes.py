"""Reading YAML files as located nodes, for loaders that report ``FILE:LINE``.

ptah's YAML files (corpora, the specification, the judgement record) are
read at the node level, composed by libyaml
(:mod:`ptah.adapters.yaml_compose`), instead of being constructed into
Python objects, for three reasons:

* every value keeps its line, so an error can name it;
* a scalar keeps the text the author wrote, so an unquoted key ``0042`` stays
  ``"0042"`` instead of silently becoming the integer 42;
* aliases are refused outright (an alias bomb expands to nothing here) and
  duplicate mapping keys are found, which the constructor would hide.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ptah.adapters.files import read_bounded

# the loaders take the node classes and tags from here, with the helpers below
from ptah.adapters.yaml_compose import (
    TAG_BOOL,
    TAG_FLOAT,
    TAG_INT,
    TAG_NULL,
    MappingNode,
    Node,
    NotAccepted,
    ScalarNode,
    SequenceNode,
    compose_documents,
    refuse_repeats,
)
from ptah.core.errors import CorpusError, InputError, Problem
from ptah.core.visible import abbreviated

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
