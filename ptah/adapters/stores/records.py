"""What both stores return and share: a generation's record, its vectors as a matrix, how records are written."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Mapping

import numpy as np


@dataclass(frozen=True)
class GenerationRecord:
    """What the store knows of one generation identity."""

    identity: str
    name: str
    model: str
    settings: Mapping = field(default_factory=dict)
    dimension: int = 0
    model_digest: str | None = None
    identity_parts: Mapping = field(default_factory=dict)
    library_versions: Mapping = field(default_factory=dict)
    created_at: str = ""
    updated_at: str = ""

    def as_dict(self) -> dict:
        return {name: dict(value) if isinstance(value, Mapping) else value for name, value in vars(self).items()}


@dataclass(frozen=True)
class Matrix:
    """A generation's vectors as one contiguous float32 matrix, rows ordered by row identity."""

    keys: list[str]
    row_identities: list[str]
    vectors: np.ndarray

    def __iter__(self):  # unpacks as (keys, row_identities, vectors)
        return iter((self.keys, self.row_identities, self.vectors))


GENERATION_COLUMNS = (
    "identity, name, model, settings, dimension, model_digest, identity_parts, library_versions, created_at, updated_at"
)


def now() -> str:
    """The time a record is written: UTC, ISO 8601 to the second."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def to_json(value: Mapping) -> str:
    """A mapping as the stores keep it: JSON with sorted keys."""
    return json.dumps(dict(value), sort_keys=True, ensure_ascii=False, default=str)
