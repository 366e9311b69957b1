"""The corpus digest: invariant under presentation, changed by anything a number depends on, pinned
by golden values."""

from __future__ import annotations

import hashlib

import pytest

from ptah.adapters.corpus_yaml import parse_corpus
from ptah.core.corpus import Case, canonical_document, corpus_digest

BASE = """\
version: 1
name: docs questions
description: what support actually gets asked
default_k: 5
cases:
  - id: pricing
    query: "How much does it cost per month?"
    required: ["42"]
    relevant:
      "42": 1.0
      "43": 0.5
  - id: cancellation
    query: "How do I cancel?"
    k: 3
    required: ["17"]
    forbidden: ["18"]
"""

# Golden: pinned so the digest can never drift silently between releases.
# Changing the canonical form is a breaking change of every stored baseline.
BASE_DIGEST = "sha256:f3c17a97e200bd2cab6ef6c120e934b455ab4c549aab9feca5fc3bb5eb85e3fd"
BASE_CANONICAL = (
    '{"cases":[{"forbidden":["18"],"id":"cancellation","k":3,"query":"How do I cancel?",'
    '"relevant":[["17",1.0]],"required":["17"]},'
    '{"forbidden":[],"id":"pricing","k":5,"query":"How much does it cost per month?",'
    '"relevant":[["42",1.0],["43",0.5]],"required":["42"]}],"format":"ptah-corpus@1"}'
)

RESTYLED = [
    # name and description changed, comments added, flow style, other quoting, reordered keys and
    # cases, the inherited k written out, grades written as integers where equal
    """\
# a comment
cases:
  - {k: 3, forbidden: ['18'], query: 'How do I cancel?', id: cancellation, required: ['17']}
  - id: pricing   # the cost question
    relevant: {'43': 0.5, '42': 1}
    required:
      - '42'
    k: 5
    query: How much does it cost per month?
default_k: 5
name: another name
version: 1
""",
    """\
version: 1
default_k: 7
cases:
  - id: pricing
    k: 5
    query: >-
      How much does it
      cost per month?
    required: [42]
    relevant: {42: 1.0, 43: 0.50}
  - id: cancellation
    query: "How do I cancel?"
    k: 3
    required: ["17"]
    relevant: {"17": 1}
    forbidden: ["18"]
""",
]


def digest_of(text: str) -> str:
    return parse_corpus(text).digest


def test_golden_canonical_form_and_digest():
    cases = parse_corpus(BASE).cases
    assert canonical_document(cases).decode("utf-8") == BASE_CANONICAL
    assert (
        corpus_digest(cases)
        == "sha256:" + hashlib.sha256(BASE_CANONICAL.encode("utf-8")).hexdigest()
    )
    assert corpus_digest(cases) == BASE_DIGEST


def test_golden_digest_of_a_unicode_query():
    case = Case(
        id="ü", query="Wie kündige ich?\u00a0", k=10, required=("k\x1f1",), relevant={"k\x1f1": 2}
    )
    assert canonical_document([case]).decode("utf-8") == (
        '{"cases":[{"forbidden":[],"id":"ü","k":10,"query":"Wie kündige ich?\u00a0",'
        '"relevant":[["k\\u001f1",2.0]],"required":["k\\u001f1"]}],"format":"ptah-corpus@1"}'
    )
    assert (
        corpus_digest([case]) == "sha256:" + hashlib.sha256(canonical_document([case])).hexdigest()
    )


@pytest.mark.parametrize("text", RESTYLED)
def test_presentation_does_not_change_the_digest(text):
    assert digest_of(text) == BASE_DIGEST


CHANGES = [
    ("query character", BASE.replace("cancel?", "cancel!")),
    ("query whitespace", BASE.replace("How do I cancel?", "How do I  cancel?")),
    ("case depth", BASE.replace("k: 3", "k: 4")),
    ("default depth reaching a case", BASE.replace("default_k: 5", "default_k: 6")),
    ("required added", BASE.replace('required: ["17"]', 'required: ["17", "19"]')),
    (
        "required removed",
        BASE.replace('required: ["42"]\n', "required: []\n".replace("[]", '["42", "43"]')).replace(
            '["42", "43"]', '["43"]'
        ),
    ),
    ("required key changed", BASE.replace('required: ["17"]', 'required: ["017"]')),
    ("relevant grade", BASE.replace('"43": 0.5', '"43": 0.25')),
    ("relevant key", BASE.replace('"43": 0.5', '"44": 0.5')),
    ("relevant removed", BASE.replace('      "43": 0.5\n', "")),
    ("forbidden added", BASE.replace('forbidden: ["18"]', 'forbidden: ["18", "20"]')),
    ("forbidden removed", BASE.replace('    forbidden: ["18"]\n', "")),
    ("case id", BASE.replace("id: pricing", "id: price")),
]


@pytest.mark.parametrize("text", [pytest.param(t, id=n) for n, t in CHANGES])
def test_anything_a_number_depends_on_changes_the_digest(text):
    assert digest_of(text) != BASE_DIGEST


def test_changes_are_all_distinct():
    digests = {digest_of(t) for _, t in CHANGES}
    assert len(digests) == len(CHANGES)
