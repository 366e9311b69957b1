"""Reading a BEIR-format directory, and writing what an import makes of it.

A BEIR directory (Thakur et al., 2021; the layout ``beir.datasets.data_loader`` reads) holds::

    corpus.jsonl      one JSON object a line: {"_id", "title", "text", ...}
    queries.jsonl     one JSON object a line: {"_id", "text", ...}
    qrels/SPLIT.tsv   a header "query-id<TAB>corpus-id<TAB>score", then one judgement a line

Only regular files are read, within :data:`MAX_CORPUS_BYTES` (``corpus.jsonl``),
:data:`MAX_SIDE_FILE_BYTES` (the others) and :data:`MAX_LINE_BYTES` a line; past one, or for a
FIFO or device, an :class:`InputError` names the file and the limit. Reading is strict where
BEIR's loader is silent: a malformed line, a missing ``_id`` or ``text``, a duplicate id, a qrels
line without three tab-separated fields or with a score that is not a whole number is an
:class:`InputError` reading ``FILE:LINE: field: what is wrong``. Ids are taken as written (a JSON
number as its decimal text); a missing or null ``title`` reads ``""`` and is counted. Lines end at
``\\n``, a ``\\r`` before it being part of the ending (BEIR's qrels are CRLF).

Writing: the source table (SQLite, streamed into a temporary file the caller renames into place)
and corpus YAML that :mod:`ptah.adapters.corpus_yaml` reads back to the same corpus.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from ptah.adapters.files import open_lines, refused
from ptah.adapters.yaml_nodes import grade_text, quoted
from ptah.core.corpus import Corpus

QRELS_HEADER = ("query-id", "corpus-id", "score")
# Limits: a BEIR file is read only if it is a regular file, and never past these.
MAX_CORPUS_BYTES = 32 * 1024**3  # corpus.jsonl; the largest BEIR corpora are a few GB
MAX_SIDE_FILE_BYTES = 1024**3  # queries.jsonl and a qrels file, which are held in memory
MAX_LINE_BYTES = 16 * 1024**2  # one line (one document, query or judgement) of any of them
PROGRESS_EVERY_LINES = 2_000

ReadProgress = Callable[[str, int, int], None]
"""Called as ``progress(file_name, bytes_read, file_bytes)`` while a file is read, and once at its
end."""


@dataclass(frozen=True)
class BeirDocument:
    """One corpus document. ``document`` is the text embedded: ``(title + " " + text).strip()``."""

    id: str
    title: str
    text: str
    title_missing: bool
    line: int

    @property
    def document(self) -> str:
        # The convention MTEB used for its published BEIR numbers (``corpus_to_str``).
        return (self.title + " " + self.text).strip()


@dataclass(frozen=True)
class Judgement:
    """One qrels line: query id, document id and score, exactly as written."""

    query_id: str
    doc_id: str
    score: int
    line: int


# -- reading -----------------------------------------------------------------------


def _lines(
    path: Path, progress: ReadProgress | None, limit: int, what: str
) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of each non-blank line, decoded as UTF-8, line ending removed;
    ``limit`` bytes at most."""
    name = str(path)
    done = 0
    with open_lines(path, limit=limit, line_limit=MAX_LINE_BYTES, what=what) as (total, lines):
        for number, raw in lines:
            done += len(raw)
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise refused(
                    f"byte 0x{raw[exc.start]:02x} is not UTF-8; BEIR files are UTF-8",
                    path=name,
                    line=number,
                ) from None
            if number == 1 and text.startswith("\ufeff"):
                text = text[1:]
            text = text[:-1] if text.endswith("\n") else text
            text = text[:-1] if text.endswith("\r") else text
            if progress is not None and number % PROGRESS_EVERY_LINES == 0:
                progress(path.name, done, total)
            if text.strip():
                yield number, text
    if progress is not None:
        progress(path.name, done, total)


