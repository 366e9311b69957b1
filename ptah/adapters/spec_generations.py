"""Reading ``generations:`` of the specification: each generation's model and, for a service, its
endpoint (format: docs/specification.md).

Part of the specification reader (:mod:`ptah.adapters.spec_fields`). A generation embedded by a
service names a ``provider`` (``openai``: any server speaking the OpenAI embeddings API) with
``model``, ``base_url`` (default ``https://api.openai.com/v1``; http or https, no credentials),
``api_key_env`` (default ``OPENAI_API_KEY``; null for a server that wants no key: the key itself is
never in the file, read when texts must be embedded), optional ``dimensions``, ``batch_size``
(inputs a request, default 64), ``max_concurrency`` (default 4) and ``timeout_s`` (one request in
all, default 60).

An *external* generation names the column of ``source.table`` that holds each row's vector
(``vectors: {column: embedding}``: pgvector ``vector``/``halfvec``, or in SQLite a float32 BLOB or
JSON array text); its model or provider embeds the queries only, so ``text`` and
``document_prefix`` are refused beside it. A local model runs on torch unless ``backend: onnx``
(the ``onnx`` extra), optionally ``quantize: int8``; both are refused for a service and for
``ptah/deterministic``, and ``quantize`` without ``backend: onnx``.
"""

from __future__ import annotations

from ptah.adapters.spec_fields import _NAME, FieldReader
from ptah.adapters.yaml_nodes import Field, MappingNode, describe, is_null, line_of
from ptah.core.spec import (
    DEFAULT_BACKEND,
    DEFAULT_BATCH_SIZE,
    DEFAULT_DETERMINISTIC_DIMENSION,
    DEFAULT_SERVICE_TIMEOUT_S,
    DETERMINISTIC_MODEL,
    GenerationSettings,
    ServiceSettings,
)

MAX_BATCH_SIZE = 65_536
MAX_DIMENSION = 65_536
MAX_SEQ_LENGTH = 1_000_000
MAX_CONCURRENCY = 64

PROVIDERS = ("openai",)
DEFAULT_BASE_URLS = {"openai": "https://api.openai.com/v1"}
DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
BACKENDS = (DEFAULT_BACKEND, "onnx")
QUANTIZATIONS = ("int8",)  # of an ONNX model's weights

DEFAULT_MAX_CONCURRENCY = 4

SERVICE_FIELDS = (
    "provider",
    "base_url",
    "api_key_env",
    "dimensions",
    "max_concurrency",
    "timeout_s",
)
GENERATION_FIELDS = (
    "model",
    "normalize",
    "max_seq_length",
    "query_prefix",
    "document_prefix",
    "text",
    "batch_size",
    "dimension",
    *SERVICE_FIELDS,
    "vectors",
    "backend",
    "quantize",
)
DOCUMENT_ONLY = (
    "text",
    "document_prefix",
)  # settings of the rows' embedding: nothing for an external generation


