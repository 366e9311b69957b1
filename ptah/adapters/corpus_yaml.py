"""Loading an evaluation corpus (format v1) from YAML into :class:`ptah.core.corpus.Corpus`.

Every problem in a file is collected and raised together as one
:class:`CorpusError`; each reads ``FILE:LINE: case "ID": field: message``.
Nothing else escapes :func:`load_corpus`: a file is either a valid corpus or
a ``CorpusError``.

No text of a corpus may hold a NUL character (``\\0``): PostgreSQL cannot
store one, and every store must accept the same corpora.

Keys keep the author's spelling: an unquoted ``0042`` is the key ``"0042"``,
``1e3`` is ``"1e3"`` and ``true`` is ``"true"`` -- the text written, never a
number or boolean YAML would make of it. A null key (``~``, ``null``, nothing)
is refused.

A case's ``tags`` (a ptah addition; :mod:`ptah.core.corpus`) is a list of
distinct tags, each matching :data:`ptah.core.corpus.TAG_PATTERN`, at most
:data:`ptah.core.corpus.MAX_TAGS_PER_CASE`; like keys, a tag is the text written.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import cast

from ptah.adapters.yaml_nodes import (
    TAG_INT,
    TAG_STR,
    MappingNode,
    Node,
    ProblemReader,
    ScalarNode,
    SequenceNode,
    Size,
    describe,
    integer,
    integer_like,
    is_null,
    line_of,
    mapping_fields,
    number,
    number_like,
    parse_document,
    read_document,
    scalar_text,
    shown,
    suggestions,
    tag_of,
)
from ptah.core.corpus import (
    MAX_CASES,
    MAX_FILE_BYTES,
    MAX_GRADE,
    MAX_ID_CHARS,
    MAX_K,
    MAX_KEY_CHARS,
    MAX_KEYS_PER_CASE,
    MAX_QUERY_CHARS,
    MAX_SLICES,
    MAX_TAG_CHARS,
    MAX_TAGS_PER_CASE,
    TAG_PATTERN,
    Case,
    Corpus,
    shown_key,
)
from ptah.core.errors import CorpusError, Problem
from ptah.core.judged import JudgementRecord

TOP_FIELDS = ("version", "name", "description", "default_k", "cases")
CASE_FIELDS = ("id", "query", "k", "required", "relevant", "forbidden", "tags")
MAX_DISAGREEMENTS_SHOWN = 10  # of a record with its corpus; the rest are counted


def load_corpus(given: str | os.PathLike) -> Corpus:
    """Read and validate the corpus at ``given``, with its judgement record ``NAME.judged.yaml``
    when one lies beside it (:mod:`ptah.core.judged`); raise :class:`CorpusError` listing every
    problem."""
    from ptah.adapters.judgements_yaml import read_record

    path = Path(given)
    root = read_document(path, max_bytes=MAX_FILE_BYTES, what="corpus")
    corpus = _Reader(str(path)).corpus(root)
    record = read_record(path)
    if not len(record):
        return corpus
    _check_agreement(corpus, record, path)
    return corpus.with_judgements(record)


def _check_agreement(corpus: Corpus, record: JudgementRecord, path: Path) -> None:
    """:class:`CorpusError` (exit 2) for each record entry grading a key relevant (grade > 0) that
    its case in the corpus neither grades nor requires. Grades above 0 live in the corpus too, and
    the corpus is the truth of every measure: taken as they are, such entries would make their keys
    judged and not relevant, silently lowering every high bound. An entry for a case the corpus no
    longer has moves no bound and is kept."""
    from ptah.adapters.judgements_yaml import record_path

    named = {case.id: case.relevant.keys() | set(case.required) for case in corpus.cases}
    found = [
        (case_id, key, judgement.grade)
        for case_id, keys in record.cases.items()
        if case_id in named
        for key, judgement in keys.items()
        if judgement.grade > 0 and key not in named[case_id]
    ]
    if not found:
        return
    where = str(record_path(path))
    problems = [
        Problem(
            f'key "{shown_key(key)}" has grade {grade:g} in the record, but the corpus {path} does not '
            "list it as relevant or required; add it to the case's relevant there, or set its grade to "
            "0 here if it is not relevant",
            path=where,
            case=case_id,
        )
        for case_id, key, grade in found[:MAX_DISAGREEMENTS_SHOWN]
    ]
    if len(found) > MAX_DISAGREEMENTS_SHOWN:
        problems.append(
            Problem(
                f"and {len(found) - MAX_DISAGREEMENTS_SHOWN:,} more entries like these", path=where
            )
        )
    raise CorpusError(problems)


def parse_corpus(data: bytes | str, name: str = "<corpus>") -> Corpus:
    """Like :func:`load_corpus` for content in hand (tests, stdin)."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    root = parse_document(data, name=name, max_bytes=MAX_FILE_BYTES, what="corpus")
    return _Reader(name).corpus(root)


