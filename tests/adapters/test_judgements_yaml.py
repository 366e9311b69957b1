"""The judgement record beside a corpus: read strictly with FILE:LINE errors, written atomically,
read back exactly."""

from __future__ import annotations

import gc
import hashlib
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ptah.adapters import judgements_yaml
from ptah.adapters.judgements_yaml import (
    parse_record,
    read_record,
    record_path,
    record_text,
    write_record,
)
from ptah.core.errors import CorpusError
from ptah.core.judged import Judgement, JudgementRecord, Sample

SHA = "a" * 64
DIGEST = "sha256:" + "b" * 64
MODELS = "version: 1\ncases: {}\n# models follow\n\nmodels:\n"


def test_the_record_sits_beside_its_corpus(tmp_path):
    assert record_path(tmp_path / "support.yaml") == tmp_path / "support.judged.yaml"
    assert record_path(tmp_path / "support.yml") == tmp_path / "support.judged.yaml"
    assert record_path(tmp_path / "corpus") == tmp_path / "corpus.judged.yaml"


def test_no_record_is_the_empty_record(tmp_path):
    record = read_record(tmp_path / "c.yaml")
    assert record == JudgementRecord.empty() and len(record) == 0


def test_the_pinned_format_reads(tmp_path):
    (tmp_path / "c.judged.yaml").write_text(
        "version: 1\n"
        f"corpus: {DIGEST}            # informative\n"
        "cases:\n"
        "  pricing:                  # case id\n"
        f'    "42": {{grade: 1.0, text_sha256: "{SHA}", judged_at: "2026-11-30T12:00:00Z"}}\n'
        f'    17: {{grade: 0, text_sha256: "{SHA}", judged_at: "2026-11-30T12:01:00Z"}}   # judged not relevant\n'
        "  other:\n"
        f"    '0042':\n      grade: 0.5\n      text_sha256: {SHA}\n      judged_at: 2026-12-01T00:00:00Z\n"
    )
    record = read_record(tmp_path / "c.yaml")
    assert record.corpus == DIGEST
    assert dict(record.cases["pricing"]) == {
        "42": Judgement(1.0, SHA, "2026-11-30T12:00:00Z"),
        "17": Judgement(0.0, SHA, "2026-11-30T12:01:00Z"),
    }
    assert dict(record.cases["other"]) == {"0042": Judgement(0.5, SHA, "2026-12-01T00:00:00Z")}


def test_written_records_read_back_equal_with_the_same_digest(tmp_path):
    record = JudgementRecord(
        corpus=DIGEST,
        cases={
            "b case": {
                "9": Judgement(2.0, SHA, "2026-11-30T12:00:00Z"),
                "10": Judgement(0.0, "c" * 64, "2026-11-30T12:00:01Z"),
            },
            "a": {"x\x1fy": Judgement(0.25, SHA, "2026-11-30T12:00:02Z")},
            "empty": {},
        },
    )
    path = write_record(tmp_path / "c.yaml", record)
    assert path == tmp_path / "c.judged.yaml"
    text = path.read_text()
    assert text == record_text(record)
    assert text.splitlines()[2:] == [
        "version: 1",
        f'corpus: "{DIGEST}"',
        "cases:",
        '  "a":',
        f'    "x\\x1fy": {{grade: 0.25, text_sha256: "{SHA}", judged_at: "2026-11-30T12:00:02Z"}}',
        '  "b case":',
        f'    "10": {{grade: 0, text_sha256: "{"c" * 64}", judged_at: "2026-11-30T12:00:01Z"}}',
        f'    "9": {{grade: 2, text_sha256: "{SHA}", judged_at: "2026-11-30T12:00:00Z"}}',
    ]
    again = read_record(tmp_path / "c.yaml")
    assert again.digest() == record.digest()
    assert {case: dict(keys) for case, keys in again.cases.items()} == {
        "a": dict(record.cases["a"]),
        "b case": dict(record.cases["b case"]),
    }


