"""Shared by every test: the test embedders (``model: test/NAME``), registered like a plugin's."""

from __future__ import annotations

import pytest

from tests.embedders import EMBEDDERS


@pytest.fixture
def embedders():
    """``embedders["test/NAME"] = embedder`` makes generations with ``model: test/NAME`` embed with it."""
    EMBEDDERS.clear()
    yield EMBEDDERS
    EMBEDDERS.clear()
