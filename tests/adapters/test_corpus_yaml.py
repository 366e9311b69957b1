"""The corpus loader: valid corpora load exactly; every bad input is a CorpusError naming line and
field."""

from __future__ import annotations

import textwrap

import pytest

from ptah.adapters import corpus_yaml
from ptah.adapters.corpus_yaml import load_corpus, parse_corpus
from ptah.core.corpus import MAX_CASES, MAX_FILE_BYTES, MAX_K, MAX_QUERY_CHARS
from ptah.core.errors import CorpusError
from tests.adapters.test_corpus_digest import BASE  # the reference example, with a forbidden key


def problems_of(text: str | bytes) -> list[str]:
    with pytest.raises(CorpusError) as info:
        parse_corpus(text, name="c.yaml")
    return [str(p) for p in info.value.problems]


def one_problem(text: str | bytes) -> str:
    found = problems_of(text)
    assert len(found) == 1, found
    return found[0]


def corpus_with_case(body: str, *, top: str = "version: 1\ndefault_k: 5\n") -> str:
    return top + "cases:\n  - id: c1\n" + textwrap.indent(textwrap.dedent(body), "    ")


def test_reference_example_loads_with_derived_grades():
    corpus = parse_corpus(BASE)
    assert corpus.name == "docs questions"
    assert corpus.default_k == 5
    pricing, cancellation = corpus.cases
    assert (pricing.id, pricing.query, pricing.k) == (
        "pricing",
        "How much does it cost per month?",
        5,
    )
    assert pricing.required == ("42",)
    assert dict(pricing.relevant) == {"42": 1.0, "43": 0.5}
    assert (cancellation.k, cancellation.required) == (3, ("17",))
    # required and no relevant: each required key is graded 1
    assert dict(cancellation.relevant) == {"17": 1.0}
    assert cancellation.forbidden == ("18",)
    assert (pricing.line, cancellation.line) == (6, 12)


def test_k_zero_uses_default_k_and_forbidden_is_read():
    corpus = parse_corpus(
        corpus_with_case('query: q\nk: 0\nrequired: ["1"]\nforbidden: ["9", "8"]\n')
    )
    assert corpus.cases[0].k == 5
    assert corpus.cases[0].forbidden == ("9", "8")


@pytest.mark.parametrize(
    ("written", "key"),
    [
        ("0042", "0042"),
        ("1e3", "1e3"),
        ("true", "true"),
        ("42", "42"),
        ("'0042'", "0042"),
        ("4.50", "4.50"),
        ("0x1F", "0x1F"),
    ],
)
def test_unquoted_keys_keep_the_authors_spelling(written, key):
    corpus = parse_corpus(
        corpus_with_case(f"query: q\nrequired: [{written}]\nrelevant:\n  {written}: 2\n")
    )
    assert corpus.cases[0].required == (key,)
    assert dict(corpus.cases[0].relevant) == {key: 2.0}


def test_multiline_query_is_taken_exactly():
    corpus = parse_corpus(corpus_with_case('query: |\n  two\n  lines\nrequired: ["1"]\n'))
    assert corpus.cases[0].query == "two\nlines\n"


