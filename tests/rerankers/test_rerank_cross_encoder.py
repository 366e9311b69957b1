"""The cross-encoder reranker on a tiny randomly initialised BERT saved to a temporary folder: the
real loading (resolve_model, sentence-transformers' CrossEncoder) and scoring path, checked against
transformers' own forward pass."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from ptah.adapters.embedders.resolve import hub_cache_dir
from ptah.adapters.rerankers import open_reranker
from ptah.core.errors import EXIT_OPERATIONAL, ModelUnavailable, OperationalError
from ptah.core.spec import RerankSettings

WORDS = "the a cat dog sat on mat how do i reset my password export invoices billing refund".split()
QUERY = "how do i reset my password"
TEXTS = [
    "reset my password",
    "the cat sat on the mat",
    "export invoices",
    "password",
    "billing refund the dog",
    "how do i export billing",
]


def save_tiny_model(folder: Path, *, nan: bool = False, labels: int = 1) -> Path:
    """A 2-layer BERT with ``labels`` outputs and a 17-word vocabulary, randomly initialised (seed
    0), and its tokenizer; with ``nan`` its classifier's bias is NaN."""
    import torch
    import transformers
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    folder.mkdir(parents=True)
    vocabulary = folder / "vocab.txt"
    vocabulary.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=5 + len(WORDS),
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
        num_labels=labels,
        initializer_range=0.5,
    )
    model = BertForSequenceClassification(config).eval()
    if nan:
        with torch.no_grad():
            model.classifier.bias.fill_(float("nan"))
    model.save_pretrained(folder)
    # transformers 5 reads the vocabulary from vocab= and ignores 4.x's vocab_file= (every word then
    # [UNK])
    tokenizer = BertTokenizerFast(
        **{"vocab" if transformers.__version__ >= "5" else "vocab_file": str(vocabulary)}
    )
    assert tokenizer("cat dog")["input_ids"] == [
        2,
        5 + WORDS.index("cat"),
        5 + WORDS.index("dog"),
        3,
    ]
    tokenizer.save_pretrained(folder)
    return folder