def test_a_record_with_samples_writes_and_reads_with_its_own_digest(tmp_path):
    plain = JudgementRecord(cases={"p": {"1": Judgement(0.0, SHA, "2026-11-30T12:00:00Z")}})
    sampled = JudgementRecord(
        cases={"p": {"1": Judgement(0.0, SHA, "2026-11-30T12:00:00Z", sample=0)}},
        samples=(Sample(7, DIGEST, 1, (DIGEST,), "2026-11-30T11:59:00Z"),),
    )
    write_record(tmp_path / "c.yaml", sampled)
    assert record_path(tmp_path / "c.yaml").read_text().splitlines()[3:] == [
        "samples:",
        f'  - {{seed: 7, population: "{DIGEST}", drawn: 1, generations: ["{DIGEST}"], drawn_at: "2026-11-30T11:59:00Z"}}',
        "cases:",
        '  "p":',
        f'    "1": {{grade: 0, text_sha256: "{SHA}", judged_at: "2026-11-30T12:00:00Z", sample: 0}}',
    ]
    assert read_record(tmp_path / "c.yaml") == sampled
    assert sampled.digest() != plain.digest()
    # a record without samples keeps the digest it had before samples existed
    canonical = (
        '{"cases":[{"id":"p","judgements":[{"grade":0.0,"judged_at":"2026-11-30T12:00:00Z","key":"1",'
        f'"text_sha256":"{SHA}"}}]}}],"format":"ptah-judged@1"}}'
    )
    assert plain.digest() == "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


