"""The lexical index: its scores are bm25s's, it survives serialisation, its fingerprint sees every
change."""

from __future__ import annotations

import bm25s
import numpy as np
import pytest

from ptah.adapters.lexical import (
    LexicalIndex,
    build_index,
    settings,
    settings_key,
    text_fingerprint,
    unpacked_limit,
)
from ptah.core.errors import StoreDamaged
from ptah.core.ranking import top_k
from tests.services.conftest import DOCS, Workspace

KEYS = [str(row[0]) for row in DOCS]
TEXTS = [Workspace.text(row) for row in DOCS]
QUERIES = [
    "how do I cancel my subscription in billing",
    "password link",
    "export invoices as pdf",
    "zebra",
    "",
]


def direct_bm25s():
    retriever = bm25s.BM25(method="lucene", k1=1.5, b=0.75)
    retriever.index(bm25s.tokenize(TEXTS, stopwords="en", show_progress=False), show_progress=False)
    return retriever


def test_scores_and_ranking_equal_bm25s_called_directly():
    index = build_index(KEYS, TEXTS, "sha256:test")
    ours = index.scores(QUERIES)
    retriever = direct_bm25s()
    for i, query in enumerate(QUERIES[:4]):
        tokens = bm25s.tokenize([query], stopwords="en", return_ids=False, show_progress=False)
        documents, scores = retriever.retrieve(tokens, k=len(KEYS), show_progress=False)
        theirs = np.zeros(len(KEYS), dtype=np.float32)
        theirs[documents[0]] = scores[0]
        assert ours[i].tobytes() == theirs.tobytes(), query
        # ptah's ranking of these scores: bm25s's order, ties (equal scores) by key ascending
        expected = sorted(
            zip(documents[0].tolist(), scores[0].tolist()), key=lambda p: (-p[1], KEYS[p[0]])
        )
        assert [key for key, _ in top_k(ours[i], KEYS, len(KEYS))] == [KEYS[d] for d, _ in expected]
    assert ours[0].argmax() == 0  # "Cancel a subscription" for the cancel query
    assert not ours[3].any() and not ours[4].any()  # no indexed token: 0 for every row


def test_serialisation_round_trip_scores_the_same():
    index = build_index(KEYS, TEXTS, "sha256:test")
    again = LexicalIndex.from_bytes(index.to_bytes(), "store.db", unpacked_limit(KEYS, TEXTS))
    assert (
        again.keys == KEYS
        and again.fingerprint == "sha256:test"
        and again.settings == index.settings
    )
    assert again.vocabulary == index.vocabulary
    assert again.scores(QUERIES).tobytes() == index.scores(QUERIES).tobytes()
    with pytest.raises(StoreDamaged) as raised:
        LexicalIndex.from_bytes(b"not a zip", "store.db", unpacked_limit(KEYS, TEXTS))
    assert str(raised.value) == (
        "store.db is damaged: its stored lexical index does not read (BadZipFile: File is not "
        "a zip file); delete that index's row from its lexical_indexes table, and the next "
        "evaluate builds it again."
    )


def test_an_empty_table_has_an_empty_index():
    index = LexicalIndex.from_bytes(
        build_index([], [], "sha256:none").to_bytes(), "x", unpacked_limit([], [])
    )
    assert index.scores(["anything"]).shape == (1, 0)


def test_the_fingerprint_sees_rows_and_text_but_not_order():
    pairs = [("1:1", "aa"), ("1:2", "bb")]
    base = text_fingerprint(pairs)
    assert base.startswith("sha256:") and len(base) == 71
    assert text_fingerprint(list(reversed(pairs))) == base
    assert text_fingerprint([("1:1", "aa"), ("1:2", "bc")]) != base  # a text changed
    assert text_fingerprint(pairs[:1]) != base  # a row left
    assert text_fingerprint([("1:1", "aa"), ("1:3", "bb")]) != base  # another row
    # the pair boundary is unambiguous: a separator inside a value cannot forge another pair list
    assert text_fingerprint([("a\n", "b")]) != text_fingerprint([("a", "\nb")])


def test_settings_name_everything_a_score_depends_on():
    values = settings()
    assert values["method"] == "lucene" and values["k1"] == 1.5 and values["b"] == 0.75
    assert values["version"] == bm25s.__version__
    assert values["tokenizer"] == {
        "lower": True,
        "pattern": r"(?u)\b\w\w+\b",
        "stopwords": "en",
        "stemmer": None,
    }
    assert settings_key(values) == settings_key(dict(reversed(list(values.items()))))
