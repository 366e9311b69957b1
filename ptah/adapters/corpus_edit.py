"""Editing a corpus file in place: grades, required and forbidden keys added to a case, new cases
appended.

An edit is made with ruamel.yaml's round-trip mode, and only the lines it adds or changes are
spliced into the file's own text (:func:`_spliced`); every other byte stays as written (line
endings, a BOM, ``---`` and ``...``, tabs, spacing, comments):

* a new key is written double-quoted (``"42"``), a grade as a whole number when it is one, else
  the shortest float that reads back;
* a key joins its collection in that collection's style (a flow list gains ``, c`` on its line); a
  field a case lacks goes at the end of the case, in the style the corpus uses for it elsewhere; a
  new case at the end of ``cases``; comments after a collection's last entry stay after it;
* the layout is read from the file; where it mixes layouts the splice cannot follow, the file is
  written as ruamel.yaml writes it, and the count of changed lines says so.

Nothing is written until :meth:`CorpusDocument.save`: the text must be a valid corpus
(:func:`ptah.adapters.corpus_yaml.parse_corpus`) and the file hold the bytes it held when read
(else exit 3); it is then replaced atomically (a link to it stays a link).
"""

from __future__ import annotations

import difflib
import io
import os
import re
import warnings
from collections.abc import Iterable
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.resolver import VersionedResolver
from ruamel.yaml.scalarstring import DoubleQuotedScalarString
from ruamel.yaml.tokens import CommentToken

from ptah.adapters.corpus_yaml import parse_corpus
from ptah.adapters.files import read_bounded, write_text_atomically
from ptah.adapters.yaml_nodes import (
    grade_text as _grade,
)  # the corpus and the record spell a grade alike
from ptah.core.corpus import FORBIDDEN, MAX_FILE_BYTES, REQUIRED, Case, Corpus
from ptah.core.errors import CorpusError, InputError, OperationalError

_END = re.compile(r"\.\.\.(?:[ \t]|$)")  # a document end marker: "..." at the start of a line
_KEY_LINE = re.compile(r"( *)(?:-\s+)?[^\s#-][^#]*:\s*(?:#.*)?$")


