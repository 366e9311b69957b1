"""``variants:`` in ptah.yaml: each variant read into its settings, every problem as FILE:LINE:
field: message."""

from __future__ import annotations

from ptah.adapters.spec_yaml import load_spec
from ptah.core.spec import RerankSettings, ServiceSettings, Variant
from tests.adapters.test_spec_yaml import VALID, problems, write


def test_variants_are_read_with_the_channel_their_channels_make(tmp_path):
    path = write(
        tmp_path,
        VALID
        + """\
variants:
  lexical: {channels: [lexical]}
  hybrid: {channels: [vector, lexical], generation: body-only}
  reranked:
    channels: [lexical]
    rerank: {kind: bi-encoder, generation: minilm, candidates: 50}
  served: {channels: [vector], search: index, ef_search: 80}
  cohere:
    channels: [hybrid]
    rerank:
      kind: service
      api: tei
      base_url: http://127.0.0.1:7997/
      model: bge-reranker
      api_key_env: RERANK_KEY
      timeout_s: 30
      batch_size: 8
  toy:
    channels: [vector]
    rerank: {kind: toy, options: {depth: 3, names: [a, b]}}
""",
    )
    variants = load_spec(path, env={}).variants
    assert variants["lexical"] == Variant("lexical", ("lexical",), "lexical")
    assert variants["hybrid"] == Variant("hybrid", ("vector", "lexical"), "hybrid", "body-only")
    assert variants["reranked"].rerank == RerankSettings("bi-encoder", 50, "minilm")
    assert variants["served"] == Variant(
        "served", ("vector",), "vector", search="index", ef_search=80
    )
    assert variants["cohere"].channel == "hybrid"
    assert variants["cohere"].rerank == RerankSettings(
        "service",
        100,
        None,
        "bge-reranker",
        ServiceSettings("tei", "http://127.0.0.1:7997", "RERANK_KEY", 1, 30),
        8,
    )
    assert variants["cohere"].rerank.controls()["service"] == {
        "api": "tei",
        "base_url": "http://127.0.0.1:7997",
        "timeout_s": 30,
    }
    assert dict(variants["toy"].rerank.options) == {"depth": "3", "names": ["a", "b"]}
    assert list(variants) == ["lexical", "hybrid", "reranked", "served", "cohere", "toy"]


def test_a_spec_without_variants_has_none(tmp_path):
    assert load_spec(write(tmp_path, VALID), env={}).variants == {}


def test_every_problem_of_a_variant_is_reported_at_its_line(tmp_path):
    path = write(
        tmp_path,
        VALID
        + """\
variants:
  a: {channels: [lexical, image]}
  b: {channels: [vector], generation: nope}
  c: {channels: [vector], ef_search: 10}
  d: {channels: [vector], rerank: {kind: cross-encoder, base_url: "http://x"}}
  e: {channels: [vector], rerank: {kind: bi-encoder}}
  f: {channels: [vector], rerank: {kind: service, api: grpc, base_url: "http://u:p@x", api_key_env: sk-123}}
  g: {generation: minilm}
  "h h": {channels: [vector]}
  i: {channels: [vector, vector]}
""",
    )
    at = f"{path}:"
    assert problems(path) == [
        f"{at}22: variants.a.channels: ptah fuses [lexical, vector] (the hybrid channel), not [lexical, image]; "
        "list one channel or those two",
        f"{at}23: variants.b.generation: names no generation declared under generations:; declare it or write one "
        "of minilm, body-only",
        f"{at}24: variants.c.ef_search: applies to index search; add search: index (or both)",
        f"{at}25: variants.d.rerank.base_url: applies to kind: service only; remove it",
        f"{at}25: variants.d.rerank.model: missing; a cross-encoder needs model: (a local folder, an installed model "
        "package or a cached Hugging Face name)",
        f"{at}26: variants.e.rerank.generation: missing; a bi-encoder re-scores with a generation's model: name it",
        f'{at}27: variants.f.rerank.api: "grpc" is not a rerank API ptah speaks; write cohere or tei',
        f"{at}27: variants.f.rerank.base_url: must not hold credentials; put the key in the variable api_key_env "
        "names",
        f"{at}27: variants.f.rerank.api_key_env: must name an environment variable (letters, digits and _), not the "
        "key itself",
        f"{at}28: variants.g.channels: missing; list the channels it searches, e.g. [vector], [lexical] or "
        "[lexical, vector]",
        f"{at}29: variants.h h: a variant name is 1 to 64 letters, digits, '.', '_' or '-', starting with a letter "
        "or digit",
        f"{at}30: variants.i.channels: must be a list of distinct channel names, e.g. [lexical, vector], not a list",
    ]