def test_an_empty_record_writes_and_reads(tmp_path):
    write_record(tmp_path / "c.yaml", JudgementRecord())
    assert read_record(tmp_path / "c.yaml") == JudgementRecord()


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            "version: 2\ncases: {}\n",
            "c.judged.yaml:1: version: must be the number 1 (this ptah reads judgement records of format 1), not the number 2",
        ),
        (
            "version: 1\ncases:\n  p:\n    '1': {grade: -1, text_sha256: "
            + SHA
            + ", judged_at: 2026-11-30T12:00:00Z}\n",
            "c.judged.yaml:4: case \"p\": grade: key '1': must be a number from 0 (not relevant) to 1,000,000, not the number -1",
        ),
        (
            "version: 1\ncases:\n  p:\n    '1': {grade: 1, text_sha256: ABC, judged_at: 2026-11-30T12:00:00Z}\n",
            "c.judged.yaml:4: case \"p\": text_sha256: key '1': must be the SHA-256 of the row text: 64 lowercase hex digits, "
            'not the text "ABC"',
        ),
        (
            "version: 1\ncases:\n  p:\n    '1': {grade: 1, text_sha256: "
            + SHA
            + ", judged_at: 2026-02-30T12:00:00Z}\n",
            "c.judged.yaml:4: case \"p\": judged_at: key '1': '2026-02-30T12:00:00Z' is no date and time of the calendar",
        ),
        (
            "version: 1\ncases:\n  p:\n    '1': {grade: 1, text_sha256: " + SHA + "}\n",
            "c.judged.yaml:4: case \"p\": judged_at: key '1': is missing",
        ),
        (
            "version: 1\ncases:\n  p:\n    '1': {grade: 1, text_sha256: "
            + SHA
            + ", judged_at: 2026-11-30T12:00:00Z, by: me}\n",
            "c.judged.yaml:4: case \"p\": by: key '1': unknown field in a judgement; known fields are grade, text_sha256, judged_at, sample",
        ),
        (
            "version: 1\ncases:\n  p:\n    '1': {grade: 1, text_sha256: "
            + SHA
            + ", judged_at: 2026-11-30T12:00:00Z}\n"
            "    1: {grade: 1, text_sha256: " + SHA + ", judged_at: 2026-11-30T12:00:00Z}\n",
            "c.judged.yaml:5: case \"p\": key: key '1' is judged twice; keep one",
        ),
        (
            "version: 1\ncases: [a]\n",
            "c.judged.yaml:2: cases: must be a mapping from case id to its judgements, not a list",
        ),
        ("cases: {}\n", "c.judged.yaml:1: version: is missing; write `version: 1` at the top"),
        (
            "version: 1\ncorpus: md5:x\ncases: {}\n",
            'c.judged.yaml:2: corpus: must be a corpus digest sha256:<64 hex digits>, not the text "md5:x"',
        ),
        (
            "- 1\n",
            "c.judged.yaml:1: a judgement record is a YAML mapping with version and cases, not a list",
        ),
        (
            "version: 1\ncases: {a: &x {}, b: *x}\n",
            "c.judged.yaml:2: YAML anchors and aliases (&name / *name) are not accepted; write the value out",
        ),
        (
            "version: 1\ncases:\n  p:\n    '1': {grade: 1, text_sha256: "
            + SHA
            + ", judged_at: 2026-11-30T12:00:00Z, sample: 0}\n",
            "c.judged.yaml:4: case \"p\": sample: key '1': must be the index of one of the record's 0 samples (from 0), not "
            "the number 0",
        ),
        # in the written form
        (
            'version: 1\ncases:\n  "p":\n    "1": {grade: 1, text_sha256: "'
            + SHA
            + '", judged_at: "2026-11-30T12:00:00Z"}\n'
            '    "1": {grade: 1, text_sha256: "' + SHA + '", judged_at: "2026-11-30T12:00:00Z"}\n',
            "c.judged.yaml:5: case \"p\": key: key '1' is judged twice; keep one",
        ),
        (
            'version: 1\ncases:\n  "p":\n    "1": {grade: 1, text_sha256: "'
            + SHA
            + '", judged_at: "2026-02-30T12:00:00Z"}\n',
            "c.judged.yaml:4: case \"p\": judged_at: key '1': '2026-02-30T12:00:00Z' is no date and time of the calendar",
        ),
        (
            'version: 1\ncases:\n  "p":\n    "1": {grade: 1, text_sha256: "'
            + SHA
            + '", judged_at: "2026-11-30T23:59:60Z"}\n',
            "c.judged.yaml:4: case \"p\": judged_at: key '1': '2026-11-30T23:59:60Z' is no date and time of the calendar",
        ),
        (
            'version: 1\ncases:\n  "p":\n    "1": {grade: 1000001, text_sha256: "'
            + SHA
            + '", judged_at: "2026-11-30T12:00:00Z"}\n',
            "c.judged.yaml:4: case \"p\": grade: key '1': must be a number from 0 (not relevant) to 1,000,000, not the number 1000001",
        ),
        (
            'version: 1\ncases:\n  "p":\n    "1": {grade: .nan, text_sha256: "'
            + SHA
            + '", judged_at: "2026-11-30T12:00:00Z"}\n',
            "c.judged.yaml:4: case \"p\": grade: key '1': must be a number from 0 (not relevant) to 1,000,000, not the number .nan",
        ),
        (
            'version: 1\ncases:\n  "p":\n  "q":\n    "1": {grade: 1, text_sha256: "'
            + SHA
            + '", judged_at: "2026-11-30T12:00:00Z"}\n',
            'c.judged.yaml:3: case "p": must be a mapping from key to its judgement such as "42": {grade: 1, …}, not nothing (null)',
        ),
        # a model judge's section
        (
            MODELS
            + '  "model:x@sha256:short":\n    q:\n      "1": {grade: 1, text_sha256: "'
            + SHA
            + '", judged_at: "2026-11-30T12:00:00Z"}\n',
            "c.judged.yaml:6: models: a model judge is named once as model:NAME@sha256:<64 hex digits>, not the text "
            '"model:x@sha256:short"',
        ),
        (
            MODELS
            + f'  "model:x@{DIGEST}":\n    q:\n      "1": {{grade: 1, text_sha256: "{SHA}", judged_at: "2026-11-30T12:00:00Z", '
            "sample: 0}\n",
            "c.judged.yaml:8: case \"q\": sample: key '1': unknown field in a judgement; known fields are grade, "
            "text_sha256, judged_at",
        ),
        (
            MODELS + "  - 1\n",
            "c.judged.yaml:6: models: must be a mapping from a model judge (model:NAME@sha256:…) to its grades "
            "by case, at most 100 judges, not a list",
        ),
    ],
)
def test_a_bad_record_is_refused_naming_file_line_and_field(tmp_path, body, expected):
    (tmp_path / "c.judged.yaml").write_text(body)
    with pytest.raises(CorpusError) as info:
        read_record(tmp_path / "c.yaml")
    assert info.value.exit_code == 2
    assert str(info.value) == str(tmp_path) + "/" + expected