class _Reader(ProblemReader):
    """One pass over a composed corpus, collecting problems as it goes."""

    slices: set[
        str
    ]  # the corpus's tags so far (the first over the limit is reported, no later one)
    slices_over: bool

    def corpus(self, root: Node) -> Corpus:
        fields = self.top(
            root,
            known=TOP_FIELDS,
            what="corpus",
            holds="version, default_k and cases",
            format_="corpus format",
        )
        misspelt = suggestions(cast(MappingNode, root), TOP_FIELDS)  # top() refused any other root
        self.default_k_misspelt = "default_k" not in fields and "default_k" in misspelt  # k follows
        self.slices = set()
        self.slices_over = False
        name = self._text_field(fields, "name")
        description = self._text_field(fields, "description")
        default_k = self._default_k(fields)
        cases = self._cases(fields, root, default_k)
        if self.problems:
            raise CorpusError(self.problems)
        return Corpus(
            cases=tuple(cases),
            name=name,
            description=description,
            default_k=default_k,
            path=self.path,
        )

    def _text_field(self, fields: dict, name: str) -> str | None:
        if name not in fields:
            return None
        node = fields[name].value
        if is_null(node):
            return None
        text = scalar_text(node)
        if text is None:
            self.report(f"must be text, not {describe(node)}", line=line_of(node), field=name)
            return None
        return None if self._holds_nul(text, node, field=name, case=None) else text

    def _default_k(self, fields: dict) -> int | None:
        if "default_k" not in fields:
            return None
        node = fields["default_k"].value
        k = self._depth(node, field="default_k", case=None)
        if k == 0:
            self.report(
                "must be at least 1; it is the depth of every case without its own k",
                line=line_of(node),
                field="default_k",
            )
            return None
        return k

    def _depth(self, node: Node, *, field: str, case: str | None) -> int | None:
        """A depth: a whole number 0..MAX_K written unquoted. Reports and returns None otherwise."""
        value = integer(node)
        digits = isinstance(node, ScalarNode) and integer_like(node.value)
        if (
            value is None and digits and tag_of(node) == TAG_INT
        ):  # more digits than Python converts: out of range
            value = -1 if node.value.strip().startswith("-") else MAX_K + 1
        if value is None:
            quoted = digits and tag_of(node) == TAG_STR
            hint = (
                f"remove the quotes: {field}: {shown(node).strip()}"
                if quoted
                else "write a whole number such as 10"
            )
            message = f"must be a whole number, not {describe(node)}; {hint}"
        elif value < 0:
            message = f"must not be negative (got {shown(node)})"
        elif value > MAX_K:
            message = f"{shown(node)} is above the limit of {MAX_K}"
        else:
            return value
        self.report(message, line=line_of(node), field=field, case=case)
        return None

    def _cases(self, fields: dict, root: Node, default_k: int | None) -> list[Case]:
        if "cases" not in fields:
            self.report(
                "is missing; a corpus needs at least one case", line=line_of(root), field="cases"
            )
            return []
        node = fields["cases"].value
        if not self.sized(
            node,
            Size(
                SequenceNode,
                "a list of cases",
                MAX_CASES,
                "holds {:,} cases, more than the limit of {:,}; split the corpus",
                empty="a corpus needs at least one case",
            ),
            field="cases",
        ):
            return []
        cases: list[Case] = []
        first_line: dict[str, int] = {}
        for index, item in enumerate(node.value):
            node.value[index] = (
                None  # each case's nodes go once it is read: the peak is the nodes or the cases
            )
            case_id, case = self._case(item, default_k)
            if case_id is None:
                continue
            if case_id in first_line:
                self.report(
                    f"the id is used twice (lines {first_line[case_id]} and {line_of(item)}); case ids must be unique",
                    line=line_of(item),
                    field="id",
                    case=case_id,
                )
                continue
            first_line[case_id] = line_of(item)
            if case is not None:
                cases.append(case)
        return cases

    def _case(self, node: Node, default_k: int | None) -> tuple[str | None, Case | None]:
        """The case's id (None when it has no usable id) and the case (None when invalid)."""
        if not isinstance(node, MappingNode):
            self.report(
                f"each case must be a mapping with id and query, not {describe(node)}",
                line=line_of(node),
                field="cases",
            )
            return None, None
        before = len(self.problems)
        line = line_of(node)
        case_id = self._case_id(node)

        def report(message: str, *, line: int | None, field: str | None) -> None:
            self.report(message, line=line, field=field, case=case_id)

        fields = mapping_fields(node, known=CASE_FIELDS, report=report, where="a case")
        if case_id is None:
            return None, None
        query = self._query(fields, line, case_id)

        k: int | None = None
        if "k" in fields:
            k = self._depth(fields["k"].value, field="k", case=case_id)
        effective_k = k or default_k
        if (
            effective_k is None
            and not (k is None and "k" in fields)
            and not self.default_k_misspelt
        ):
            report("no depth: give the case a k, or the corpus a default_k", line=line, field="k")

        required = self._key_list(fields, "required", case_id)
        forbidden = self._key_list(fields, "forbidden", case_id)
        relevant = self._relevant(fields, case_id)
        tags = self._tags(fields, case_id)
        if required is None and relevant is None:
            report(
                "declares neither required nor relevant; any answer would satisfy it, so name the keys a good result contains",
                line=line,
                field=None,
            )
        if forbidden:
            clash = sorted(set(forbidden) & (set(required or ()) | set(relevant or {})))
            if clash:
                report(
                    f"key {clash[0]!r} is both forbidden and expected; a key cannot be both",
                    line=line_of(fields["forbidden"].value),
                    field="forbidden",
                )
        if len(self.problems) > before or query is None or effective_k is None:
            return case_id, None
        grades = relevant if relevant is not None else {key: 1.0 for key in required or ()}
        return case_id, Case(
            id=case_id,
            query=query,
            k=effective_k,
            required=tuple(required or ()),
            relevant=grades,
            forbidden=tuple(forbidden or ()),
            line=line,
            tags=tuple(tags),
        )

    def _case_id(self, node: MappingNode) -> str | None:
        for key, value in node.value:
            if isinstance(key, ScalarNode) and key.value == "id":
                return self._text(value, field="id", limit=MAX_ID_CHARS, case=None)
        self.report("a case has no id; give every case a unique id", line=line_of(node), field="id")
        return None

    def _query(self, fields: dict, line: int, case_id: str) -> str | None:
        if "query" not in fields:
            self.report(
                "is missing; a case needs the text to search with",
                line=line,
                field="query",
                case=case_id,
            )
            return None
        return self._text(fields["query"].value, field="query", limit=MAX_QUERY_CHARS, case=case_id)

    def _text(self, node: Node, *, field: str, limit: int, case: str | None) -> str | None:
        """Non-empty text of at most ``limit`` characters and no NUL (an id, a query); reports
        anything else."""
        text = scalar_text(node)
        if text is None or not text.strip():
            self.report(
                f"must be non-empty text, not {describe(node)}",
                line=line_of(node),
                field=field,
                case=case,
            )
            return None
        if len(text) > limit:
            self.report(
                f"is {len(text):,} characters, above the limit of {limit:,}",
                line=line_of(node),
                field=field,
                case=case,
            )
            return None
        return None if self._holds_nul(text, node, field=field, case=case) else text

    def _key(self, node: Node, field: str, case_id: str) -> str | None:
        """A key exactly as written; refuses collections, null and empty or oversized text."""
        text = scalar_text(node)
        if text is None:
            self.report(
                f'a key must be a single text value such as "42", not {describe(node)}',
                line=line_of(node),
                field=field,
                case=case_id,
            )
            return None
        if text == "":
            self.report("a key must not be empty", line=line_of(node), field=field, case=case_id)
            return None
        if len(text) > MAX_KEY_CHARS:
            self.report(
                f"a key of {len(text):,} characters is above the limit of {MAX_KEY_CHARS}",
                line=line_of(node),
                field=field,
                case=case_id,
            )
            return None
        return None if self._holds_nul(text, node, field=field, case=case_id) else text

    def _holds_nul(self, text: str, node: Node, *, field: str, case: str | None) -> bool:
        """Report a NUL character: PostgreSQL text cannot hold one, so no store could keep this
        value."""
        if "\0" in text:
            message = (
                "holds a NUL character (\\x00), which a PostgreSQL store cannot keep; remove it"
            )
            self.report(message, line=line_of(node), field=field, case=case)
        return "\0" in text

    def _key_list(self, fields: dict, name: str, case_id: str) -> list[str] | None:
        if name not in fields:
            return None
        node = fields[name].value
        example = (
            f"[{node.value!r}]" if isinstance(node, ScalarNode) and not is_null(node) else '["42"]'
        )
        if not self.sized(
            node,
            Size(
                SequenceNode,
                f"a list of keys such as {example}",
                MAX_KEYS_PER_CASE,
                "lists {:,} keys, above the limit of {:,}",
                empty="list at least one key or leave the field out",
            ),
            field=name,
            case=case_id,
        ):
            return []
        keys: list[str] = []
        for item in node.value:
            key = self._key(item, name, case_id)
            if key is None:
                continue
            if key in keys:
                self.report(
                    f"key {key!r} is listed twice", line=line_of(item), field=name, case=case_id
                )
                continue
            keys.append(key)
        return keys

    def _tags(self, fields: dict, case_id: str) -> list[str]:
        """The case's tags as written: a list of distinct tags of the documented alphabet (module
        docs)."""
        if "tags" not in fields:
            return []
        node = fields["tags"].value
        if not self.sized(
            node,
            Size(
                SequenceNode,
                "a list of tags such as [billing, de]",
                MAX_TAGS_PER_CASE,
                "lists {} tags, above the limit of {}",
            ),
            field="tags",
            case=case_id,
        ):
            return []
        tags: list[str] = []
        for item in node.value:
            text = scalar_text(item)
            if text is None or not TAG_PATTERN.fullmatch(text):
                what = (
                    describe(item)
                    if text is None or len(text) <= MAX_TAG_CHARS
                    else f"a text of {len(text):,} characters"
                )
                self.report(
                    f"a tag is 1 to {MAX_TAG_CHARS} lowercase letters, digits, '-', '_' or '.', starting with a "
                    f"letter or digit, not {what}",
                    line=line_of(item),
                    field="tags",
                    case=case_id,
                )
            elif text in tags:
                self.report(
                    f"tag {text!r} is listed twice", line=line_of(item), field="tags", case=case_id
                )
            elif text not in self.slices and len(self.slices) == MAX_SLICES:
                if not self.slices_over:
                    self.report(
                        f"tag {text!r} makes {MAX_SLICES + 1:,} tags in the corpus, more than the limit "
                        f"of {MAX_SLICES:,} slices a corpus; use fewer tags",
                        line=line_of(item),
                        field="tags",
                        case=case_id,
                    )
                self.slices_over = True
            else:
                self.slices.add(text)
                tags.append(text)
        return tags

    def _relevant(self, fields: dict, case_id: str) -> dict[str, float] | None:
        if "relevant" not in fields:
            return None
        node = fields["relevant"].value
        if not self.sized(
            node,
            Size(
                MappingNode,
                'a mapping from key to grade such as {"42": 1}',
                MAX_KEYS_PER_CASE,
                "grades {:,} keys, above the limit of {:,}",
                empty="grade at least one key or leave the field out",
            ),
            field="relevant",
            case=case_id,
        ):
            return {}
        grades: dict[str, float] = {}
        lines: dict[str, int] = {}
        for key_node, grade_node in node.value:
            key = self._key(key_node, "relevant", case_id)
            grade = self._grade(grade_node, key, case_id)
            if key is None or grade is None:
                continue
            if key in grades:
                self.report(
                    f"key {key!r} is graded twice (lines {lines[key]} and {line_of(key_node)}); keep one",
                    line=line_of(key_node),
                    field="relevant",
                    case=case_id,
                )
                continue
            grades[key] = grade
            lines[key] = line_of(key_node)
        return grades

    def _grade(self, node: Node, key: str | None, case_id: str) -> float | None:
        field = f"relevant[{key!r}]" if key is not None else "relevant"
        value = number(node)  # None for a boolean too, which describe() names
        if value is None:
            hint = (
                "; remove the quotes"
                if isinstance(node, ScalarNode)
                and tag_of(node) == TAG_STR
                and number_like(node.value)
                else ""
            )
            message = f"a grade must be a number above 0, not {describe(node)}{hint}"
        elif not math.isfinite(value):
            message = f"a grade must be a finite number above 0, not {shown(node)}"
        elif value <= 0:
            message = f"a grade must be above 0, not {shown(node)}; an unlisted key already means 0, so leave it out"
        elif value > MAX_GRADE:
            message = f"a grade must be at most {MAX_GRADE:,}, not {shown(node)}"
        else:
            return value
        self.report(message, line=line_of(node), field=field, case=case_id)
        return None