BAD_INPUTS = [
    # (name, content, expected single problem)
    (
        "not yaml",
        "version: 1\ncases: [\n",
        "c.yaml:3: not valid YAML: did not find expected node content",
    ),
    (
        "not a mapping",
        "- 1\n- 2\n",
        "c.yaml:1: a corpus is a YAML mapping with version, default_k and cases, not a list",
    ),
    (
        "scalar document",
        "hello\n",
        'c.yaml:1: a corpus is a YAML mapping with version, default_k and cases, not the text "hello"',
    ),
    ("empty file", "", "c.yaml: the file is empty; a corpus is a YAML mapping"),
    ("only comments", "# nothing\n\n", "c.yaml: the file is empty; a corpus is a YAML mapping"),
    (
        "version missing",
        'default_k: 5\ncases:\n  - {id: a, query: q, required: ["1"]}\n',
        "c.yaml:1: version: is missing; write `version: 1` at the top",
    ),
    (
        "version 2",
        'version: 2\ndefault_k: 5\ncases:\n  - {id: a, query: q, required: ["1"]}\n',
        "c.yaml:1: version: must be the number 1 (this ptah reads corpus format 1), not the number 2",
    ),
    (
        "version 1.0 string",
        'version: "1.0"\ndefault_k: 5\ncases:\n  - {id: a, query: q, required: ["1"]}\n',
        'c.yaml:1: version: must be the number 1 (this ptah reads corpus format 1), not the text "1.0"',
    ),
    (
        "version 1.0 float",
        'version: 1.0\ndefault_k: 5\ncases:\n  - {id: a, query: q, required: ["1"]}\n',
        "c.yaml:1: version: must be the number 1 (this ptah reads corpus format 1), not the number 1.0",
    ),
    (
        "version list",
        'version: [1]\ndefault_k: 5\ncases:\n  - {id: a, query: q, required: ["1"]}\n',
        "c.yaml:1: version: must be the number 1 (this ptah reads corpus format 1), not a list",
    ),
    (
        "unknown top field",
        'version: 1\ndefualt_k: 5\ncases:\n  - {id: a, query: q, k: 3, required: ["1"]}\n',
        'c.yaml:2: defualt_k: unknown field in the corpus; did you mean "default_k"?',
    ),
    (
        "unknown case field",
        corpus_with_case('query: q\nrequried: ["1"]\nrequired: ["1"]\n'),
        'c.yaml:6: case "c1": requried: unknown field in a case; did you mean "required"?',
    ),
    (
        "no cases",
        "version: 1\ndefault_k: 5\n",
        "c.yaml:1: cases: is missing; a corpus needs at least one case",
    ),
    (
        "empty cases",
        "version: 1\ndefault_k: 5\ncases: []\n",
        "c.yaml:3: cases: is empty; a corpus needs at least one case",
    ),
    (
        "cases not a list",
        "version: 1\ndefault_k: 5\ncases: {a: 1}\n",
        "c.yaml:3: cases: must be a list of cases, not a mapping",
    ),
    (
        "case not a mapping",
        "version: 1\ndefault_k: 5\ncases:\n  - just text\n",
        'c.yaml:4: cases: each case must be a mapping with id and query, not the text "just text"',
    ),
    (
        "duplicate case id",
        'version: 1\ndefault_k: 5\ncases:\n  - {id: a, query: q, required: ["1"]}\n  - {id: a, query: r, required: ["2"]}\n',
        'c.yaml:5: case "a": id: the id is used twice (lines 4 and 5); case ids must be unique',
    ),
    (
        "duplicate mapping key",
        corpus_with_case('query: q\nquery: r\nrequired: ["1"]\n'),
        'c.yaml:6: case "c1": query: is given twice in a case (lines 5 and 6); keep one',
    ),
    (
        "duplicate top key",
        'version: 1\nversion: 1\ndefault_k: 5\ncases:\n  - {id: a, query: q, required: ["1"]}\n',
        "c.yaml:2: version: is given twice in the corpus (lines 1 and 2); keep one",
    ),
    (
        "missing id",
        'version: 1\ndefault_k: 5\ncases:\n  - {query: q, required: ["1"]}\n',
        "c.yaml:4: id: a case has no id; give every case a unique id",
    ),
    (
        "empty id",
        'version: 1\ndefault_k: 5\ncases:\n  - {id: "", query: q, required: ["1"]}\n',
        'c.yaml:4: id: must be non-empty text, not the text ""',
    ),
    (
        "null id",
        'version: 1\ndefault_k: 5\ncases:\n  - {id: ~, query: q, required: ["1"]}\n',
        "c.yaml:4: id: must be non-empty text, not nothing (null)",
    ),
    (
        "missing query",
        corpus_with_case('required: ["1"]\n'),
        'c.yaml:4: case "c1": query: is missing; a case needs the text to search with',
    ),
    (
        "empty query",
        corpus_with_case('query: "  "\nrequired: ["1"]\n'),
        'c.yaml:5: case "c1": query: must be non-empty text, not the text "  "',
    ),
    (
        "k negative",
        corpus_with_case('query: q\nk: -1\nrequired: ["1"]\n'),
        'c.yaml:6: case "c1": k: must not be negative (got -1)',
    ),
    (
        "k float",
        corpus_with_case('query: q\nk: 2.5\nrequired: ["1"]\n'),
        'c.yaml:6: case "c1": k: must be a whole number, not the number 2.5; write a whole number such as 10',
    ),
    (
        "k quoted",
        corpus_with_case('query: q\nk: "3"\nrequired: ["1"]\n'),
        'c.yaml:6: case "c1": k: must be a whole number, not the text "3"; remove the quotes: k: 3',
    ),
    (
        "k boolean",
        corpus_with_case('query: q\nk: true\nrequired: ["1"]\n'),
        'c.yaml:6: case "c1": k: must be a whole number, not the boolean true; write a whole number such as 10',
    ),
    (
        "k above limit",
        corpus_with_case(f'query: q\nk: {MAX_K + 1}\nrequired: ["1"]\n'),
        f'c.yaml:6: case "c1": k: {MAX_K + 1} is above the limit of {MAX_K}',
    ),
    (
        "default_k zero",
        'version: 1\ndefault_k: 0\ncases:\n  - {id: a, query: q, k: 2, required: ["1"]}\n',
        "c.yaml:2: default_k: must be at least 1; it is the depth of every case without its own k",
    ),
    (
        "no depth",
        'version: 1\ncases:\n  - id: a\n    query: q\n    required: ["1"]\n',
        'c.yaml:3: case "a": k: no depth: give the case a k, or the corpus a default_k',
    ),
    (
        "neither required nor relevant",
        corpus_with_case("query: q\n"),
        'c.yaml:4: case "c1": declares neither required nor relevant; any answer would satisfy it, so name the keys a good result contains',
    ),
    (
        "relevant not a mapping",
        corpus_with_case('query: q\nrelevant: ["1"]\n'),
        'c.yaml:6: case "c1": relevant: must be a mapping from key to grade such as {"42": 1}, not a list',
    ),
    (
        "grade zero",
        corpus_with_case('query: q\nrelevant: {"1": 0}\n'),
        "c.yaml:6: case \"c1\": relevant['1']: a grade must be above 0, not 0; an unlisted key already means 0, so leave it out",
    ),
    (
        "grade negative",
        corpus_with_case('query: q\nrelevant: {"1": -2}\n'),
        "c.yaml:6: case \"c1\": relevant['1']: a grade must be above 0, not -2; an unlisted key already means 0, so leave it out",
    ),
    (
        "grade nan",
        corpus_with_case('query: q\nrelevant: {"1": .nan}\n'),
        "c.yaml:6: case \"c1\": relevant['1']: a grade must be a finite number above 0, not .nan",
    ),
    (
        "grade infinite",
        corpus_with_case('query: q\nrelevant: {"1": .inf}\n'),
        "c.yaml:6: case \"c1\": relevant['1']: a grade must be a finite number above 0, not .inf",
    ),
    (
        "grade boolean",
        corpus_with_case('query: q\nrelevant: {"1": yes}\n'),
        'c.yaml:6: case "c1": relevant[\'1\']: a grade must be a number above 0, not the text "yes"',
    ),
    (
        "grade true",
        corpus_with_case('query: q\nrelevant: {"1": true}\n'),
        "c.yaml:6: case \"c1\": relevant['1']: a grade must be a number above 0, not the boolean true",
    ),
    (
        "grade string",
        corpus_with_case('query: q\nrelevant: {"1": "2"}\n'),
        'c.yaml:6: case "c1": relevant[\'1\']: a grade must be a number above 0, not the text "2"; remove the quotes',
    ),
    (
        "required not a list",
        corpus_with_case('query: q\nrequired: "42"\n'),
        'c.yaml:6: case "c1": required: must be a list of keys such as [\'42\'], not the text "42"',
    ),
    (
        "required of lists",
        corpus_with_case("query: q\nrequired: [[1, 2]]\n"),
        'c.yaml:6: case "c1": required: a key must be a single text value such as "42", not a list',
    ),
    (
        "key null",
        corpus_with_case("query: q\nrequired: [~]\n"),
        'c.yaml:6: case "c1": required: a key must be a single text value such as "42", not nothing (null)',
    ),
    (
        "key mapping",
        corpus_with_case("query: q\nrequired: [{a: 1}]\n"),
        'c.yaml:6: case "c1": required: a key must be a single text value such as "42", not a mapping',
    ),
    (
        "relevant key a list",
        corpus_with_case("query: q\nrelevant: {[1]: 1}\n"),
        'c.yaml:6: case "c1": relevant: a key must be a single text value such as "42", not a list',
    ),
    (
        "required key twice",
        corpus_with_case('query: q\nrequired: ["1", "1"]\n'),
        "c.yaml:6: case \"c1\": required: key '1' is listed twice",
    ),
    (
        "forbidden and required",
        corpus_with_case('query: q\nrequired: ["1"]\nforbidden: ["1"]\n'),
        "c.yaml:7: case \"c1\": forbidden: key '1' is both forbidden and expected; a key cannot be both",
    ),
    (
        "alias bomb",
        'version: 1\ndefault_k: 5\na: &a ["lol", "lol"]\nb: &b [*a, *a]\nc: &c [*b, *b]\ncases:\n  - {id: x, query: q, required: ["1"]}\n',
        "c.yaml:3: YAML anchors and aliases (&name / *name) are not accepted; write the value out",
    ),
    (
        "two documents",
        "version: 1\n---\nversion: 1\n",
        "c.yaml:3: holds 2 YAML documents; a corpus file holds one",
    ),
    (
        "query too long",
        corpus_with_case(f'query: "{"x" * (MAX_QUERY_CHARS + 1)}"\nrequired: ["1"]\n'),
        f'c.yaml:5: case "c1": query: is {MAX_QUERY_CHARS + 1:,} characters, above the limit of {MAX_QUERY_CHARS:,}',
    ),
    (
        "non-UTF-8 bytes",
        b'version: 1\ndefault_k: 5\ncases:\n  - {id: a, query: "caf\xe9", required: ["1"]}\n',
        "c.yaml:4: byte 0xe9 is not UTF-8; save the file as UTF-8",
    ),
    (
        "grade too large for a double",
        corpus_with_case(f'query: q\nrelevant: {{"1": 1{"0" * 400}}}\n'),
        f"c.yaml:6: case \"c1\": relevant['1']: a grade must be a finite number above 0, not 1{'0' * 38}… (401 characters)",
    ),
    (
        "lone surrogate",
        corpus_with_case('query: "bad \\ud800 text"\nrequired: ["1"]\n'),
        "c.yaml:5: holds a lone surrogate escape (\\uD800-\\uDFFF), which is not text; write the character itself",
    ),
]