def forward(folder: Path, query: str, texts: list[str], batch_size: int) -> list[float]:
    """Each pair's logit from transformers directly, the pairs padded together ``batch_size`` at a
    time in order, longest first within a batch as sentence-transformers orders them (a row's last
    bits depend on its place)."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    model = AutoModelForSequenceClassification.from_pretrained(folder).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    logits: list[float] = []
    with torch.no_grad():
        for start in range(0, len(texts), batch_size):
            part = sorted(
                range(start, min(len(texts), start + batch_size)), key=lambda i: -len(texts[i])
            )
            inputs = tokenizer(
                [query] * len(part), [texts[i] for i in part], padding=True, return_tensors="pt"
            )
            scored = dict(zip(part, model(**inputs).logits[:, 0].tolist()))
            logits.extend(scored[i] for i in sorted(part))
    return logits


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return save_tiny_model(tmp_path_factory.mktemp("cross") / "tiny")


def test_scores_are_the_models_logits_for_each_pair_in_order(tiny, context):
    reranker = open_reranker(
        RerankSettings("cross-encoder", model=str(tiny), batch_size=3), context
    )
    scores = reranker.scores(QUERY, TEXTS)
    expected = forward(tiny, QUERY, TEXTS, batch_size=3)
    assert scores.dtype == np.float64 and scores.shape == (6,)
    assert np.abs(scores - expected).max() <= 1e-6
    assert (
        len(set(expected)) == 6 and max(expected) - min(expected) > 1.0
    )  # the pairs tell apart: order is tested
    assert np.array_equal(reranker.scores(QUERY, TEXTS), scores)  # the same batches, the same bits
    reversed_scores = reranker.scores(QUERY, TEXTS[::-1])[::-1]
    assert (
        np.abs(reversed_scores - scores).max() <= 1e-5
    )  # other batches: padding moves only the last bits
    assert reranker.scores(QUERY, []).tolist() == []


def test_batch_size_one_scores_each_pair_alone(tiny, context):
    one_at_a_time = open_reranker(
        RerankSettings("cross-encoder", model=str(tiny), batch_size=1), context
    )
    scores = one_at_a_time.scores(QUERY, TEXTS)
    assert np.abs(scores - forward(tiny, QUERY, TEXTS, batch_size=1)).max() <= 1e-6
    batched = open_reranker(RerankSettings("cross-encoder", model=str(tiny), batch_size=3), context)
    assert np.abs(scores - batched.scores(QUERY, TEXTS)).max() <= 1e-5
    assert np.array_equal(np.argsort(-scores), np.argsort(-batched.scores(QUERY, TEXTS)))


def test_describe_names_the_model_its_digest_and_the_libraries(tiny, context):
    from importlib import metadata

    from ptah.adapters.embedders.resolve import model_digest

    described = open_reranker(RerankSettings("cross-encoder", model=str(tiny)), context).describe()
    assert described == {
        "kind": "cross-encoder",
        "model": str(tiny),
        "model_digest": model_digest(tiny),
        "versions": {
            name: metadata.version(name)
            for name in ("sentence-transformers", "transformers", "torch")
        },
    }


def test_a_relative_model_path_resolves_against_the_specs_folder(tiny, context):
    within = replace(context, root=str(tiny.parent))
    assert (
        open_reranker(RerankSettings("cross-encoder", model="tiny"), within).describe()["model"]
        == "tiny"
    )


def test_a_missing_model_is_exit_3_saying_where_it_looked(context):
    with pytest.raises(ModelUnavailable) as info:
        open_reranker(RerankSettings("cross-encoder", model="models/absent-reranker"), context)
    assert info.value.exit_code == EXIT_OPERATIONAL
    hub = hub_cache_dir(context.env)
    # where it looked and how to provide it: never a package to pip install, which may not exist
    assert str(info.value) == (
        f'model "models/absent-reranker" was not found offline; looked for the folder '
        f"{context.root}/models/absent-reranker; the Hugging Face cache folder {hub}/models--models--absent-reranker. "
        f"To provide it, put it into the Hugging Face cache ({hub}): download models/absent-reranker there on a "
        "connected machine and copy the cache folder here, or set model: to a local folder holding it."
    )
    with pytest.raises(ModelUnavailable) as info:
        open_reranker(RerankSettings("cross-encoder", model="./absent"), context)
    assert str(info.value) == (
        f'model "./absent" was not found offline; looked for the folder {context.root}/absent. '
        "To provide it, set model: to a local folder holding it."
    )


def test_a_score_that_is_not_finite_is_exit_3_naming_the_model(tmp_path, context):
    broken = save_tiny_model(tmp_path / "broken", nan=True)
    reranker = open_reranker(RerankSettings("cross-encoder", model=str(broken)), context)
    with pytest.raises(OperationalError) as info:
        reranker.scores(QUERY, TEXTS)
    assert info.value.exit_code == EXIT_OPERATIONAL
    assert str(info.value) == (
        f'the cross-encoder reranker (model "{broken}") gave a score that is not a finite '
        "number (nan), so the candidates cannot be ranked on it"
    )


def test_a_model_with_more_than_one_output_or_unreadable_is_exit_3(tmp_path, context):
    two = save_tiny_model(tmp_path / "two", labels=2)
    with pytest.raises(ModelUnavailable) as info:
        open_reranker(RerankSettings("cross-encoder", model=str(two)), context)
    assert (info.value.exit_code, str(info.value)) == (
        EXIT_OPERATIONAL,
        f'model "{two}" at {two} gives 2 scores a pair; a reranker needs a cross-encoder with one',
    )
    (tmp_path / "hollow").mkdir()
    (tmp_path / "hollow" / "config.json").write_text("{}")
    with pytest.raises(ModelUnavailable) as info:
        open_reranker(
            RerankSettings("cross-encoder", model="hollow"), replace(context, root=str(tmp_path))
        )
    assert info.value.exit_code == EXIT_OPERATIONAL
    assert str(info.value).startswith(
        f'model "hollow" at {tmp_path}/hollow could not be loaded as a cross-encoder: '
    )
