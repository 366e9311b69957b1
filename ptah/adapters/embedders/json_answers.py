"""JSON a service answers, read without letting a key named twice decide silently which value
counts.

Kept apart from :mod:`ptah.adapters.embedders.http_client` so that a reader of
an answer's inner JSON (the chat judge's message) needs no httpx.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any


class DuplicateKey(ValueError):
    """A JSON object that names ``key`` twice."""

    def __init__(self, key: str):
        super().__init__(key)
        self.key = key

    def sentence(self, visible: Callable[[str], str]) -> str:
        """What the service did, the key shown by ``visible``."""
        return f'answered JSON naming the key "{visible(self.key)}" twice in one object'


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise DuplicateKey(key)
        found[key] = value
    return found


def loads_unique(text: str | bytes, **options: Any) -> Any:
    """``json.loads`` that raises :class:`DuplicateKey` where an object names a key twice: a service
    answering ``{"grade": 0, "grade": 1}`` has said nothing, and the last value must not silently
    win."""
    return json.loads(text, object_pairs_hook=_unique_pairs, **options)