@pytest.mark.parametrize(
    ("content", "expected"), [pytest.param(c, e, id=n) for n, c, e in BAD_INPUTS]
)
def test_bad_input_is_one_located_problem(content, expected):
    assert one_problem(content) == expected


def test_every_problem_is_reported_not_just_the_first():
    text = 'version: 2\ndefault_k: 5\ncases:\n  - {id: a, query: "", required: ["1"]}\n  - {id: b, query: q, k: -3, relevant: {"x": 0}}\n'
    assert problems_of(text) == [
        "c.yaml:1: version: must be the number 1 (this ptah reads corpus format 1), not the number 2",
        'c.yaml:4: case "a": query: must be non-empty text, not the text ""',
        'c.yaml:5: case "b": k: must not be negative (got -3)',
        "c.yaml:5: case \"b\": relevant['x']: a grade must be above 0, not 0; an unlisted key already means 0, so leave it out",
    ]


def test_file_larger_than_the_limit_is_refused_without_reading(tmp_path):
    path = tmp_path / "big.yaml"
    with path.open("wb") as handle:
        handle.truncate(MAX_FILE_BYTES + 1)
    with pytest.raises(CorpusError) as info:
        load_corpus(path)
    assert (
        str(info.value)
        == f"{path}: the file is {MAX_FILE_BYTES + 1:,} bytes, more than the corpus limit of {MAX_FILE_BYTES:,}; split it"
    )


