"""The identity of a generation: a digest of everything its vectors depend on.

Canonical form (``ptah-generation@1``): the JSON document ::

    {"document_prefix": DOCUMENT_PREFIX,
     "format": "ptah-generation@1",
     "max_seq_length": N or null,
     "model": MODEL,
     "normalize": true|false,
     "query_prefix": QUERY_PREFIX,
     "text_template": TEMPLATE}

where MODEL is ``{"kind": NAME, ...}``: the name of the embedder kind that
handles the model (:mod:`ptah.adapters.embedders.registry`) and the parts its
``identity_parts`` gives -- for ``sentence-transformers``, ``{"digest":
"sha256:…"}`` (the model folder's digest,
:func:`ptah.adapters.embedders.resolve.model_digest`, which covers weights,
configs, tokenizer and pooling); for ``ptah/deterministic``, ``{"algorithm":
"ptah-deterministic@1", "dimension": D}``. TEMPLATE is the *effective*
template (the generation's ``text`` else ``source.text``). It is serialised
with object keys sorted, separators ``,`` and ``:``, non-ASCII written as
itself, encoded as UTF-8; the identity is ``sha256:`` + its hex SHA-256.

Outside the identity: the generation's display name, the model's *name* (the
same weights found in a folder or in a package are the same model),
``batch_size``, the source's database, table, keys and filter (they choose
rows, not vectors), and library versions (recorded beside, not hashed).

An external generation (``vectors: {column: …}``: the table holds the
vectors) has the canonical form ``ptah-external@1`` instead ::

    {"format": "ptah-external@1",
     "max_seq_length": N or null,
     "model": MODEL,
     "normalize": true|false,
     "query_prefix": QUERY_PREFIX,
     "vectors": {"column": COLUMN, "table": TABLE}}

MODEL being the query embedder's parts as above. The database URL stays out
(it may hold a password); the table and column say which vectors these are,
the rest how queries are embedded against them -- so the query cache kept
under this identity is never used for another model or prefix.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from ptah.adapters.embedders.base import EmbedderKind
from ptah.adapters.embedders.registry import kind_for
from ptah.core.errors import PluginError
from ptah.core.spec import GenerationSettings, SourceSpec

IDENTITY_FORMAT = "ptah-generation@1"
EXTERNAL_FORMAT = "ptah-external@1"


@dataclass(frozen=True)
class GenerationIdentity:
    """``identity`` (``sha256:…``) and ``parts``, the exact document it hashes."""

    identity: str
    parts: dict

    @property
    def model_digest(self) -> str | None:
        """The model folder's digest; ``None`` for the deterministic embedder."""
        return self.parts["model"].get("digest")


def canonical_json(document: dict) -> bytes:
    """The canonical serialisation the identity hashes (see module docs)."""
    text = json.dumps(
        document, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
    return text.encode("utf-8")


def generation_identity(
    settings: GenerationSettings,
    source: SourceSpec,
    root: str,
    *,
    cache_dir: str | Path | None = None,
) -> GenerationIdentity:
    """The identity of ``settings`` over ``source``; asks the model's kind what of it counts (no
    torch import).

    Raises :class:`UnknownModelKind` when no kind handles the model and
    :class:`ModelUnavailable` when the model cannot be found offline.
    """
    kind = kind_for(settings)
    parts = {
        "format": IDENTITY_FORMAT,
        "model": {"kind": kind.name, **_model_parts(kind, settings, root, cache_dir)},
        "normalize": settings.normalize,
        "max_seq_length": settings.max_seq_length,
        "query_prefix": settings.query_prefix,
    }
    if (
        settings.vectors is not None
    ):  # the table's vectors: which ones, and how queries are embedded against them
        parts |= {
            "format": EXTERNAL_FORMAT,
            "vectors": {"table": source.table, "column": settings.vectors},
        }
    else:
        parts |= {
            "document_prefix": settings.document_prefix,
            "text_template": settings.template(source),
        }
    return GenerationIdentity("sha256:" + hashlib.sha256(canonical_json(parts)).hexdigest(), parts)


def _model_parts(
    kind: EmbedderKind, settings: GenerationSettings, root: str, cache_dir: str | Path | None
) -> dict:
    parts = kind.identity_parts(
        settings, root, cache_dir=Path(cache_dir) if cache_dir is not None else None
    )
    problem = None
    if not isinstance(parts, dict) or "kind" in parts:
        problem = "a mapping without the key kind (ptah adds it)"
    else:
        try:
            canonical_json(parts)
        except (TypeError, ValueError):
            problem = "JSON values only (text, numbers that are finite, true/false, null, lists, mappings)"
    if problem is not None:
        raise PluginError(
            f'the embedder kind "{kind.name}" gave identity parts {parts!r} for model '
            f'"{settings.model}"; identity_parts() returns {problem}'
        )
    return parts
