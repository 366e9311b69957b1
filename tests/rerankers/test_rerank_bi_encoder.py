"""The bi-encoder reranker: a generation's embedder re-scores candidates as float64 dot products,
with the deterministic embedder (exact values by hand) and the real MiniLM."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from ptah.adapters.embedders import open_embedder
from ptah.adapters.rerankers import open_reranker
from ptah.core.errors import EXIT_INPUT, InputError
from ptah.core.spec import GenerationSettings, RerankSettings

DETERMINISTIC = GenerationSettings(
    "det", "ptah/deterministic", dimension=16, query_prefix="query: "
)
MINILM = GenerationSettings("minilm", "sentence-transformers/all-MiniLM-L6-v2")
TEXTS = [
    "reset your password in settings",
    "export invoices as csv",
    "password password",
    "",
    "cancel a plan",
]


def dot(left, right) -> float:
    """The float64 dot product of two float32 vectors, the exact products added in dimension
    order."""
    total = 0.0
    for a, b in zip(left.tolist(), right.tolist()):
        total += a * b
    return total


def opened(context, generation: GenerationSettings, **settings):
    embedders = {generation.name: open_embedder(generation, context.root)}
    within = replace(context, embedder=embedders.__getitem__)
    return open_reranker(
        RerankSettings("bi-encoder", generation=generation.name, **settings), within
    ), embedders


def test_scores_are_the_float64_dot_products_of_the_query_and_each_text(context):
    reranker, _ = opened(context, DETERMINISTIC)
    scores = reranker.scores("how to reset a password", TEXTS)
    by_hand = open_embedder(DETERMINISTIC, context.root)
    query = by_hand.embed_queries(["how to reset a password"])[0]
    assert scores.dtype == np.float64
    assert scores.tolist() == [dot(query, by_hand.embed_documents([text])[0]) for text in TEXTS]
    assert scores[0] > scores[1] and scores[2] > scores[4]  # shared words score
    assert reranker.scores("how to reset a password", TEXTS[::-1]).tolist() == scores[::-1].tolist()
    assert reranker.describe() == {"kind": "bi-encoder", "generation": "det", "dimension": 16}


def test_each_text_is_embedded_once_by_itself_and_kept(context):
    reranker, embedders = opened(context, DETERMINISTIC)
    embedder = embedders["det"]
    reranker.scores("first query", TEXTS[:3])
    reranker.scores("second query", [TEXTS[2], TEXTS[3], TEXTS[0], TEXTS[3]])
    reranker.scores("first query", TEXTS[:1])
    assert embedder.calls == [
        ("documents", [TEXTS[0]]),
        ("documents", [TEXTS[1]]),
        ("documents", [TEXTS[2]]),
        ("queries", ["first query"]),
        ("documents", [TEXTS[3]]),
        ("queries", ["second query"]),
    ]
    assert reranker.scores("q", []).tolist() == []


def test_a_bi_encoder_without_a_generation_is_exit_2(context):
    with pytest.raises(InputError) as info:
        open_reranker(RerankSettings("bi-encoder"), context)
    assert (info.value.exit_code, str(info.value)) == (
        EXIT_INPUT,
        "the bi-encoder reranker needs generation: the generation whose model re-scores the candidates",
    )


def test_minilm_puts_the_relevant_text_above_the_unrelated_ones(context):
    reranker, embedders = opened(context, MINILM)
    texts = [
        "Our office is closed on public holidays.",
        "To reset your password, open Settings and choose Reset password; a link is emailed to you.",
        "Invoices can be exported as CSV from the billing page.",
    ]
    scores = reranker.scores("How do I reset my password?", texts)
    assert int(np.argmax(scores)) == 1 and scores[1] > 0.5 and max(scores[0], scores[2]) < 0.3
    model = embedders["minilm"]
    query = model.embed_queries(["How do I reset my password?"])[0]
    assert scores.tolist() == [dot(query, model.embed_documents([text])[0]) for text in texts]
