"""The identity of a generation: a digest of everything its vectors depend on.

Canonical form (``ptah-generation@1``): the JSON document ::

    {"document_prefix": DOCUMENT_PREFIX,
     "format": "ptah-generation@1",
     "max_seq_length": N or null,
     "model": MODEL,
     "normalize": true|false,
     "query_prefix": QUERY_PREFIX,
     "text_template": TEMPLATE}

where MODEL is ``{"digest": "sha256:…", "kind": "sentence-transformers"}``
(the model folder's digest, :func:`ptah.adapters.embedders.resolve.model_digest`,
which covers weights, configs, tokenizer and pooling) or, for
``ptah/deterministic``, ``{"algorithm": "ptah-deterministic@1", "dimension":
D, "kind": "ptah/deterministic"}``; TEMPLATE is the *effective* template (the
generation's ``text`` else ``source.text``). It is serialised with object keys
sorted, separators ``,`` and ``:``, non-ASCII written as itself, encoded as
UTF-8; the identity is ``sha256:`` + its hex SHA-256.

Outside the identity: the generation's display name, the model's *name* (the
same weights found in a folder or in a package are the same model),
``batch_size``, the source's database, table, keys and filter (they choose
rows, not vectors), and library versions (recorded beside, not hashed).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from ptah.adapters.embedders.deterministic import ALGORITHM
from ptah.adapters.embedders.resolve import model_digest, resolve_model
from ptah.core.spec import DEFAULT_DETERMINISTIC_DIMENSION, GenerationSettings, SourceSpec

IDENTITY_FORMAT = "ptah-generation@1"


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
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return text.encode("utf-8")


def generation_identity(
    settings: GenerationSettings,
    source: SourceSpec,
    root: str,
    *,
    cache_dir: str | Path | None = None,
) -> GenerationIdentity:
    """The identity of ``settings`` over ``source``; resolves and digests the model (no torch import).

    Raises :class:`ModelUnavailable` when the model cannot be found offline.
    """
    if settings.is_deterministic:
        model = {
            "kind": settings.model,
            "algorithm": ALGORITHM,
            "dimension": settings.dimension or DEFAULT_DETERMINISTIC_DIMENSION,
        }
    else:
        path = resolve_model(settings.model, root)
        model = {"kind": "sentence-transformers", "digest": model_digest(path, cache_dir)}
    parts = {
        "format": IDENTITY_FORMAT,
        "model": model,
        "normalize": settings.normalize,
        "max_seq_length": settings.max_seq_length,
        "query_prefix": settings.query_prefix,
        "document_prefix": settings.document_prefix,
        "text_template": settings.template(source),
    }
    return GenerationIdentity("sha256:" + hashlib.sha256(canonical_json(parts)).hexdigest(), parts)
