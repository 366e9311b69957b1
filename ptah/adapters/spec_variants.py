"""Reading ``variants:`` of the specification: named configurations evaluated side by side.

A part of the specification reader (:mod:`ptah.adapters.spec_fields`), like
:mod:`ptah.adapters.spec_generations`. Each variant names the channels it
fuses, its generation, and optionally a rerank stage and its own search::

    variants:
      lexical:  {channels: [lexical]}
      hybrid:   {channels: [lexical, vector], generation: minilm}
      reranked:
        channels: [lexical]
        generation: minilm                 # default: the active generation
        rerank:
          kind: bi-encoder                 # or cross-encoder, service, or a plug-in's kind
          generation: minilm               # bi-encoder: whose model re-scores; every kind: whose text is scored
          candidates: 50                   # the channel's top rows re-scored (default 100)
      served:
        channels: [vector]
        search: index                      # exact (default), index or both
        ef_search: 100
      cohere:
        channels: [vector]
        rerank:
          kind: service
          api: cohere                      # or tei (text-embeddings-inference: texts -> [{index, score}])
          base_url: http://127.0.0.1:7997  # POST {base_url}/rerank
          model: rerank-english-v3.0
          api_key_env: RERANK_API_KEY      # default none: a server that wants no key
          timeout_s: 60
      team:
        channels: [retriever]              # a plug-in channel (ptah.retriever) ...
        options: {run: runs/team.jsonl}    # ... reads its own options:, checking them when it measures

``channels`` is ``[vector]``, ``[lexical]``, ``[lexical, vector]`` (the hybrid
channel's fusion; ``[hybrid]`` says the same) or one registered channel's
name. A name is 1 to 64 letters, digits, ``.``, ``_`` or ``-``. A rerank's
``model`` is a cross-encoder's local folder, installed model package or cached
Hugging Face name, or the model a service is asked for.
"""

from __future__ import annotations

from typing import cast

from ptah.adapters.spec_fields import FieldReader
from ptah.adapters.spec_generations import MAX_BATCH_SIZE
from ptah.adapters.yaml_nodes import (
    Field,
    MappingNode,
    ScalarNode,
    SequenceNode,
    describe,
    is_null,
    line_of,
)
from ptah.core.spec import (
    DEFAULT_CANDIDATES,
    DEFAULT_RERANK_BATCH,
    RERANK_APIS,
    RerankSettings,
    ServiceSettings,
    Variant,
)

VARIANT_FIELDS = ("channels", "generation", "rerank", "search", "ef_search", "options")
RERANK_FIELDS = (
    "kind",
    "candidates",
    "generation",
    "model",
    "batch_size",
    "api",
    "base_url",
    "api_key_env",
    "timeout_s",
    "options",
)
SERVICE_ONLY = ("api", "base_url", "api_key_env", "timeout_s")
MAX_CANDIDATES = 10_000
SEARCH_MODES = ("exact", "index", "both")
FUSED = {
    ("vector",): "vector",
    ("lexical",): "lexical",
    ("lexical", "vector"): "hybrid",
    ("hybrid",): "hybrid",
}


