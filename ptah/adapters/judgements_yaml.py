"""Reading and writing a corpus's judgement record: ``NAME.judged.yaml`` beside ``NAME.yaml``.

The format (docs/holes.md, "The judgement record")::

    version: 1
    corpus: sha256:…            # the corpus digest it was last written against (informative)
    cases:
      pricing:                  # case id
        "42": {grade: 1, text_sha256: "…", judged_at: "2026-11-30T12:00:00Z"}
        "17": {grade: 0, text_sha256: "…", judged_at: "…"}   # judged not relevant
    models:                     # a model judge's grades, by judge (the `by` of each), then case
      "model:encoder@sha256:…":
        pricing:
          "42": {grade: 1, text_sha256: "…", judged_at: "…"}

Reading is strict: only a regular file (a link, FIFO or device is refused, as
is a file over :data:`MAX_RECORD_BYTES`), one YAML document, no alias, no
unknown field, every grade a number from 0 to the corpus's grade limit, every
``text_sha256`` 64 lowercase hex digits and every ``judged_at`` a UTC time
written ``YYYY-MM-DDTHH:MM:SSZ``; every problem is reported with its
``FILE:LINE`` (:class:`CorpusError`, exit 2). A corpus without a record has
the empty one. One reader reads every record, whatever its bytes (a comment,
an escape, a record edited by hand or written by an earlier version), in time
linear in its size: the nodes libyaml composes (:mod:`ptah.adapters.yaml_nodes`).

Writing replaces the file atomically (:mod:`ptah.adapters.files`) in one
form, :func:`record_text` (cases and keys sorted, every text double-quoted,
one judgement a line), so the file diffs well under version control and a
record in any other form takes this one at its first write.
"""

from __future__ import annotations

import math
import os
import re
import stat
from datetime import datetime
from pathlib import Path

from ptah.adapters.files import kind_of, read_bounded, write_text_atomically
from ptah.adapters.yaml_nodes import (
    MappingNode,
    Node,
    ProblemReader,
    ScalarNode,
    SequenceNode,
    Size,
    collector_paused,
    describe,
    grade_text,
    integer,
    line_of,
    mapping_fields,
    number,
    parse_document,
    quoted,
    scalar_text,
)
from ptah.core.corpus import MAX_CASES, MAX_GRADE, MAX_ID_CHARS, MAX_KEY_CHARS, MAX_KEYS_PER_CASE
from ptah.core.errors import CorpusError, InputError, Problem
from ptah.core.judged import JUDGED_VERSION, Judgement, JudgementRecord, Sample

MAX_RECORD_BYTES = 64 * 1024 * 1024
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
_SHA256 = re.compile(r"[0-9a-f]{64}\Z")
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}\Z")
JUDGE_ID = re.compile(
    r"model:[A-Za-z0-9_.-]{1,64}@sha256:[0-9a-f]{64}\Z"
)  # the `by` of a model judge's grade
MAX_JUDGES = 100
_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z\Z")
_TOP_FIELDS = ("version", "corpus", "samples", "cases", "models", "usage")
_JUDGEMENT_FIELDS = ("grade", "text_sha256", "judged_at", "sample")
_SAMPLE_FIELDS = ("seed", "population", "drawn", "generations", "drawn_at")
MAX_SAMPLES = 1_000
MAX_JUDGEMENTS = (
    500_000  # in all, people's and models' (a record of the largest size holds about 450,000)
)


def record_path(corpus_path: str | os.PathLike) -> Path:
    """``NAME.judged.yaml`` beside the corpus ``NAME.yaml`` (or ``NAME.yml``; any other name gains
    the suffix)."""
    path = Path(corpus_path)
    stem = path.stem if path.suffix in (".yaml", ".yml") else path.name
    return path.with_name(stem + ".judged.yaml")


def read_record(corpus_path: str | os.PathLike) -> JudgementRecord:
    """The judgement record beside ``corpus_path``; the empty record when there is none (see the
    module docs)."""
    path = record_path(corpus_path)
    name = str(path)
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        return JudgementRecord.empty()
    except OSError as exc:
        raise CorpusError([Problem(f"cannot be read: {exc.strerror or exc}", path=name)]) from None
    if not stat.S_ISREG(found.st_mode):
        raise CorpusError(
            [
                Problem(
                    f"is {kind_of(found.st_mode)}, not a regular file; the judgement record is read only from a regular "
                    "file beside its corpus: replace it with the file itself",
                    path=name,
                )
            ]
        )
    try:
        data = read_bounded(path, limit=MAX_RECORD_BYTES, what="judgement record", hint="split it")
    except InputError as exc:  # a folder, unreadable, over the limit
        raise CorpusError([exc.problems[0]]) from None
    return parse_record(data, name)


