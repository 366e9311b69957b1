"""Reranker kinds by name: ptah's three, a plug-in found through the ptah.rerankers entry point as a
pip-installed package is (a module and a dist-info folder on the path), and the refusals of an
unknown kind or a broken plug-in."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ptah.adapters.rerankers import RerankerRegistry, open_reranker, reranker_kinds
from ptah.adapters.rerankers import registry as registry_module
from ptah.core.errors import EXIT_INPUT, EXIT_OPERATIONAL, InputError, OperationalError, PluginError
from ptah.core.spec import RerankSettings
from tests.adapters.test_embedder_registry import (
    install as install_distribution,
)
from tests.adapters.test_embedder_registry import (
    on_path,
)

REPO = Path(__file__).resolve().parents[2]

TOY = '''
"""A toy reranker kind: a text scores the number of letters it shares with the query."""

import numpy as np


class Letters:
    def __init__(self, options):
        self.options = options

    def scores(self, query, texts):
        if self.options.get("broken") == "length":
            return [1.0] * (len(texts) + 1)
        if self.options.get("broken") == "words":
            return ["high"] * len(texts)
        return np.array([len(set(query) & set(text)) for text in texts])

    def describe(self):
        return {"kind": "letters", "model": None}


class LettersKind:
    name = "letters"

    def open(self, settings, context):
        return Letters(settings.options)


def register(registry):
    registry.register(LettersKind())


KIND = LettersKind()
'''


def install(site: Path, entry: str) -> None:
    """A distribution toy-reranker 0.1 in ``site`` whose ptah.rerankers entry point is ``entry``."""
    install_distribution(site, "toy-reranker", entry, {"toy_reranker": TOY}, "ptah.rerankers")


@pytest.fixture
def site(on_path, monkeypatch):
    """``on_path`` (a site-packages folder) with a fresh registry."""
    monkeypatch.setattr(registry_module, "REGISTRY", RerankerRegistry())
    return on_path


def test_ptahs_kinds_come_first_and_naming_them_imports_no_heavy_library():
    script = (
        "import sys\nfrom ptah.adapters.rerankers import reranker_kinds\nprint(reranker_kinds()[:3], "
        "sorted(m for m in ('torch', 'sentence_transformers', 'transformers', 'httpx') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.stdout == "('cross-encoder', 'bi-encoder', 'service') []\n"


@pytest.mark.parametrize(
    "entry", ["letters = toy_reranker:register", "letters = toy_reranker:KIND"]
)
def test_a_plugin_kind_is_found_by_its_entry_point_and_its_scores_checked(site, context, entry):
    install(site, entry)
    assert reranker_kinds() == ("cross-encoder", "bi-encoder", "service", "letters")
    reranker = open_reranker(RerankSettings("letters"), context)
    scores = reranker.scores("abc", ["cab", "xyz", "a"])
    assert scores.dtype == np.float64 and scores.tolist() == [3.0, 0.0, 1.0]
    assert reranker.describe() == {"kind": "letters", "model": None}
    for broken, message in (
        ("length", "gave 3 scores for 2 texts; a reranker gives one score per text"),
        ("words", "gave scores that are not numbers"),
    ):
        wrong = open_reranker(RerankSettings("letters", options={"broken": broken}), context)
        with pytest.raises(OperationalError) as info:
            wrong.scores("abc", ["cab", "xyz"])
        assert (info.value.exit_code, str(info.value)) == (
            EXIT_OPERATIONAL,
            f"the letters reranker {message}",
        )


def test_an_unknown_kind_is_exit_2_naming_the_registered_ones(site, context):
    install(site, "letters = toy_reranker:register")
    with pytest.raises(InputError) as info:
        open_reranker(RerankSettings("colbert"), context)
    assert info.value.exit_code == EXIT_INPUT
    assert str(info.value) == (
        "unknown reranker kind 'colbert'; the registered kinds are cross-encoder, bi-encoder, "
        "service, letters"
    )


def test_a_plugin_that_cannot_be_loaded_fails_every_lookup_naming_its_entry_point(site, context):
    install(site, "letters = toy_reranker:missing")
    for _ in range(2):
        with pytest.raises(PluginError) as info:
            reranker_kinds()
        assert info.value.exit_code == EXIT_OPERATIONAL
        assert str(info.value) == (
            'the ptah.rerankers entry point "letters = toy_reranker:missing" of the distribution '
            "toy-reranker 0.1 cannot be loaded: AttributeError: module 'toy_reranker' has no "
            "attribute 'missing'; reinstall or uninstall the distribution toy-reranker"
        )


def test_a_plugin_reusing_a_name_or_registering_no_kind_is_refused():
    registry = RerankerRegistry(discover=False)
    registry.register(_Named("cross-encoder"))
    with pytest.raises(PluginError) as info:
        registry.register(_Named("cross-encoder"))
    assert str(info.value) == (
        f'the module {__name__} registered the reranker kind "cross-encoder", which the '
        f"module {__name__} already registered; uninstall one of them"
    )
    with pytest.raises(PluginError) as info:
        registry.register(object())  # type: ignore[arg-type]
    assert str(info.value).endswith(
        "which is not a reranker kind: register an object with a name and open(settings, context)"
    )


class _Named:
    def __init__(self, name):
        self.name = name

    def open(self, settings, context):
        raise AssertionError("not opened here")
