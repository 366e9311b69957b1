"""Case tags: read as written, refused at their line when malformed, outside the corpus digest and
inside the slice digest."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ptah.adapters.corpus_yaml import load_corpus, parse_corpus
from ptah.core.corpus import slice_digest
from ptah.core.errors import CorpusError

REPO = Path(__file__).resolve().parents[2]

TAGGED = """\
version: 1
default_k: 5
cases:
  - id: pricing
    query: "How much does it cost per month?"
    required: ["42"]
    tags: [billing, en]
  - id: cancellation
    query: "How do I cancel?"
    required: ["17"]
    tags:
      - billing
      - de
  - id: login
    query: "I can't log in"
    required: ["9"]
"""
UNTAGGED = TAGGED.replace("    tags: [billing, en]\n", "").replace(
    "    tags:\n      - billing\n      - de\n", ""
)

# The canonical documents hashed by hand (the module docs of ptah.core.corpus): cases sorted by id.
CANCELLATION = '{"forbidden":[],"id":"cancellation","k":5,"query":"How do I cancel?","relevant":[["17",1.0]],"required":["17"]}'
PRICING = (
    '{"forbidden":[],"id":"pricing","k":5,"query":"How much does it cost per month?",'
    '"relevant":[["42",1.0]],"required":["42"]}'
)
BILLING = (
    "sha256:"
    + hashlib.sha256(
        f'{{"cases":[{CANCELLATION},{PRICING}],"format":"ptah-slice@1","tag":"billing"}}'.encode()
    ).hexdigest()
)


def problems(text: str) -> list[str]:
    with pytest.raises(CorpusError) as info:
        parse_corpus(text, name="c.yaml")
    return [str(problem) for problem in info.value.problems]


def test_tags_are_read_as_written_and_each_slice_holds_its_cases_in_corpus_order():
    corpus = parse_corpus(TAGGED)
    assert [case.tags for case in corpus.cases] == [("billing", "en"), ("billing", "de"), ()]
    assert {tag: [case.id for case in cases] for tag, cases in corpus.slices().items()} == {
        "billing": ["pricing", "cancellation"],
        "de": ["cancellation"],
        "en": ["pricing"],
    }
    assert list(corpus.slices()) == ["billing", "de", "en"]


def test_tags_are_outside_the_corpus_digest_and_inside_the_slice_digest():
    tagged, untagged = parse_corpus(TAGGED), parse_corpus(UNTAGGED)
    assert tagged.digest == untagged.digest
    assert slice_digest("billing", tagged.slices()["billing"]) == BILLING
    # adding a tag to a case keeps the corpus digest and changes the slice's
    more = parse_corpus(
        TAGGED.replace('required: ["9"]\n', 'required: ["9"]\n    tags: [billing]\n')
    )
    assert more.digest == tagged.digest
    assert [case.id for case in more.slices()["billing"]] == ["pricing", "cancellation", "login"]
    assert slice_digest("billing", more.slices()["billing"]) != BILLING
    # renaming the slice changes its digest too; the order of the cases does not
    assert slice_digest("invoices", tagged.slices()["billing"]) != BILLING
    assert slice_digest("billing", tagged.slices()["billing"][::-1]) == BILLING
    # and so does any change to a case's content (the same tag over other cases)
    edited = parse_corpus(TAGGED.replace("How do I cancel?", "How do I cancel my plan?"))
    assert slice_digest("billing", edited.slices()["billing"]) != BILLING


def test_every_malformed_tag_is_reported_at_its_line():
    text = (
        "version: 1\ndefault_k: 5\ncases:\n"
        '  - id: a\n    query: q\n    required: ["1"]\n    tags:\n'
        '      - Billing\n      - billing\n      - billing\n      - ""\n      - [x]\n      - ~\n      - -de\n'
        f'      - {"a" * 33}\n      - "a b"\n      - 2024.q1\n'
        '  - id: b\n    query: q\n    required: ["1"]\n    tags: billing\n'
        '  - id: c\n    query: q\n    required: ["1"]\n    tags: ['
        + ", ".join(f"t{i}" for i in range(17))
        + "]\n"
    )
    alphabet = "a tag is 1 to 32 lowercase letters, digits, '-', '_' or '.', starting with a letter or digit, not"
    assert problems(text) == [
        f'c.yaml:8: case "a": tags: {alphabet} the text "Billing"',
        "c.yaml:10: case \"a\": tags: tag 'billing' is listed twice",
        f'c.yaml:11: case "a": tags: {alphabet} the text ""',
        f'c.yaml:12: case "a": tags: {alphabet} a list',
        f'c.yaml:13: case "a": tags: {alphabet} nothing (null)',
        f'c.yaml:14: case "a": tags: {alphabet} the text "-de"',
        f'c.yaml:15: case "a": tags: {alphabet} a text of 33 characters',
        f'c.yaml:16: case "a": tags: {alphabet} the text "a b"',
        'c.yaml:21: case "b": tags: must be a list of tags such as [billing, de], not the text "billing"',
        'c.yaml:25: case "c": tags: lists 17 tags, above the limit of 16',
    ]


def test_sixteen_tags_and_an_empty_list_are_accepted():
    sixteen = ", ".join(f"t{i}" for i in range(16))
    corpus = parse_corpus(
        UNTAGGED.replace(
            'required: ["42"]\n', f'required: ["42"]\n    tags: [{sixteen}]\n'
        ).replace('required: ["17"]\n', 'required: ["17"]\n    tags: []\n')
    )
    assert len(corpus.cases[0].tags) == 16 and corpus.cases[1].tags == ()
    assert corpus.cases[0].tags[:3] == (
        "t0",
        "t1",
        "t2",
    )  # as written, not sorted: t10 would come before t2


def test_the_bundled_corpus_is_tagged_by_topic_and_still_matches_its_baseline():
    corpus = load_corpus(REPO / "corpora" / "support.yaml")
    baseline = json.loads((REPO / "examples" / "support" / "baseline.json").read_text())
    assert (
        corpus.digest
        == baseline["corpus"]["digest"]
        == ("sha256:24143bd7298824a4182e44643faab5394c2270a1d6a8595a89c2cd8e03bbc7b5")
    )
    assert all(case.tags for case in corpus.cases)
    sizes = {tag: len(cases) for tag, cases in corpus.slices().items()}
    assert (
        sizes["billing"],
        sizes["invoices"],
        sizes["payments"],
        sizes["security"],
        sizes["account"],
    ) == (4, 7, 7, 3, 3)
    assert [case.id for case in corpus.slices()["billing"]] == [
        "pricing",
        "stop-paying",
        "plan-refund",
        "bookkeeper-seat",
    ]


def test_a_corpus_written_back_as_yaml_keeps_its_tags_even_those_yaml_would_read_otherwise():
    from ptah.adapters.beir import corpus_yaml_text

    corpus = parse_corpus(
        TAGGED.replace("tags: [billing, en]", 'tags: [billing, "null", "true", "1.50"]')
    )
    assert corpus.cases[0].tags == ("billing", "null", "true", "1.50")
    assert parse_corpus(corpus_yaml_text(corpus)) == corpus


def test_editing_a_tagged_corpus_keeps_its_tags(tmp_path):
    from ptah.adapters.corpus_edit import CorpusDocument

    path = tmp_path / "c.yaml"
    path.write_text(TAGGED)
    document = CorpusDocument.open(path)
    document.judge("cancellation", "18", 2.0)
    document.append_case("refund", "Can I get my money back?", None, [("7", 1.0, None)])
    saved = document.save()
    assert [case.tags for case in saved.cases] == [("billing", "en"), ("billing", "de"), (), ()]
    assert load_corpus(path).slices()["billing"] == parse_corpus(TAGGED).slices()["billing"][:1] + (
        saved.cases[1],
    )


TAGS = st.lists(
    st.from_regex(r"[a-z0-9][a-z0-9._-]{0,31}", fullmatch=True), max_size=16, unique=True
)


@settings(max_examples=60, deadline=None)
@given(first=TAGS, second=TAGS)
def test_any_tags_of_the_alphabet_are_read_back_as_written_and_keep_the_corpus_digest(
    first, second
):
    def listed(tags):
        return "[" + ", ".join(json.dumps(tag) for tag in tags) + "]"

    text = TAGGED.replace("[billing, en]", listed(first)).replace(
        "tags:\n      - billing\n      - de\n", f"tags: {listed(second)}\n"
    )
    corpus = parse_corpus(text)
    assert [case.tags for case in corpus.cases] == [tuple(first), tuple(second), ()]
    assert corpus.digest == parse_corpus(UNTAGGED).digest


def test_a_corpus_of_more_than_200_tags_is_refused_at_the_case_whose_tag_goes_over():
    cases = "".join(
        f'  - {{id: c{i}, query: q, required: ["1"], tags: [t{i}, t{i + 1}]}}\n'
        for i in range(0, 202, 2)
    )
    with pytest.raises(CorpusError) as raised:
        parse_corpus(f"version: 1\ndefault_k: 3\ncases:\n{cases}", name="c.yaml")
    assert raised.value.exit_code == 2
    assert str(raised.value) == (
        "c.yaml:104: case \"c200\": tags: tag 't200' makes 201 tags in the corpus, more than "
        "the limit of 200 slices a corpus; use fewer tags"
    )
    assert (
        len(
            parse_corpus(
                f"version: 1\ndefault_k: 3\ncases:\n{cases[: cases.index('  - {id: c200')]}"
            ).slices()
        )
        == 200
    )