class VariantFields(FieldReader):
    """The ``variants:`` part of the specification reader (see module docs)."""

    def variants(self, field: Field | None) -> dict[str, Variant]:
        return self.named(field, "variants", "variant", "channels", self.variant)

    def variant(self, name: str, field: Field) -> Variant | None:
        where, count = f"variants.{name}", len(self.problems)
        at, prefix = line_of(field.key), where + "."
        fields = self.fields(
            cast(MappingNode, field.value), VARIANT_FIELDS, prefix, where
        )  # named() checked it
        channels = self.channel_list(fields.get("channels"), prefix + "channels", at)
        generation = self.declared_generation(fields, prefix, at)
        search = self.text(fields, "search", prefix, at, required=False)
        if search is not None and search not in SEARCH_MODES:
            self.add(
                f'"{search}" is not a search mode; write {", ".join(SEARCH_MODES)}',
                line=line_of(fields["search"].value),
                field=prefix + "search",
            )
        ef_search = self.positive(fields.get("ef_search"), prefix + "ef_search", 1000, None)
        if ef_search is not None and search in (None, "exact"):
            self.add(
                "applies to index search; add search: index (or both)",
                line=line_of(fields["ef_search"].key),
                field=prefix + "ef_search",
            )
        rerank = self.rerank(fields["rerank"], prefix + "rerank") if "rerank" in fields else None
        options = self.options(fields, prefix)
        if channels is None or len(self.problems) > count:
            return None
        return Variant(
            name,
            channels,
            FUSED.get(tuple(sorted(channels)), channels[0]),
            generation,
            rerank,
            search,
            ef_search,
            options,
        )

    def channel_list(self, field: Field | None, where: str, at: int) -> tuple[str, ...] | None:
        if field is None:
            self.add(
                "missing; list the channels it searches, e.g. [vector], [lexical] or [lexical, vector]",
                line=at,
                field=where,
            )
            return None
        node = field.value
        names = (
            [
                str(item.value)
                for item in node.value
                if isinstance(item, ScalarNode) and not is_null(item)
            ]
            if isinstance(node, SequenceNode)
            else []
        )
        if not names or len(names) != len(node.value) or len(set(names)) != len(names):
            self.add(
                f"must be a list of distinct channel names, e.g. [lexical, vector], not {describe(node)}",
                line=line_of(node),
                field=where,
            )
            return None
        if len(names) > 1 and tuple(sorted(names)) not in FUSED:
            self.add(
                f"ptah fuses [lexical, vector] (the hybrid channel), not [{', '.join(names)}]; list one channel "
                "or those two",
                line=line_of(node),
                field=where,
            )
            return None
        return tuple(names)

    def rerank(self, field: Field, where: str) -> RerankSettings | None:
        node, count = field.value, len(self.problems)
        if not isinstance(node, MappingNode):
            self.add(
                f"must be a mapping with at least kind:, not {describe(node)}",
                line=line_of(node),
                field=where,
            )
            return None
        at, prefix = line_of(field.key), where + "."
        fields = self.fields(node, RERANK_FIELDS, prefix, where)
        kind = self.text(
            fields, "kind", prefix, at, hint="write kind: cross-encoder, bi-encoder or service"
        )
        candidates = self.positive(
            fields.get("candidates"), prefix + "candidates", MAX_CANDIDATES, DEFAULT_CANDIDATES
        )
        generation = self.declared_generation(fields, prefix, at)
        model = self.text(fields, "model", prefix, at, required=False)
        batch_size = self.positive(
            fields.get("batch_size"), prefix + "batch_size", MAX_BATCH_SIZE, DEFAULT_RERANK_BATCH
        )
        options = self.options(fields, prefix)
        known = None if kind is None else rerank_kind(kind)
        calls = getattr(known, "service", False)
        service = self.rerank_service(fields, prefix, at) if calls else None
        for name in () if calls else SERVICE_ONLY:
            self.refuse(fields, prefix, name, "applies to kind: service only; remove it")
        settings = RerankSettings(
            kind or "", candidates, generation, model, service, batch_size, options
        )
        for name, message in getattr(known, "check", _nothing)(settings, set(fields)):
            self.add(message, line=at, field=prefix + name if name else where)
        if kind is None or len(self.problems) > count:
            return None
        return settings

    def rerank_service(
        self, fields: dict[str, Field], prefix: str, at: int
    ) -> ServiceSettings | None:
        api = self.text(fields, "api", prefix, at, required=False) or RERANK_APIS[0]
        if api not in RERANK_APIS:
            self.add(
                f'"{api}" is not a rerank API ptah speaks; write {" or ".join(RERANK_APIS)}',
                line=line_of(fields["api"].value),
                field=prefix + "api",
            )
        base_url, key_env, timeout_s = self.endpoint(
            fields, prefix, at, url_hint="write the server's URL, e.g. http://127.0.0.1:7997"
        )
        if base_url is None:
            return None
        return ServiceSettings(api, base_url.rstrip("/"), key_env, 1, timeout_s)


def rerank_kind(name: str) -> object | None:
    """The registered reranker kind ``name`` (it checks its own settings), or None: an unknown
    kind is refused when the reranker is opened."""
    from ptah.adapters.rerankers.registry import REGISTRY

    return REGISTRY.find(name)


def _nothing(settings: object, written: object) -> list[tuple[str, str]]:
    return []