def test_too_many_cases_is_refused(monkeypatch):
    assert (
        MAX_CASES == 50_000
    )  # the limit the README states; the rule is tested below at a limit of 3
    monkeypatch.setattr(corpus_yaml, "MAX_CASES", 3)

    def cases(count: int) -> str:
        lines = ["version: 1", "default_k: 1", "cases:"]
        return (
            "\n".join(
                lines + [f'- {{id: "c{i}", query: q, required: ["1"]}}' for i in range(count)]
            )
            + "\n"
        )

    assert [case.id for case in parse_corpus(cases(3)).cases] == ["c0", "c1", "c2"]
    assert (
        one_problem(cases(4))
        == "c.yaml:4: cases: holds 4 cases, more than the limit of 3; split the corpus"
    )


def test_deep_nesting_is_refused_not_crashed():
    text = "version: 1\ncases: " + "[" * 5000 + "]" * 5000 + "\n"
    message = one_problem(text)
    assert message.startswith("c.yaml") and ("nested too deeply" in message or "cases" in message)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(CorpusError) as info:
        load_corpus(tmp_path / "nope.yaml")
    assert str(info.value) == f"{tmp_path / 'nope.yaml'}: no such file"
    with pytest.raises(CorpusError) as info:
        load_corpus(tmp_path)
    assert str(info.value) == f"{tmp_path}: is a directory, not a corpus file"