class CorpusDocument:
    """One corpus file, read and validated, held as a round-trip document to edit (see the module
    docs)."""

    def __init__(self, path: str | os.PathLike, data: bytes):
        self.path = str(path)
        self.original = data
        self.corpus = parse_corpus(data, name=self.path)
        text = data.decode("utf-8")
        self._yaml = _round_trip_yaml(text)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self._data = self._yaml.load(text.removeprefix("\ufeff"))
        self._text = text
        self._before: str | None = (
            None  # ruamel.yaml's writing of the text, taken before the first edit
        )
        self._changed = False
        self.lines_added = self.lines_changed = 0  # by the last save

    @classmethod
    def open(cls, path: str | os.PathLike) -> CorpusDocument:
        """Read the corpus at ``path`` (a regular file, bounded); :class:`CorpusError` (exit 2) when
        invalid."""
        return cls(path, read_bounded(path, limit=MAX_FILE_BYTES, what="corpus", hint="split it"))

    def judge(self, case_id: str, key: str, grade: float, mark: str | None = None) -> float:
        """Record ``grade`` for ``key`` in case ``case_id``; ``mark`` REQUIRED or FORBIDDEN adds it
        there too.

        Grades above 0 go into ``relevant`` (created from the required keys,
        graded 1, when the case had none; a required key graded 1 in a case
        without ``relevant`` is only listed); a grade of 0 changes nothing
        here (it lives in the judgement record). Returns the grade the key
        holds now. Raises :class:`InputError` (exit 2) for an unknown case
        and for a judgement the corpus contradicts (a forbidden key graded
        relevant, a relevant key graded 0 or made forbidden).
        """
        self._before = self._before or _dumped(self._yaml, self._data)
        case = (
            self.corpus.case(case_id)
            if case_id in self.case_ids
            else _unknown_case(case_id, self.path)
        )
        node = self._case_node(case_id)
        _check_contradiction(case, key, grade, mark)
        if mark == FORBIDDEN:
            self._add_to_list(node, FORBIDDEN, key)
            return 0.0
        if mark == REQUIRED:
            self._add_to_list(node, REQUIRED, key)
            if "relevant" not in node and grade == 1:
                return 1.0
        if grade > 0:
            if "relevant" not in node:
                grades = {DoubleQuotedScalarString(k): 1.0 for k in case.required}
                self._append(node, self._new_collection("relevant", grades, node), "relevant")
            self._set_in_map(node["relevant"], key, grade)
        return float(grade)

    def append_case(
        self,
        case_id: str,
        query: str,
        k: int | None,
        judgements: Iterable[tuple[str, float, str | None]],
    ) -> None:
        """Append the case ``case_id`` with its judgements ``(key, grade, mark)``; exit 2 for a
        taken id or for a case no judgement makes relevant (it would be no case)."""
        self._before = self._before or _dumped(self._yaml, self._data)
        if case_id in self.case_ids:
            raise InputError(
                f'{self.path}: case "{case_id}" exists already; choose another id or judge it with '
                "`ptah corpus judge`"
            )
        judgements = list(judgements)
        required = [key for key, _, mark in judgements if mark == REQUIRED]
        forbidden = [key for key, _, mark in judgements if mark == FORBIDDEN]
        graded = {key: grade for key, grade, mark in judgements if grade > 0}
        if not graded:
            raise InputError(
                f'case "{case_id}": no row was judged relevant (1-3) or required (r); the case was not added'
            )
        node = CommentedMap(
            [("id", DoubleQuotedScalarString(case_id)), ("query", DoubleQuotedScalarString(query))]
        )
        if k is not None:
            node["k"] = str(k)
        if required:
            node[REQUIRED] = self._new_collection(
                REQUIRED, [DoubleQuotedScalarString(key) for key in required]
            )
        if not required or any(grade != 1 or key not in required for key, grade in graded.items()):
            node["relevant"] = self._new_collection(
                "relevant", {DoubleQuotedScalarString(key): g for key, g in graded.items()}
            )
        if forbidden:
            node[FORBIDDEN] = self._new_collection(
                FORBIDDEN, [DoubleQuotedScalarString(key) for key in forbidden]
            )
        self._append(self._data["cases"], node)

    @property
    def case_ids(self) -> frozenset[str]:
        return frozenset(case.id for case in self.corpus.cases)

    def save(self) -> Corpus:
        """Validate and write the edited corpus (see the module docs); returns it as loaded from the
        new text."""
        if not self._changed:
            return self.corpus
        after = _dumped(self._yaml, self._data)
        corpus = parse_corpus(after, name=self.path)
        text, added, changed = _spliced(self._text, self._before or after, after)
        if (
            text.replace("\r\n", "\n") != after
        ):  # lines the file spells its own way: the text must read as the edit
            try:
                kept = parse_corpus(text, name=self.path)
            except CorpusError:
                kept = None
            if kept == corpus:
                corpus = kept  # its cases' lines are the text's
            # a layout the file mixes, that ruamel.yaml writes one way: its writing of the whole
            else:
                text, added, changed = _spliced(self._text, self._text, after)
        if read_bounded(self.path, limit=MAX_FILE_BYTES, what="corpus") != self.original:
            raise OperationalError(
                f"{self.path}: the corpus changed while it was being edited; nothing was written: "
                "run the command again"
            )
        write_text_atomically(self.path, text)
        self.lines_added, self.lines_changed = added, changed
        self.original, self.corpus, self._text, self._before = (
            text.encode("utf-8"),
            corpus,
            text,
            after,
        )
        self._changed = False
        return corpus

    # -- the nodes ---------------------------------------------------------------

    def _case_node(self, case_id: str) -> CommentedMap:
        for node in self._data["cases"]:
            if str(node.get("id")) == case_id:
                return node
        return _unknown_case(case_id, self.path)

    def _add_to_list(self, case: CommentedMap, field: str, key: str) -> None:
        if field not in case:
            self._append(
                case, self._new_collection(field, [DoubleQuotedScalarString(key)], case), field
            )
        elif key not in [str(item) for item in case[field]]:
            self._append(case[field], DoubleQuotedScalarString(key))

    def _set_in_map(self, mapping: CommentedMap, key: str, grade: float) -> None:
        for existing in mapping:
            if str(existing) == key:
                if str(mapping[existing]) != _grade(grade):
                    mapping[existing] = _grade(grade)
                    self._changed = True
                return
        self._append(mapping, _grade(grade), DoubleQuotedScalarString(key))

    def _append(self, node, value, key=None) -> None:
        """Add ``value`` to the end of the list ``node``, or as ``key`` of the mapping ``node``,
        before the comment lines that follow its last entry."""
        trailing = _take_trailing(node)
        if key is None:
            node.append(value)
        else:
            node[key] = value
        _give_trailing(node, trailing)
        self._changed = True

    def _new_collection(self, field: str, items, case: CommentedMap | None = None):
        """A new list or mapping for ``field``, in the style the corpus uses for it (module
        docs)."""
        collection = (
            CommentedMap((key, _grade(grade)) for key, grade in items.items())
            if isinstance(items, dict)
            else CommentedSeq(items)
        )
        flow = (case is not None and case.fa.flow_style()) or next(
            (
                bool(other[field].fa.flow_style())
                for other in self._data["cases"]
                if isinstance(other, CommentedMap)
                and isinstance(other.get(field), (CommentedMap, CommentedSeq))
            ),
            False,
        )
        collection.fa.set_flow_style() if flow else collection.fa.set_block_style()
        return collection