class GenerationFields(FieldReader):
    """The ``generations:`` part of the specification reader (see module docs)."""

    def generations(self, field: Field | None, line: int) -> dict[str, GenerationSettings] | None:
        if field is None or is_null(field.value):
            self.add(
                "missing; declare at least one generation under generations: with its model",
                line=line if field is None else line_of(field.key),
                field="generations",
            )
            return None
        node = field.value
        if not isinstance(node, MappingNode) or not node.value:
            self.add(
                f"must map generation names to their settings, not {describe(node)}",
                line=line_of(node),
                field="generations",
            )
            return None
        entries = self.fields(
            node, tuple(str(k.value) for k, _ in node.value), "generations.", "generations"
        )
        self.declared = list(entries)
        found = {name: self.generation(name, entry) for name, entry in entries.items()}
        return found if found and None not in found.values() else None  # type: ignore[return-value]

    def generation(self, name: str, field: Field) -> GenerationSettings | None:
        where = f"generations.{name}"
        if not _NAME.match(name):
            self.add(
                "a generation name is 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit",
                line=line_of(field.key),
                field=where,
            )
            return None
        if not isinstance(field.value, MappingNode):
            self.add(
                f"must be a mapping with at least model:, not {describe(field.value)}",
                line=line_of(field.value),
                field=where,
            )
            return None
        at = line_of(field.key)
        prefix = where + "."
        fields = self.fields(field.value, GENERATION_FIELDS, prefix, where)
        model = self.text(
            fields,
            "model",
            prefix,
            at,
            hint="name a model, e.g. sentence-transformers/all-MiniLM-L6-v2, or ptah/deterministic",
        )
        count = len(self.problems)
        normalize = self.boolean(
            fields.get("normalize"),
            prefix + "normalize",
            default=True,
            hint="; leave it out for the default, true (vectors scaled to unit length)",
        )
        max_seq_length = self.positive(
            fields.get("max_seq_length"),
            prefix + "max_seq_length",
            MAX_SEQ_LENGTH,
            None,
            hint="; leave it out for the model's own limit (256 tokens for MiniLM)",
        )
        query_prefix = (
            self.text(fields, "query_prefix", prefix, at, required=False, empty=True) or ""
        )
        document_prefix = (
            self.text(fields, "document_prefix", prefix, at, required=False, empty=True) or ""
        )
        text = self.template(fields.get("text"), prefix + "text", at, required=False)
        batch_size = self.positive(
            fields.get("batch_size"), prefix + "batch_size", MAX_BATCH_SIZE, DEFAULT_BATCH_SIZE
        )
        service = self.service(fields, prefix, at)
        dimension = None
        if service is not None:
            dimension = self.positive(
                fields.get("dimensions"), prefix + "dimensions", MAX_DIMENSION, None
            )
            self.refuse(
                fields,
                prefix,
                "dimension",
                "applies to model ptah/deterministic only; "
                "to ask a service for fewer dimensions write dimensions:",
            )
            self.refuse(
                fields,
                prefix,
                "max_seq_length",
                "applies to a local model only; a service truncates "
                "texts by its own rules; remove it",
            )
        elif model == DETERMINISTIC_MODEL:
            dimension = self.positive(
                fields.get("dimension"),
                prefix + "dimension",
                MAX_DIMENSION,
                DEFAULT_DETERMINISTIC_DIMENSION,
            )
        else:
            self.refuse(
                fields,
                prefix,
                "dimension",
                f"applies to model {DETERMINISTIC_MODEL} only (a real model's "
                "dimension comes from its weights); remove it",
            )
        vectors = self.vectors(fields, prefix) if "vectors" in fields else None
        backend, quantize = self.backend(
            fields, prefix, at, local=service is None and model != DETERMINISTIC_MODEL
        )
        if model is None or len(self.problems) > count:
            return None
        return GenerationSettings(
            name,
            model,
            normalize,
            max_seq_length,
            query_prefix,
            document_prefix,
            text,
            batch_size,
            dimension,
            service,
            vectors,
            backend,
            quantize,
        )

    def backend(
        self, fields: dict[str, Field], prefix: str, at: int, *, local: bool
    ) -> tuple[str, str | None]:
        """``backend:`` and ``quantize:``: what runs a local model, and how its weights are
        stored."""
        if not local:
            for name in ("backend", "quantize"):
                self.refuse(
                    fields,
                    prefix,
                    name,
                    "applies to a local sentence-transformers model only; remove it",
                )
            return DEFAULT_BACKEND, None
        backend = self.choice(fields, "backend", prefix, at, BACKENDS) or DEFAULT_BACKEND
        quantize = self.choice(fields, "quantize", prefix, at, QUANTIZATIONS)
        if quantize is not None and backend != "onnx":
            self.add(
                "applies to backend: onnx only; add backend: onnx or remove it",
                line=line_of(fields["quantize"].key),
                field=prefix + "quantize",
            )
        return backend, quantize

    def choice(
        self, fields: dict[str, Field], name: str, prefix: str, at: int, allowed: tuple[str, ...]
    ) -> str | None:
        """The field ``name`` when it is one of ``allowed`` (None when absent; a problem
        otherwise)."""
        hint = "write " + " or ".join(allowed)
        value = self.text(fields, name, prefix, at, required=False, hint=hint)
        if value is not None and value not in allowed:
            self.add(
                f'"{value}" is not one ptah knows; {hint}',
                line=line_of(fields[name].value),
                field=prefix + name,
            )
            return None
        return value

    def vectors(self, fields: dict[str, Field], prefix: str) -> str | None:
        """The column ``vectors: {column: NAME}`` names; fields that only shape the rows' text are
        refused."""
        node = fields["vectors"].value
        entries = (
            self.fields(node, ("column",), prefix + "vectors.", prefix + "vectors")
            if isinstance(node, MappingNode)
            else None
        )
        column = (
            self.text(
                entries,
                "column",
                prefix + "vectors.",
                line_of(node),
                hint="name the column that holds each row's vector",
            )
            if entries is not None
            else None
        )
        if entries is None:
            self.add(
                f"must be a mapping like {{column: embedding}}, not {describe(node)}",
                line=line_of(node),
                field=prefix + "vectors",
            )
        for name in DOCUMENT_ONLY:
            self.refuse(
                fields,
                prefix,
                name,
                "has no effect beside vectors: (ptah embeds no row text for a "
                "generation whose vectors are the table's); remove it",
            )
        return column

    def service(self, fields: dict[str, Field], prefix: str, at: int) -> ServiceSettings | None:
        """The service a ``provider:`` names; without one, each service field is refused as out of
        place."""
        if "provider" not in fields:
            for name in SERVICE_FIELDS:
                self.refuse(
                    fields,
                    prefix,
                    name,
                    "applies to a generation embedded by a service only; "
                    "add provider: openai or remove it",
                )
            return None
        provider = self.text(fields, "provider", prefix, at, hint="write provider: openai")
        if provider is not None and provider not in PROVIDERS:
            self.add(
                f'"{provider}" is not a provider ptah knows; write provider: {" or ".join(PROVIDERS)}',
                line=line_of(fields["provider"].value),
                field=prefix + "provider",
            )
            provider = None
        base_url, key_env, timeout_s = self.endpoint(
            fields,
            prefix,
            at,
            url_hint="remove it for the provider's own",
            url_required=False,
            key_env=DEFAULT_API_KEY_ENV,
            key_hint="name the environment variable that holds the key",
        )
        concurrency = self.positive(
            fields.get("max_concurrency"),
            prefix + "max_concurrency",
            MAX_CONCURRENCY,
            DEFAULT_MAX_CONCURRENCY,
        )
        if provider is None:
            return None
        return ServiceSettings(
            provider,
            (base_url or DEFAULT_BASE_URLS[provider]).rstrip("/"),
            key_env,
            concurrency or DEFAULT_MAX_CONCURRENCY,
            timeout_s or DEFAULT_SERVICE_TIMEOUT_S,
        )