def test_parsing_a_corpus_peaks_at_a_few_kb_a_case():
    """libyaml's nodes (two marks each) peak at some 4.4 KB a case of this corpus, and each case's
    nodes go once it is read; ruamel's round-trip nodes, with their comments, made it 7.5 KB (some
    300 MB held after a 50,000-case corpus)."""
    import tracemalloc

    cases = 5_000
    text = "version: 1\ndefault_k: 10\ncases:\n" + "".join(
        f'  - {{id: q{i}, query: "some words of a query {i}", relevant: {{"{i}": 1}}, required: ["{i + 1}"]}}  # c\n'
        for i in range(cases)
    )
    parse_corpus(text[:300].rsplit("\n  -", 1)[0] + "\n")  # imports done before measuring
    tracemalloc.start()
    try:
        corpus = parse_corpus(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(corpus.cases) == cases and corpus.cases[-1].line == cases + 3
    assert peak / cases < 4_500


def record_entry(key: str, grade: float) -> str:
    return f'    "{key}": {{grade: {grade:g}, text_sha256: "{"0" * 64}", judged_at: "2026-11-30T12:00:00Z"}}\n'


def test_a_record_grading_a_key_the_corpus_does_not_list_is_refused_not_a_judged_miss(tmp_path):
    corpus = tmp_path / "c.yaml"
    corpus.write_text(
        corpus_with_case('query: "q"\nrequired: ["1"]\nrelevant: {"2": 2}\nforbidden: ["3"]\n')
    )
    agreeing = "".join(
        record_entry(key, grade) for key, grade in (("1", 1), ("2", 2), ("3", 0), ("4", 0))
    )
    record = tmp_path / "c.judged.yaml"
    # grade 0 for a hole, the corpus's own keys, and a case the corpus no longer has: all taken
    record.write_text("version: 1\ncases:\n  c1:\n" + agreeing + "  gone:\n" + record_entry("9", 1))
    assert load_corpus(corpus).cases[0].judged == frozenset({"1", "2", "3", "4"})
    record.write_text(
        "version: 1\ncases:\n  c1:\n"
        + agreeing.replace("grade: 0", "grade: 1", 1)
        + "".join(record_entry(str(key), 1) for key in range(10, 21))
    )
    with pytest.raises(CorpusError) as refused:
        load_corpus(corpus)
    assert refused.value.exit_code == 2
    shown = str(refused.value).splitlines()
    assert shown[0] == (
        f'{record}: case "c1": key "3" has grade 1 in the record, but the corpus {corpus} does not list '
        "it as relevant or required; add it to the case's relevant there, or set its grade to 0 here "
        "if it is not relevant"
    )
    assert [line.split('key "')[1].split('"')[0] for line in shown[:10]] == [
        "3",
        *map(str, range(10, 19)),
    ]
    assert shown[10:] == [f"{record}: and 2 more entries like these"]