def _unknown_case(case_id: str, path: str):
    raise InputError(
        f'{path}: no case "{case_id}" in the corpus; a judgement names a case of the corpus '
        "(`ptah corpus add` appends a new one)"
    )


def _check_contradiction(case: Case, key: str, grade: float, mark: str | None) -> None:
    where = f'case "{case.id}": key {key!r}'
    if mark == FORBIDDEN:
        if grade:
            raise InputError(f"{where}: a forbidden key is not relevant: give it grade 0")
        if key in case.required or key in case.relevant:
            raise InputError(
                f"{where}: the corpus expects this key (required or relevant); a key cannot be both "
                "expected and forbidden: edit the corpus to change its mind"
            )
        return
    if key in case.forbidden and (grade > 0 or mark == REQUIRED):
        raise InputError(
            f"{where}: the corpus forbids this key; remove it from forbidden before grading it relevant"
        )
    if mark == REQUIRED and grade <= 0:
        raise InputError(f"{where}: a required key is relevant: give it a grade above 0")
    if grade == 0 and (key in case.relevant or key in case.required):
        raise InputError(
            f"{where}: the corpus grades this key {case.relevant.get(key, 1):g}; edit the corpus "
            "to remove it before judging it not relevant"
        )


# -- comments that follow a collection's last entry -------------------------------


def _last_slots(node) -> list[tuple[CommentedMap | CommentedSeq, Any, int]]:
    """``(collection, key or index, slot)`` from ``node`` down through each last entry of a block
    collection."""
    slots = []
    while isinstance(node, (CommentedMap, CommentedSeq)) and len(node) and not node.fa.flow_style():
        if isinstance(node, CommentedMap):
            key, slot = next(reversed(node)), 2
        else:
            key, slot = len(node) - 1, 0
        slots.append((node, key, slot))
        node = node[key]
    return slots


def _take_trailing(node) -> CommentToken | None:
    """Detach the comment lines after ``node``'s last entry (its end-of-line comment stays): ruamel
    keeps them on the deepest last entry, and an entry appended after it must come before them."""
    for collection, key, slot in _last_slots(node):
        entry = collection.ca.items.get(key)
        token = entry[slot] if entry and len(entry) > slot else None
        if not isinstance(token, CommentToken):
            continue
        value = token.value
        cut = value.find("\n")
        if cut == -1 or cut == len(value) - 1:
            continue
        token.value = value[: cut + 1]
        return CommentToken("\n" + value[cut + 1 :], token.start_mark, token.end_mark)
    return None


def _give_trailing(node, token: CommentToken | None) -> None:
    """Attach detached comment lines after ``node``'s (new) last entry."""
    if token is None:
        return
    slots = _last_slots(node)
    if not slots:
        return
    collection, key, slot = slots[-1]
    entry = collection.ca.items.setdefault(
        key, [None, None, None, None] if slot == 2 else [None, None]
    )
    entry[slot] = token


# -- layout ---------------------------------------------------------------------


class _TextResolver(VersionedResolver):
    """Every plain scalar is text, exactly as written: ptah's own reading (``0042`` is the key
    "0042", and ``1e3`` and ``1000`` are two keys), which the round trip must keep -- its number and
    boolean forms would merge keys YAML reads as equal and rewrite how numbers are spelt. A plain
    text is written back plain."""

    @property
    def versioned_resolver(self) -> dict:
        return {}


