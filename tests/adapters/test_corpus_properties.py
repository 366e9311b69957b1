"""Property tests: whatever bytes the loader is fed, it returns a Corpus or raises CorpusError --
nothing else."""

from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ptah.adapters.corpus_yaml import parse_corpus
from ptah.core.corpus import Corpus
from ptah.core.errors import CorpusError

VALID = b"""version: 1
default_k: 5
cases:
  - id: pricing
    query: "How much does it cost per month?"
    required: ["42"]
    relevant: {"42": 1.0, "43": 0.5}
  - id: cancellation
    query: How do I cancel?
    k: 3
    required: [17]
    forbidden: ["18"]
"""

FRAGMENTS = [
    b"",
    b"\n",
    b" ",
    b"  ",
    b"-",
    b":",
    b"[",
    b"]",
    b"{",
    b"}",
    b"&a",
    b"*a",
    b"!!int",
    b"~",
    b"0",
    b"-1",
    b".nan",
    b"true",
    b"'",
    b'"',
    b"#",
    b"---",
    b"\t",
    b"\xff",
    b"\xc3",
    b"k: 0",
    b"relevant:",
    b"required: []",
    b"id: x",
]


def load(data: bytes) -> None:
    try:
        corpus = parse_corpus(data, name="fuzz.yaml")
    except CorpusError as exc:
        assert exc.problems, "a CorpusError always names at least one problem"
        assert all(str(p).startswith("fuzz.yaml") for p in exc.problems)
        return
    assert isinstance(corpus, Corpus)
    assert corpus.cases and all(
        c.k >= 1 and c.query.strip() and (c.relevant or c.required) for c in corpus.cases
    )
    assert corpus.digest.startswith("sha256:") and len(corpus.digest) == 71


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=400))
def test_random_bytes(data):
    load(data)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.text(
        alphabet=st.sampled_from(list("version: 1\ncases-[]{}'\"#&*!?|>~,.0123456789idqueryk")),
        max_size=300,
    )
)
def test_yaml_shaped_text(text):
    load(text.encode("utf-8"))


BLANK_QUERY = [
    (VALID.index(b'"How much'), len(b'"How much does it cost per month?"'), b'" "')
]  # a case with required
ZERO_K = [(VALID.index(b"k: 3"), len(b"k: 3"), b"k: 0")]  # a case with required; 0 means default_k


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(BLANK_QUERY)
@example(ZERO_K)
@given(
    st.lists(
        st.tuples(st.integers(0, len(VALID)), st.integers(0, 6), st.sampled_from(FRAGMENTS)),
        max_size=6,
    )
)
def test_mutated_valid_corpus(mutations):
    data = bytearray(VALID)
    for position, cut, fragment in mutations:
        position = min(position, len(data))
        data[position : position + cut] = fragment
    load(bytes(data))


def test_the_unmutated_corpus_is_valid():
    corpus = parse_corpus(VALID)
    assert [c.id for c in corpus.cases] == ["pricing", "cancellation"]
    assert corpus.cases[1].required == ("17",)
