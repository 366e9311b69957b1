"""Reading ``variants:`` and ``judges:`` of the specification (formats: docs/variants.md,
docs/judges.md).

Part of the specification reader, like :mod:`ptah.adapters.spec_generations`; every problem is
reported as ``FILE:LINE: field: message``. A variant names the channels it fuses, its generation
(default: the active one), and optionally its own search (``search: exact``, ``index`` or
``both``, ``ef_search``) and a rerank stage (``kind``: ``bi-encoder``, ``cross-encoder``,
``service`` or a plug-in's; ``generation``, whose text is scored and, for a bi-encoder, whose model
re-scores; ``candidates``, default 100). ``channels`` is ``[vector]``, ``[lexical]``, ``[lexical,
vector]`` (the hybrid fusion; ``[hybrid]`` says the same) or one registered channel's name, whose
``options:`` are read as plain values and checked by the channel when it measures. A variant's or
judge's name is 1 to 64 letters, digits, ``.``, ``_`` or ``-``. A rerank's ``model`` is a
cross-encoder's local folder, installed model package or cached Hugging Face name, or the model a
service is asked for. A judge is an ``encoder`` (a ``threshold`` on the cosine, or a
cross-encoder's ``thresholds`` per grade) or a ``chat`` model (``base_url``, ``api_key_env``,
``max_requests``: the spend cap of one invocation, ``timeout_s``).
"""

from __future__ import annotations

import math
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
    number,
)
from ptah.core.corpus import MAX_GRADE
from ptah.core.spec import (
    DEFAULT_CANDIDATES,
    DEFAULT_MAX_JUDGE_REQUESTS,
    DEFAULT_RERANK_BATCH,
    RERANK_APIS,
    JudgeSettings,
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
        self.kind_checks(known, settings, fields, where, at)
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


JUDGE_FIELDS = (
    "kind",
    "model",
    "generation",
    "threshold",
    "thresholds",
    "base_url",
    "api_key_env",
    "timeout_s",
    "max_requests",
    "batch_size",
    "options",
)
CHAT_ONLY = ("base_url", "api_key_env", "timeout_s")  # what a kind that calls a service reads
MAX_REQUESTS = 10_000_000
MAX_BATCH = 4096


class JudgeFields(FieldReader):
    """The ``judges:`` part of the specification reader (see module docs)."""

    def judges(self, field: Field | None) -> dict[str, JudgeSettings]:
        return self.named(field, "judges", "judge", "kind", self.judge)

    def judge(self, name: str, field: Field) -> JudgeSettings | None:
        where, count = f"judges.{name}", len(self.problems)
        at, prefix = line_of(field.key), where + "."
        fields = self.fields(
            cast(MappingNode, field.value), JUDGE_FIELDS, prefix, where
        )  # named() checked it
        kind = self.text(
            fields, "kind", prefix, at, hint="write kind: encoder or chat (or a plug-in's kind)"
        )
        model = self.text(fields, "model", prefix, at, required=False)
        generation = self.declared_generation(fields, prefix, at)
        thresholds = self.thresholds(fields, prefix)
        max_requests = self.positive(
            fields.get("max_requests"),
            prefix + "max_requests",
            MAX_REQUESTS,
            DEFAULT_MAX_JUDGE_REQUESTS,
        )
        batch_size = self.positive(
            fields.get("batch_size"), prefix + "batch_size", MAX_BATCH, DEFAULT_RERANK_BATCH
        )
        options = self.options(fields, prefix)
        known = None if kind is None else judge_kind(kind)
        calls = getattr(known, "service", False)
        service = self.chat_service(fields, prefix, at) if calls else None
        for other in () if calls else CHAT_ONLY:
            self.refuse(fields, prefix, other, "applies to kind: chat only; remove it")
        settings = JudgeSettings(
            kind or "", model, generation, thresholds, service, max_requests, batch_size, options
        )
        self.kind_checks(known, settings, fields, where, at)
        if kind is None or len(self.problems) > count:
            return None
        return settings

    def thresholds(self, fields: dict[str, Field], prefix: str) -> dict[float, float]:
        if "threshold" in fields and "thresholds" in fields:
            self.add(
                "write threshold: or thresholds:, not both",
                line=line_of(fields["thresholds"].key),
                field=prefix + "thresholds",
            )
            return {}
        if "threshold" in fields:
            score = self.score(fields["threshold"], prefix + "threshold")
            return {} if score is None else {1.0: score}
        field = fields.get("thresholds")
        if field is None:
            return {}
        node = field.value
        if not isinstance(node, MappingNode) or not node.value:
            self.add(
                f"must map grades to the least score that earns them, e.g. {{1: 0.4, 2: 0.7}}, not "
                f"{describe(node)}",
                line=line_of(node),
                field=prefix + "thresholds",
            )
            return {}
        found: dict[float, float] = {}
        for key, value in node.value:
            grade = number(key)
            if grade is None or not 0 < grade <= MAX_GRADE or grade in found:
                self.add(
                    f"a grade is a number above 0 and at most {MAX_GRADE:,}, given once, not {describe(key)}",
                    line=line_of(key),
                    field=prefix + "thresholds",
                )
                continue
            score = self.score(Field(str(key.value), key, value), f"{prefix}thresholds.{key.value}")
            if score is not None:
                found[float(grade)] = score
        ordered = [found[grade] for grade in sorted(found)]
        if any(later < earlier for earlier, later in zip(ordered, ordered[1:])):
            self.add(
                "a higher grade needs a score at least as high as a lower one's",
                line=line_of(node),
                field=prefix + "thresholds",
            )
        return found

    def score(self, field: Field, where: str) -> float | None:
        value = number(field.value)
        if value is None or not math.isfinite(value):
            self.add(
                f"must be a finite number (a score), not {describe(field.value)}",
                line=line_of(field.value),
                field=where,
            )
            return None
        return float(value)

    def chat_service(
        self, fields: dict[str, Field], prefix: str, at: int
    ) -> ServiceSettings | None:
        base_url, key_env, timeout_s = self.endpoint(
            fields,
            prefix,
            at,
            url_hint="write the server's URL up to /v1, e.g. https://api.openai.com/v1",
        )
        if base_url is None:
            return None
        return ServiceSettings("openai", base_url.rstrip("/"), key_env, 1, timeout_s)


def judge_kind(name: str) -> object | None:
    """The registered judge kind ``name`` (it checks its own settings), or None: an unknown kind
    is refused when the judge is opened."""
    from ptah.adapters.judges.registry import REGISTRY

    return REGISTRY.find(name)