def _round_trip_yaml(text: str) -> YAML:
    yaml = YAML(typ="rt")
    yaml.Resolver = _TextResolver
    yaml.preserve_quotes = True
    yaml.width = 1 << 30  # never fold a long line
    mapping, sequence, offset = _layout(text)
    yaml.indent(mapping=mapping, sequence=sequence, offset=offset)
    return yaml


def _layout(text: str) -> tuple[int, int, int]:
    """(mapping indent, sequence indent, dash offset) as ruamel counts them, from the first block of
    each kind."""
    mapping = sequence = offset = None
    lines = [
        line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")
    ]
    for parent, child in zip(lines, lines[1:]):
        if not _KEY_LINE.match(parent):
            continue
        depth = len(parent) - len(parent.lstrip(" "))
        if parent.lstrip(" ").startswith("- "):
            depth += len(parent.lstrip(" ")) - len(parent.lstrip(" ")[1:].lstrip(" "))
        inner = len(child) - len(child.lstrip(" "))
        if inner <= depth and not (inner == depth and child.lstrip(" ").startswith("- ")):
            continue
        body = child.lstrip(" ")
        if body.startswith("- ") and sequence is None:
            offset = inner - depth
            sequence = offset + len(body) - len(body[1:].lstrip(" "))
        elif not body.startswith("- ") and mapping is None:
            mapping = inner - depth
        if mapping is not None and sequence is not None:
            break
    mapping = mapping or 2
    return mapping, sequence if sequence is not None else mapping, offset or 0


def _spliced(original: str, before: str, after: str) -> tuple[str, int, int]:
    """``original`` with only the lines ``after`` adds to or changes in ``before`` (ruamel.yaml's
    writing of ``original`` unedited) put in their place, in the file's line ending; and ``(added,
    changed)``, the lines inserted and the lines of ``original`` rewritten or dropped. Every other
    line stays byte for byte."""
    lines = list(io.StringIO(original, newline=""))  # each with its own ending: LF, CRLF or CR
    cut = next((n for n, line in enumerate(lines) if _END.match(line)), len(lines))
    lines, tail = (
        lines[:cut],
        lines[cut:],
    )  # the end marker and what follows it, which ruamel.yaml leaves out
    keys, old, new = (
        [line.rstrip("\r\n") for line in io.StringIO(text, newline="")]
        for text in ("".join(lines), before, after)
    )
    ending = next((line[len(key) :] for line, key in zip(lines, keys) if line != key), "\n")
    anchor = [run for _, *run in difflib.SequenceMatcher(None, keys, old).get_opcodes()]

    def place(p: int, end: bool = False) -> tuple[int, int]:
        """``(line of original, line of before)`` where the line ``p`` of ``before`` starts; inside
        a run that ruamel.yaml wrote in another number of lines, the start of the run (with ``end``,
        its end)."""
        a1, a2, b1, b2 = next(block for block in anchor if block[2] <= p <= block[3])
        if a2 - a1 == b2 - b1:
            return a1 + p - b1, p
        return (a2, b2) if p == b2 or (end and p > b1) else (a1, b1)

    edits: list[
        tuple[int, int, int, int]
    ] = []  # (start, stop, j1, j2): lines start:stop of original become new[j1:j2]
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new).get_opcodes():
        if tag != "equal":
            (start, b1), (stop, b2) = place(i1), place(i2, end=True)
            j1, j2 = j1 - (i1 - b1), j2 + (b2 - i2)  # the run it falls in, all of it
            if edits and start < edits[-1][1]:  # in the run the last edit took in: one edit
                start, _, j1, _ = edits.pop()
            edits.append((start, stop, j1, j2))
    out, at, added, changed = [], 0, 0, 0
    for start, stop, j1, j2 in edits:
        out += lines[at:start]
        if out and not out[-1].endswith(
            ("\n", "\r")
        ):  # the file's last line, without a line ending
            out[-1] += ending
        out += [line + ending for line in new[j1:j2]]
        at, added, changed = stop, added + max(0, j2 - j1 - stop + start), changed + stop - start
    return "".join(out + lines[at:] + tail), added, changed


def _dumped(yaml: YAML, data) -> str:
    out = io.StringIO()
    yaml.dump(data, out)
    return out.getvalue()