def parsed(text: str) -> JudgementRecord:
    """The record ``text`` holds, read as a file named c.judged.yaml."""
    return parse_record(text.encode("utf-8"), "c.judged.yaml")


TEXTS = st.text(st.characters(codec="utf-8", exclude_characters="\n\x00"), min_size=1, max_size=12)
JUDGEMENTS = st.builds(
    Judgement,
    st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0, 0.25, 1e-05, 1_000_000.0]),
    st.sampled_from([SHA, "0123456789abcdef" * 4]),
    st.sampled_from(["2026-11-30T12:00:00Z", "2024-02-29T23:59:59Z", "1999-01-01T00:00:00Z"]),
    st.sampled_from([None, 0, 1]),
)
SAMPLES = (
    Sample(7, DIGEST, 24, (DIGEST,), "2026-11-30T12:00:00Z"),
    Sample(0, DIGEST, 3, (), "2026-12-01T00:00:00Z"),
)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(TEXTS, st.dictionaries(TEXTS, JUDGEMENTS, min_size=1, max_size=4), max_size=4),
    st.sampled_from([None, DIGEST]),
)
def test_every_written_record_reads_back_the_same(cases, corpus):
    record = JudgementRecord(corpus=corpus, cases=cases, samples=SAMPLES)
    assert parsed(record_text(record)) == record


WRITTEN = (
    "# Judgement record: every key a person judged for each case (grade 0: not relevant), the "
    "SHA-256 of\n"
    "# the row's text then, and when (UTC). Written by `ptah corpus judge`, `grade`, `forbid`, "
    "`sample`, `judge-model` (under models:), `add` and `pin`.\n"
    "version: 1\n"
    f'corpus: "{DIGEST}"\n'
    "samples:\n"
    f'  - {{seed: 7, population: "{DIGEST}", drawn: 24, generations: ["{DIGEST}"], '
    'drawn_at: "2026-11-30T12:00:00Z"}\n'
    "cases:\n"
    '  "pricing":\n'
    f'    "17": {{grade: 0, text_sha256: "{SHA}", judged_at: "2026-11-30T12:01:00Z", sample: 0}}\n'
    f'    "42": {{grade: 1, text_sha256: "{SHA}", judged_at: "2026-11-30T12:00:00Z"}}\n'
    "models:\n"
    f'  "model:encoder@{DIGEST}":\n'
    '    "pricing":\n'
    f'      "42": {{grade: 0.5, text_sha256: "{SHA}", judged_at: "2026-11-30T12:02:00Z"}}\n'
    "usage:\n"
    f'  "model:encoder@{DIGEST}": {{pairs: 1, requests: 1}}\n'
)
JUDGED_42 = f'    "42": {{grade: 1, text_sha256: "{SHA}", judged_at: "2026-11-30T12:00:00Z"}}\n'


@pytest.mark.parametrize(
    ("written", "odd"),
    [
        ("cases:\n", "cases:   # what people judged\n"),
        ('  "pricing":\n', '\n# a comment line\n  "pricing":\n'),
        ('  "pricing":\n', "  pricing:\n"),
        (JUDGED_42, JUDGED_42.replace("{grade: 1, ", "{ grade:  1.0 ,")),
        (JUDGED_42, JUDGED_42.replace('"42"', "'42'")),
        (JUDGED_42, JUDGED_42.replace('"42"', '"\\x34\\u0032"')),
        (
            JUDGED_42,
            f"    '42':\n      judged_at: 2026-11-30T12:00:00Z\n      text_sha256: {SHA}\n"
            "      grade: 1\n",
        ),
        ("version: 1\n", "version: 1\t\n"),
        ("{pairs: 1, requests: 1}", "{requests: 1, pairs: 0x1}"),
    ],
)
def test_a_record_with_an_odd_byte_reads_as_the_written_one_and_is_rewritten(
    tmp_path, written, odd
):
    record = parsed(WRITTEN)
    assert len(record) == 2 and record.cases["pricing"]["42"].grade == 1.0
    assert record_text(record) == WRITTEN
    (tmp_path / "c.judged.yaml").write_text(WRITTEN.replace(written, odd, 1))
    assert (tmp_path / "c.judged.yaml").read_text() != WRITTEN
    assert read_record(tmp_path / "c.yaml") == record
    write_record(tmp_path / "c.yaml", read_record(tmp_path / "c.yaml"))
    assert (tmp_path / "c.judged.yaml").read_text() == WRITTEN  # one form, from the first write