def parse_record(data: bytes, name: str) -> JudgementRecord:
    """The judgement record in ``data``, read from the file ``name`` (see the module docs)."""
    with collector_paused():  # over the nodes' reading too, while the whole tree is kept
        root = parse_document(data, name=name, max_bytes=MAX_RECORD_BYTES, what="judgement record")
        return _Reader(name).record(root)


class _Reader(ProblemReader):
    def record(self, root: Node) -> JudgementRecord:
        fields = self.top(
            root,
            known=_TOP_FIELDS,
            what="judgement record",
            holds="version and cases",
            format_="judgement records of format",
        )
        self.count = 0  # judgements in all, people's and models'
        corpus = None
        if "corpus" in fields:
            node = fields["corpus"].value
            corpus = scalar_text(node)
            if corpus is not None and not _DIGEST.match(corpus):
                self.report(
                    f"must be a corpus digest sha256:<64 hex digits>, not {describe(node)}",
                    line=line_of(node),
                    field="corpus",
                )
        self.samples = self._samples(fields["samples"].value) if "samples" in fields else []
        cases = self._cases(fields["cases"].value) if "cases" in fields else {}
        models = self._models(fields["models"].value) if "models" in fields else {}
        usage = self._usage(fields["usage"].value) if "usage" in fields else {}
        if self.problems:
            raise CorpusError(self.problems)
        return JudgementRecord(
            version=JUDGED_VERSION,
            corpus=corpus,
            cases=cases,
            samples=tuple(self.samples),
            models=models,
            usage=usage,
        )

    def _usage(self, node: Node) -> dict[str, dict[str, float]]:
        found: dict[str, dict[str, float]] = {}
        entries = (
            node.value if isinstance(node, MappingNode) and len(node.value) <= MAX_JUDGES else None
        )
        for by_node, value in entries or ():
            by = scalar_text(by_node)
            counts = (
                [(scalar_text(key), number(count)) for key, count in value.value]
                if isinstance(value, MappingNode)
                else None
            )
            if (
                by is None
                or not JUDGE_ID.match(by)
                or by in found
                or counts is None
                or not all(
                    name and count is not None and math.isfinite(count) and count >= 0
                    for name, count in counts
                )
            ):
                self.report(
                    "a judge's usage is model:NAME@sha256:… mapped to counts such as {requests: 8}",
                    line=line_of(by_node),
                    field="usage",
                )
                continue
            found[by] = {str(name): float(count) for name, count in counts if count is not None}
        if entries is None:
            self.report(
                f"must map each model judge to what it cost, not {describe(node)}",
                line=line_of(node),
                field="usage",
            )
        return found

    def _models(self, node: Node) -> dict[str, dict[str, dict[str, Judgement]]]:
        if not isinstance(node, MappingNode) or len(node.value) > MAX_JUDGES:
            self.report(
                f"must be a mapping from a model judge (model:NAME@sha256:…) to its grades by case, at most "
                f"{MAX_JUDGES} judges, not {describe(node)}",
                line=line_of(node),
                field="models",
            )
            return {}
        models: dict[str, dict[str, dict[str, Judgement]]] = {}
        for by_node, value in node.value:
            by = scalar_text(by_node)
            if by is None or not JUDGE_ID.match(by) or by in models:
                self.report(
                    f"a model judge is named once as model:NAME@sha256:<64 hex digits>, not "
                    f"{describe(by_node)}",
                    line=line_of(by_node),
                    field="models",
                )
                continue
            models[by] = self._cases(value, field=f"models.{by}", sampled=False)
        return models

    def _samples(self, node: Node) -> list[Sample]:
        if not isinstance(node, SequenceNode) or len(node.value) > MAX_SAMPLES:
            self.report(
                f"must be a list of at most {MAX_SAMPLES:,} samples such as {{seed: 7, population: "
                f'"sha256:…", drawn: 24, generations: ["sha256:…"], drawn_at: "…"}}, not {describe(node)}',
                line=line_of(node),
                field="samples",
            )
            return []
        samples = []
        for index, item in enumerate(node.value):
            where = f"samples[{index}]"
            if not isinstance(item, MappingNode):
                self.report(
                    f"must be a mapping {{seed, population, drawn, generations, drawn_at}}, not {describe(item)}",
                    line=line_of(item),
                    field=where,
                )
                continue
            fields = mapping_fields(
                item, known=_SAMPLE_FIELDS, report=self.report, where="a sample"
            )
            missing = [name for name in _SAMPLE_FIELDS if name not in fields]
            if missing:
                self.report(f"lacks {', '.join(missing)}", line=line_of(item), field=where)
                continue
            seed, drawn = integer(fields["seed"].value), integer(fields["drawn"].value)
            population = self._matching(
                fields["population"],
                _DIGEST,
                "a digest sha256:<64 hex digits>",
                self.report,
                f"{where}.population",
            )
            drawn_at = self._matching(
                fields["drawn_at"],
                _TIME,
                'a UTC time such as "2026-11-30T12:00:00Z"',
                self.report,
                f"{where}.drawn_at",
            )
            listed = fields["generations"].value
            generations = (
                [scalar_text(g) for g in listed.value] if isinstance(listed, SequenceNode) else None
            )
            if seed is None or seed < 0 or drawn is None or drawn < 0:
                self.report(
                    "seed and drawn must be whole numbers of at least 0",
                    line=line_of(item),
                    field=where,
                )
            elif generations is None or not all(
                g is not None and _DIGEST.match(g) for g in generations
            ):
                self.report(
                    "generations must be a list of identities sha256:<64 hex digits>",
                    line=line_of(listed),
                    field=f"{where}.generations",
                )
            elif population is not None and drawn_at is not None:
                samples.append(
                    Sample(seed, population, drawn, tuple(g for g in generations if g), drawn_at)
                )
        return samples

    def _cases(
        self, node: Node, field: str = "cases", sampled: bool = True
    ) -> dict[str, dict[str, Judgement]]:
        if isinstance(node, ScalarNode) and scalar_text(node) is None:
            return {}  # `cases:` with nothing under it: no judgement yet
        if not self.sized(
            node,
            Size(
                MappingNode,
                "a mapping from case id to its judgements",
                MAX_CASES,
                "holds {:,} cases, more than the limit of {:,}",
            ),
            field=field,
        ):
            return {}
        cases: dict[str, dict[str, Judgement]] = {}
        for key_node, value in node.value:
            case_id = self._text(key_node, "case id", MAX_ID_CHARS, field=field, case=None)
            if case_id is None:
                continue
            if case_id in cases:
                self.report(
                    "the case is given twice; keep one",
                    line=line_of(key_node),
                    field=field,
                    case=case_id,
                )
                continue
            cases[case_id] = self._judgements(value, case_id, sampled)
        return cases

    def _judgements(self, node: Node, case_id: str, sampled: bool = True) -> dict[str, Judgement]:
        if not self.sized(
            node,
            Size(
                MappingNode,
                'a mapping from key to its judgement such as "42": {grade: 1, …}',
                MAX_KEYS_PER_CASE,
                "holds {:,} judgements, above the limit of {:,}",
            ),
            field=None,
            case=case_id,
        ):
            return {}
        self.count += len(node.value)
        if self.count > MAX_JUDGEMENTS:
            self.report(
                f"the record holds more than the limit of {MAX_JUDGEMENTS:,} judgements in all",
                line=line_of(node),
                field=None,
            )
            raise CorpusError(self.problems)
        judgements: dict[str, Judgement] = {}
        for key_node, value in node.value:
            key = self._text(key_node, "key", MAX_KEY_CHARS, field="key", case=case_id)
            if key is None:
                continue
            if key in judgements:
                self.report(
                    f"key {key!r} is judged twice; keep one",
                    line=line_of(key_node),
                    field="key",
                    case=case_id,
                )
                continue
            judgement = self._judgement(value, case_id, key, sampled)
            if judgement is not None:
                judgements[key] = judgement
        return judgements

    def _judgement(
        self, node: Node, case_id: str, key: str, sampled: bool = True
    ) -> Judgement | None:
        where = f"key {key!r}"
        if not isinstance(node, MappingNode):
            self.report(
                f"{where}: must be a mapping {{grade, text_sha256, judged_at}}, not {describe(node)}",
                line=line_of(node),
                field=None,
                case=case_id,
            )
            return None
        before = len(self.problems)

        def report(message: str, *, line: int | None, field: str | None) -> None:
            self.report(f"{where}: {message}", line=line, field=field, case=case_id)

        known = (
            _JUDGEMENT_FIELDS if sampled else _JUDGEMENT_FIELDS[:3]
        )  # a model's grade is drawn by no sample
        fields = mapping_fields(node, known=known, report=report, where="a judgement")
        for name in _JUDGEMENT_FIELDS[:3]:
            if name not in fields:
                report("is missing", line=line_of(node), field=name)
        grade = number(fields["grade"].value) if "grade" in fields else None
        if "grade" in fields and (
            grade is None or not 0 <= grade <= MAX_GRADE
        ):  # NaN is in no range
            report(
                f"must be a number from 0 (not relevant) to {MAX_GRADE:,}, not {describe(fields['grade'].value)}",
                line=line_of(fields["grade"].value),
                field="grade",
            )
            grade = None
        digest = self._matching(
            fields.get("text_sha256"),
            _SHA256,
            "the SHA-256 of the row text: 64 lowercase hex digits",
            report,
            "text_sha256",
        )
        judged_at = self._matching(
            fields.get("judged_at"),
            _TIME,
            'a UTC time such as "2026-11-30T12:00:00Z"',
            report,
            "judged_at",
        )
        if judged_at is not None:
            try:  # _TIME fixed the form; fromisoformat (in C) checks the calendar, as strptime would
                datetime.fromisoformat(judged_at[:-1])
            except ValueError:
                report(
                    f"{judged_at!r} is no date and time of the calendar",
                    line=line_of(fields["judged_at"].value),
                    field="judged_at",
                )
        sample = None
        if "sample" in fields:
            sample = integer(fields["sample"].value)
            if sample is None or not 0 <= sample < len(self.samples):
                report(
                    f"must be the index of one of the record's {len(self.samples)} samples (from 0), not "
                    f"{describe(fields['sample'].value)}",
                    line=line_of(fields["sample"].value),
                    field="sample",
                )
        if len(self.problems) > before or grade is None or digest is None or judged_at is None:
            return None
        return Judgement(grade=grade, text_sha256=digest, judged_at=judged_at, sample=sample)

    @staticmethod
    def _matching(found, pattern: re.Pattern, wanted: str, report, name: str) -> str | None:
        if found is None:
            return None
        text = scalar_text(found.value)
        if text is None or not pattern.match(text):
            report(
                f"must be {wanted}, not {describe(found.value)}",
                line=line_of(found.value),
                field=name,
            )
            return None
        return text

    def _text(
        self, node: Node, what: str, limit: int, *, field: str, case: str | None
    ) -> str | None:
        text = scalar_text(node)
        if text is None or text == "":
            self.report(
                f"a {what} must be non-empty text, not {describe(node)}",
                line=line_of(node),
                field=field,
                case=case,
            )
            return None
        if len(text) > limit:
            self.report(
                f"a {what} of {len(text):,} characters is above the limit of {limit:,}",
                line=line_of(node),
                field=field,
                case=case,
            )
            return None
        if "\0" in text:
            self.report(
                f"a {what} holds a NUL character (\\x00)",
                line=line_of(node),
                field=field,
                case=case,
            )
            return None
        return text