def _json_objects(
    path: Path, progress: ReadProgress | None, limit: int, what: str
) -> Iterator[tuple[int, dict]]:
    name = str(path)
    for number, text in _lines(path, progress, limit, what):
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise refused(
                f"not valid JSON: {exc.msg} (column {exc.colno})", path=name, line=number
            ) from None
        except RecursionError:
            raise refused(
                "not accepted: the JSON is nested too deeply", path=name, line=number
            ) from None
        if not isinstance(value, dict):
            raise refused(
                f"each line must be a JSON object, not {_kind(value)}", path=name, line=number
            )
        yield number, value


_KINDS = {
    type(None): "null",
    bool: "a boolean",
    int: "a number",
    float: "a number",
    list: "a list",
    dict: "an object",
}


def _kind(value: object) -> str:
    return _KINDS.get(type(value), "text")  # json.loads makes these types exactly, and str


def _identifier(value: object, *, path: str, line: int) -> str:
    """An ``_id`` as text: a JSON string as written, a JSON integer as its decimal text."""
    if value is None:
        raise refused("missing; every line needs an id", path=path, line=line, field="_id")
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        raise refused(
            f"must be text or a whole number, not {_kind(value)}", path=path, line=line, field="_id"
        )
    if value == "":
        raise refused("is empty; every line needs an id", path=path, line=line, field="_id")
    return _unicode(value, path=path, line=line, field="_id")


def _unicode(value: str, *, path: str, line: int, field: str) -> str:
    """``value`` if it is Unicode text; an unpaired surrogate escape (``\\ud800``) is refused."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise refused(
            f"holds the unpaired surrogate escape \\u{ord(value[exc.start]):04x}, which is not Unicode text",
            path=path,
            line=line,
            field=field,
        ) from None
    return value


def _text_field(item: dict, field: str, *, path: str, line: int) -> str | None:
    """The text of ``field``; None when missing or null; refuses anything but text."""
    value = item.get(field)
    if value is None:
        return None
    if not isinstance(value, str):
        raise refused(f"must be text, not {_kind(value)}", path=path, line=line, field=field)
    return _unicode(value, path=path, line=line, field=field)


def _id_and_text(item: dict, what: str, *, path: str, line: int) -> tuple[str, str]:
    """The ``_id`` and ``text`` every line of ``what`` (a document, a query) needs."""
    identifier = _identifier(item.get("_id"), path=path, line=line)
    text = _text_field(item, "text", path=path, line=line)
    if text is None:
        raise refused(f"missing; every {what} needs its text", path=path, line=line, field="text")
    return identifier, text


def read_corpus(path: Path, progress: ReadProgress | None = None) -> Iterator[BeirDocument]:
    """The documents of ``corpus.jsonl`` in file order. Duplicate ids are the caller's to find."""
    name = str(path)
    for number, item in _json_objects(path, progress, MAX_CORPUS_BYTES, "BEIR corpus"):
        doc_id, text = _id_and_text(item, "document", path=name, line=number)
        title = _text_field(item, "title", path=name, line=number)
        yield BeirDocument(doc_id, title or "", text, title is None, number)


def read_queries(path: Path, progress: ReadProgress | None = None) -> dict[str, tuple[str, int]]:
    """``queries.jsonl`` as ``{query id: (text, line)}`` in file order; a duplicate id is
    refused."""
    name = str(path)
    queries: dict[str, tuple[str, int]] = {}
    for number, item in _json_objects(path, progress, MAX_SIDE_FILE_BYTES, "BEIR queries"):
        query_id, text = _id_and_text(item, "query", path=name, line=number)
        if query_id in queries:
            raise refused(
                f'"{query_id}" is used twice (lines {queries[query_id][1]} and {number}); query ids must be unique',
                path=name,
                line=number,
                field="_id",
            )
        queries[query_id] = (text, number)
    return queries