def test_reading_a_record_leaves_the_cycle_collector_as_it_was(tmp_path):
    (tmp_path / "c.judged.yaml").write_text(WRITTEN)
    (tmp_path / "bad.judged.yaml").write_text(WRITTEN.replace("grade: 1,", "grade: -1,"))
    assert gc.isenabled()
    assert len(read_record(tmp_path / "c.yaml")) == 2
    assert gc.isenabled()
    with pytest.raises(CorpusError):
        read_record(tmp_path / "bad.yaml")
    assert gc.isenabled()
    gc.disable()
    try:
        assert len(read_record(tmp_path / "c.yaml")) == 2
        assert not gc.isenabled()
    finally:
        gc.enable()


MODEL_JUDGEMENTS = st.builds(
    Judgement,
    st.sampled_from([0.0, 1.0, 2.0]),
    st.just(SHA),
    st.sampled_from(["2026-11-30T12:00:00Z", "2024-02-29T23:59:59Z"]),
)
JUDGES = st.sampled_from(
    ["model:encoder@" + DIGEST, "model:gpt-4o.mini_2@sha256:" + "0123456789abcdef" * 4]
)


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(TEXTS, st.dictionaries(TEXTS, JUDGEMENTS, min_size=1, max_size=3), max_size=3),
    st.dictionaries(
        JUDGES,
        st.dictionaries(
            TEXTS,
            st.dictionaries(TEXTS, MODEL_JUDGEMENTS, min_size=1, max_size=3),
            min_size=1,
            max_size=3,
        ),
        max_size=2,
    ),
)
def test_a_record_with_model_grades_reads_back_the_same(cases, models):
    record = JudgementRecord(corpus=DIGEST, cases=cases, samples=SAMPLES, models=models)
    text = record_text(record)
    assert parsed(text) == record
    assert record.digest() == parsed(text).digest()


def test_model_grades_have_their_own_section_and_change_the_digest_only_when_present(tmp_path):
    person = {"q": {"42": Judgement(1.0, SHA, "2026-11-30T12:00:00Z")}}
    by = "model:encoder@" + DIGEST
    plain = JudgementRecord(corpus=DIGEST, cases=person)
    graded = JudgementRecord(
        corpus=DIGEST,
        cases=person,
        models={by: {"q": {"42": Judgement(0.0, SHA, "2026-11-30T12:00:01Z")}}},
    )
    assert JudgementRecord(corpus=DIGEST, cases=person, models={by: {}}).digest() == plain.digest()
    assert graded.digest() != plain.digest()
    write_record(tmp_path / "c.yaml", graded)
    assert read_record(tmp_path / "c.yaml") == graded
    assert record_text(graded).endswith(
        f'models:\n  "{by}":\n    "q":\n      "42": {{grade: 0, text_sha256: "{SHA}", judged_at: "2026-11-30T12:00:01Z"}}\n'
    )
    assert graded.keys("q") == frozenset(
        {"42"}
    )  # the person's; a model's grade never makes a key judged


