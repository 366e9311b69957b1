"""Reading ``judges:`` of the specification: model judges that grade the holes (docs/judges.md).

A part of the specification reader (:mod:`ptah.adapters.spec_fields`), like
:mod:`ptah.adapters.spec_variants`::

    judges:
      encoder: {kind: encoder, generation: minilm, threshold: 0.45}   # grade 1 from a cosine of 0.45
      graded:
        kind: encoder
        model: cross-encoder/ms-marco-MiniLM-L6-v2                      # a cross-encoder scores each pair
        thresholds: {1: 0.0, 2: 4.5}                                    # the highest grade whose score is reached
      gpt:
        kind: chat
        model: gpt-4o-mini
        base_url: https://api.openai.com/v1                             # POST {base_url}/chat/completions
        api_key_env: OPENAI_API_KEY
        max_requests: 2000                                              # the spend cap of one invocation
        timeout_s: 60

A judge's name is 1 to 64 letters, digits, ``.``, ``_`` or ``-``. Every problem
is reported as FILE:LINE: field: message, like the rest of the specification.
"""

from __future__ import annotations

import math
from typing import cast

from ptah.adapters.spec_fields import FieldReader
from ptah.adapters.yaml_nodes import Field, MappingNode, describe, line_of, number
from ptah.core.corpus import MAX_GRADE
from ptah.core.spec import (
    DEFAULT_MAX_JUDGE_REQUESTS,
    DEFAULT_RERANK_BATCH,
    JudgeSettings,
    ServiceSettings,
)

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
        for name, message in getattr(known, "check", _nothing)(settings, set(fields)):
            self.add(message, line=at, field=prefix + name if name else where)
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


def _nothing(settings: object, written: object) -> list[tuple[str, str]]:
    return []