def record_text(record: JudgementRecord) -> str:
    """The YAML text of ``record`` as :func:`write_record` writes it (cases and keys sorted)."""
    lines = [
        "# Judgement record: every key a person judged for each case (grade 0: not relevant), the SHA-256 of",
        "# the row's text then, and when (UTC). Written by `ptah corpus judge`, `grade`, `forbid`, "
        "`sample`, `judge-model` (under models:), `add` and `pin`.",
        f"version: {JUDGED_VERSION}",
    ]
    if record.corpus is not None:
        lines.append(f"corpus: {quoted(record.corpus)}")
    if record.samples:
        lines.append("samples:")
        lines += [
            f"  - {{seed: {x.seed}, population: {quoted(x.population)}, drawn: {x.drawn}, generations: "
            f"[{', '.join(quoted(g) for g in x.generations)}], drawn_at: {quoted(x.drawn_at)}}}"
            for x in record.samples
        ]
    lines.append("cases:" if any(record.cases.values()) else "cases: {}")
    lines += _case_lines(record.cases, "")  # a case without judgements is left out
    models = {by: graded for by, graded in record.models.items() if any(graded.values())}
    if models:
        lines.append("models:")
        for by in sorted(models):
            lines.append(f"  {quoted(by)}:")
            lines += _case_lines(models[by], "  ")
    if record.usage:
        lines.append("usage:")
        lines += [
            f"  {quoted(by)}: {{"
            + ", ".join(f"{name}: {int(count)}" for name, count in sorted(record.usage[by].items()))
            + "}"
            for by in sorted(record.usage)
        ]
    return "\n".join(lines) + "\n"


def _case_lines(cases, indent: str) -> list[str]:
    lines = []
    for case_id in sorted(cases):
        if not cases[case_id]:
            continue
        lines.append(f"{indent}  {quoted(case_id)}:")
        for key in sorted(cases[case_id]):
            judgement = cases[case_id][key]
            drawn = "" if judgement.sample is None else f", sample: {judgement.sample}"
            lines.append(
                f"{indent}    {quoted(key)}: {{grade: {grade_text(judgement.grade)}, "
                f"text_sha256: {quoted(judgement.text_sha256)}, judged_at: {quoted(judgement.judged_at)}"
                f"{drawn}}}"
            )
    return lines


def write_record(corpus_path: str | os.PathLike, record: JudgementRecord) -> Path:
    """Replace the judgement record beside ``corpus_path`` with ``record``, atomically; returns its
    path."""
    path = record_path(corpus_path)
    write_text_atomically(path, record_text(record))
    return path