def test_a_judges_usage_is_kept_outside_the_digest_and_read_back(tmp_path):
    by = "model:gpt@" + DIGEST
    grades = {by: {"q": {"42": Judgement(1.0, SHA, "2026-11-30T12:00:01Z")}}}
    record = JudgementRecord(
        corpus=DIGEST, models=grades, usage={by: {"requests": 9.0, "refused": 1.0, "pairs": 8.0}}
    )
    text = record_text(record)
    assert text.endswith(f'usage:\n  "{by}": {{pairs: 8, refused: 1, requests: 9}}\n')
    assert record.digest() == JudgementRecord(corpus=DIGEST, models=grades).digest()
    assert parsed(text) == record
    (tmp_path / "c.judged.yaml").write_text(text.replace("requests: 9", "requests: -9"))
    with pytest.raises(CorpusError) as raised:
        read_record(tmp_path / "c.yaml")
    assert (
        "usage: a judge's usage is model:NAME@sha256:… mapped to counts such as {requests: 8}"
        in str(raised.value)
    )


def _large_record(tmp_path, cases: int, keys: int) -> str:
    """A written record of ``cases`` x ``keys`` judgements; its text."""
    graded = {
        f"case {c}": {
            str(c * keys + k): Judgement(float(k % 3), SHA, "2026-11-30T12:00:00Z")
            for k in range(keys)
        }
        for c in range(cases)
    }
    return record_text(JudgementRecord(corpus=DIGEST, cases=graded))


def _timed_read(path) -> tuple[float, JudgementRecord | CorpusError]:
    started = time.perf_counter()
    try:
        found: JudgementRecord | CorpusError = read_record(path)
    except CorpusError as exc:
        found = exc
    return time.perf_counter() - started, found


def test_an_odd_byte_or_all_judgements_in_one_case_read_in_time_proportional_to_size(tmp_path):
    # 100 cases x 334 keys (4.7 MB): an escape or a comment anywhere once sent it all to a reader
    # about 20 times slower, and all judgements in one case were read twice before the refusal
    canonical = _large_record(tmp_path, 100, 334)
    (tmp_path / "c.judged.yaml").write_text(canonical)
    took, record = _timed_read(tmp_path / "c.yaml")
    assert isinstance(record, JudgementRecord) and len(record) == 33_400
    lines = canonical.split("\n")
    middle = lines.index('  "case 50":')
    lines[middle + 1] = lines[middle + 1].replace('"16700"', '"16700\\u00e9\\\\"')
    lines.insert(middle, '# a comment with a backslash \\ and a "quote"')
    (tmp_path / "odd.judged.yaml").write_text("\n".join(lines))
    odd_took, odd = _timed_read(tmp_path / "odd.yaml")
    assert isinstance(odd, JudgementRecord) and len(odd) == 33_400
    assert odd.cases["case 50"]["16700é\\"] == record.cases["case 50"]["16700"]
    one_case = "\n".join(
        line for line in lines if not line.startswith('  "case ') or line == '  "case 0":'
    )
    (tmp_path / "one.judged.yaml").write_text(one_case)
    one_took, refused = _timed_read(tmp_path / "one.yaml")
    assert isinstance(refused, CorpusError) and refused.exit_code == 2
    assert str(refused) == (
        f'{tmp_path / "one.judged.yaml"}:7: case "case 0": holds 33,400 judgements, above the '
        "limit of 10,000"
    )
    assert odd_took < 5 * took and one_took < 5 * took


def test_a_character_yaml_allows_nowhere_is_refused_at_its_line_at_once(tmp_path):
    text = _large_record(tmp_path, 3, 2).replace('"5"', '"5\x01"')
    (tmp_path / "c.judged.yaml").write_text(text)
    with pytest.raises(CorpusError) as raised:
        read_record(tmp_path / "c.yaml")
    assert str(raised.value) == (
        f"{tmp_path / 'c.judged.yaml'}:14: not valid YAML: the character U+0001 is not "
        "allowed in YAML; write it as an escape (\\u...) in a double-quoted text, or remove it"
    )


def test_the_judgements_in_all_are_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(judgements_yaml, "MAX_JUDGEMENTS", 5)
    text = _large_record(tmp_path, 3, 2)
    (tmp_path / "c.judged.yaml").write_text(text)
    with pytest.raises(CorpusError) as raised:
        read_record(tmp_path / "c.yaml")
    assert str(raised.value) == (
        f"{tmp_path / 'c.judged.yaml'}:13: the record holds more than the limit of 5 judgements "
        "in all"
    )