def read_qrels(path: Path, progress: ReadProgress | None = None) -> list[Judgement]:
    """The judgements of a qrels TSV file, after its header line."""
    name = str(path)
    judgements: list[Judgement] = []
    header_seen = False
    for number, text in _lines(path, progress, MAX_SIDE_FILE_BYTES, "BEIR qrels"):
        fields = text.split("\t")
        if not header_seen:
            if tuple(field.strip() for field in fields) != QRELS_HEADER:
                raise refused(
                    "the first line must be the header query-id<TAB>corpus-id<TAB>score, not "
                    + json.dumps(text),
                    path=name,
                    line=number,
                )
            header_seen = True
            continue
        if len(fields) != 3:
            raise refused(
                f"a judgement is query-id<TAB>corpus-id<TAB>score; this line has {len(fields)} tab-separated field(s)",
                path=name,
                line=number,
            )
        query_id, doc_id, score = fields
        for field, value in (("query-id", query_id), ("corpus-id", doc_id)):
            if value == "":
                raise refused("is empty", path=name, line=number, field=field)
        try:
            grade = int(score.strip())
        except ValueError:
            raise refused(
                f"{json.dumps(score)} is not a whole number", path=name, line=number, field="score"
            ) from None
        judgements.append(Judgement(query_id, doc_id, grade, number))
    return judgements


# -- writing -----------------------------------------------------------------------


def write_documents(path: Path, documents: Iterable[BeirDocument]) -> None:
    """Write ``documents`` into the source table ``documents(id, title, text, document)`` of the new
    SQLite file ``path`` (``sqlite3`` streams them from the iterable; an exception it raises leaves
    the file to be discarded).

    ``document`` holds ``(title + " " + text).strip()``, computed here with
    Python's ``str.strip`` (SQL's ``trim`` strips spaces only), so the
    specification can embed it with the template ``{document}``.
    """
    with closing(sqlite3.connect(str(path), isolation_level=None)) as db:
        # A fresh file that is renamed into place only when complete needs no journal.
        db.execute("PRAGMA journal_mode=OFF")
        db.execute("PRAGMA synchronous=OFF")
        db.execute(
            "CREATE TABLE documents (id TEXT PRIMARY KEY, title TEXT NOT NULL, text TEXT NOT NULL, "
            "document TEXT NOT NULL)"
        )
        db.execute("BEGIN")
        db.executemany(
            "INSERT INTO documents (id, title, text, document) VALUES (?, ?, ?, ?)",
            ((d.id, d.title, d.text, d.document) for d in documents),
        )
        db.execute("COMMIT")


# -- corpus YAML -----------------------------------------------------------------------


def corpus_yaml_text(corpus: Corpus, header: str = "") -> str:
    """``corpus`` as corpus format 1 YAML (``header`` lines become comments).

    Every id, query and key is double-quoted, so keys keep their spelling
    (``"0042"`` stays text); a case's ``k`` is written only where it differs
    from ``default_k``.
    """
    lines = [f"# {line}".rstrip() for line in header.splitlines()]
    lines.append("version: 1")
    if corpus.name is not None:
        lines.append(f"name: {quoted(corpus.name)}")
    if corpus.description is not None:
        lines.append(f"description: {quoted(corpus.description)}")
    if corpus.default_k is not None:
        lines.append(f"default_k: {corpus.default_k}")
    lines.append("cases:")
    for case in corpus.cases:
        lines.append(f"  - id: {quoted(case.id)}")
        lines.append(f"    query: {quoted(case.query)}")
        if case.k != corpus.default_k:
            lines.append(f"    k: {case.k}")
        if case.required:
            lines.append("    required: [" + ", ".join(quoted(key) for key in case.required) + "]")
        if case.relevant:
            lines.append("    relevant:")
            lines.extend(
                f"      {quoted(key)}: {grade_text(grade)}" for key, grade in case.relevant.items()
            )
        if case.forbidden:
            lines.append(
                "    forbidden: [" + ", ".join(quoted(key) for key in case.forbidden) + "]"
            )
        if case.tags:
            lines.append(
                "    tags: [" + ", ".join(quoted(tag) for tag in case.tags) + "]"
            )  # "null" stays text
    return "\n".join(lines) + "\n"
