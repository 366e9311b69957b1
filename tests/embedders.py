"""Test embedders, chosen the way real ones are: through the embedder registry, by model name.

A spec whose generation says ``model: test/NAME`` is embedded by whatever a
test put in :data:`EMBEDDERS` under ``test/NAME`` (a recording, a hand-set or
a failing embedder); the kind is registered once, like a plugin's.
"""

from __future__ import annotations

from pathlib import Path

from ptah.adapters.embedders import registry

EMBEDDERS: dict[str, object] = {}


class TestEmbedderKind:
    """The models ``test/NAME``: each opens ``EMBEDDERS["test/NAME"]``; the identity is the model's
    name."""

    name = "test"

    def claims(self, settings) -> bool:
        return settings.model.startswith("test/")

    def identity_parts(self, settings, root: str, *, cache_dir: Path | None = None) -> dict:
        return {"model": settings.model}

    def open(self, settings, root: str):
        return EMBEDDERS[settings.model]

    def versions(self) -> dict[str, str | None]:
        return {}


registry.register(TestEmbedderKind())
