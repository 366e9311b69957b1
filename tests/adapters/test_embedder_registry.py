"""The embedder registry: kinds chosen by model; plugins are real distributions (a module and a
dist-info folder on the path) found through the ptah.embedders entry point as a pip-installed
package is."""

from __future__ import annotations

import hashlib
import importlib
import json
import re
import sqlite3
import sys
import textwrap
from pathlib import Path

import pytest

from ptah.adapters.embedders import open_embedder
from ptah.adapters.embedders import registry as registry_module
from ptah.adapters.embedders.deterministic import DeterministicKind
from ptah.adapters.embedders.registry import EmbedderRegistry, generation_identity
from ptah.adapters.spec_yaml import load_spec
from ptah.core.errors import EXIT_INPUT, EXIT_OPERATIONAL, PluginError, UnknownModelKind
from ptah.core.spec import GenerationSettings, SourceSpec
from tests.cli.conftest import ptah_process as ptah
from tests.conftest import spec_yaml

REPO = Path(__file__).resolve().parents[2]
SOURCE = SourceSpec("sqlite:///x.db", "articles", ("id",), "{title}\n\n{body}")

TOY = '''
"""A toy embedder kind: the letters a-z counted, scaled to unit length."""

from importlib import metadata

import numpy as np


class LetterEmbedder:
    dimension = 26

    def embed_documents(self, texts):
        vectors = np.zeros((len(texts), 26), dtype=np.float32)
        for row, text in enumerate(texts):
            for letter in text.lower():
                if "a" <= letter <= "z":
                    vectors[row, ord(letter) - ord("a")] += 1
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)

    embed_queries = embed_documents


class LetterKind:
    name = "toy"

    def claims(self, settings):
        return settings.model.startswith("toy/")

    def identity_parts(self, settings, root, *, cache_dir=None):
        return {"alphabet": "a-z", "model": settings.model}

    def open(self, settings, root):
        return LetterEmbedder()

    def versions(self):
        return {"toy-embedder": metadata.version("toy-embedder")}


def register(registry):
    registry.register(LetterKind())
'''


def install(
    folder: Path,
    distribution: str,
    entry: str,
    modules: dict[str, str],
    group: str = "ptah.embedders",
) -> Path:
    """A distribution ``distribution`` 0.1 in ``folder`` whose entry point of ``group`` is
    ``entry``."""
    for name, source in modules.items():
        (folder / f"{name}.py").write_text(textwrap.dedent(source))
    info = folder / f"{distribution.replace('-', '_')}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {distribution}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{group}]\n{entry}\n")
    return folder


@pytest.fixture
def on_path(tmp_path, monkeypatch):
    """``tmp_path / "site"`` on sys.path, as a site-packages folder would be; its modules forgotten
    afterwards."""
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    before = set(sys.modules)
    yield site
    for name in set(sys.modules) - before:
        if getattr(sys.modules[name], "__file__", "") and str(site) in sys.modules[name].__file__:
            del sys.modules[name]


def letters_project(folder: Path, model: str = "toy/letters") -> Path:
    with sqlite3.connect(folder / "source.db") as connection:
        connection.execute("CREATE TABLE docs (id INTEGER PRIMARY KEY, body TEXT)")
        connection.executemany(
            "INSERT INTO docs VALUES (?, ?)", [(1, "aaaa"), (2, "bbbb"), (3, "ab"), (4, "cccc")]
        )
    connection.close()
    (folder / "ptah.yaml").write_text(
        spec_yaml(
            table="docs", text="{body}", active="letters", generations={"letters": {"model": model}}
        )
    )
    (folder / "corpus.yaml").write_text(
        "version: 1\ndefault_k: 2\ncases:\n"
        '  - {id: a, query: "a", required: ["1"]}\n'
        '  - {id: b, query: "b", required: ["3"]}\n'
        '  - {id: c, query: "ccb", required: ["4"]}\n'
    )
    return folder


# -- a plugin through the real entry point, end to end
# ---------------------------------------------------


def test_a_toy_embedder_installed_as_a_plugin_builds_and_evaluates(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    install(site, "toy-embedder", "toy = toy_embedder:register", {"toy_embedder": TOY})
    project = letters_project(tmp_path)
    canonical = (
        '{"document_prefix":"","format":"ptah-generation@1","max_seq_length":null,"model":{"alphabet":"a-z",'
        '"kind":"toy","model":"toy/letters"},"normalize":true,"query_prefix":"","text_template":"{body}"}'
    )
    identity = "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()

    built = ptah("inference", "build", "--spec", "ptah.yaml", cwd=project, path=site)
    assert built.returncode == 0, built.stderr
    assert built.stdout.startswith(
        f"generation letters ({identity}): 4 rows, 4 embedded, 0 unchanged, 0 deleted in "
    )
    assert built.stderr.splitlines()[-1] == "exit 0 heavy []"

    evaluated = ptah(
        "inference",
        "evaluate",
        "--spec",
        "ptah.yaml",
        "--corpus",
        "corpus.yaml",
        "--json",
        cwd=project,
        path=site,
    )
    assert evaluated.stderr.splitlines()[-1] == "exit 0 heavy []"
    report = json.loads(evaluated.stdout)
    run = report["runs"][0]
    assert run["generation"]["identity"] == identity
    assert (run["generation"]["dimension"], run["generation"]["model_digest"]) == (26, None)
    assert run["generation"]["versions"] == {"ptah": "0.1.0", "toy-embedder": "0.1"}
    assert report["environment"]["toy-embedder"] == "0.1" and "torch" not in report["environment"]
    # cosines: "a" 1 (1.0), 3 (0.71); "b" 2 (1.0), 3 (0.71); "ccb" 4 (0.89), 2 (0.45): required keys
    # at ranks 1, 2, 1
    assert [[r["key"] for r in case["results"]] for case in run["cases"]] == [
        ["1", "3"],
        ["2", "3"],
        ["4", "2"],
    ]
    aggregates = run["aggregates"]
    # each case's one other row is a hole; taken as relevant (grade 1) every case is perfect: high
    # bounds 1
    assert aggregates["recall"] == {
        "value": 1.0,
        "numerator": 3.0,
        "denominator": 3,
        "undefined": 0,
        "high": 1.0,
        "high_numerator": 3.0,
    }
    assert aggregates["mrr"] == {
        "value": 2.5 / 3,
        "numerator": 2.5,
        "denominator": 3,
        "undefined": 0,
        "high": 1.0,
        "high_numerator": 3.0,
    }
    assert (aggregates["ndcg"]["high"], aggregates["ndcg"]["high_numerator"]) == (1.0, 3.0)
    ndcg = 2 + 1 / 1.584962500721156  # 1 + 1 / log2(3) + 1
    assert aggregates["ndcg"]["numerator"] == pytest.approx(ndcg, abs=1e-12)
    assert aggregates["ndcg"]["value"] == pytest.approx(ndcg / 3, abs=1e-12)
    assert report["verdict"] == "pass"

    # Upgraded: a cached evaluate loads no model and reports the versions recorded at build; a new
    # query loads it.
    metadata = site / "toy_embedder-0.1.dist-info" / "METADATA"
    metadata.write_text(metadata.read_text().replace("Version: 0.1", "Version: 0.2"))
    again = ptah(
        "inference",
        "evaluate",
        "--spec",
        "ptah.yaml",
        "--corpus",
        "corpus.yaml",
        "--json",
        cwd=project,
        path=site,
    )
    cached = json.loads(again.stdout)
    assert (
        cached["runs"][0]["generation"]["queries_from_cache"],
        cached["environment"]["toy-embedder"],
    ) == (3, "0.1")
    (project / "corpus.yaml").write_text(
        (project / "corpus.yaml").read_text().replace('query: "ccb"', 'query: "cccb"')
    )
    fresh = json.loads(
        ptah(
            "inference",
            "evaluate",
            "--spec",
            "ptah.yaml",
            "--corpus",
            "corpus.yaml",
            "--json",
            cwd=project,
            path=site,
        ).stdout
    )
    assert (
        fresh["runs"][0]["generation"]["queries_from_cache"],
        fresh["environment"]["toy-embedder"],
    ) == (2, "0.2")


def test_without_the_plugin_the_toy_model_is_a_missing_model_not_a_crash(tmp_path):
    project = letters_project(tmp_path)
    built = ptah("inference", "build", "--spec", "ptah.yaml", cwd=project)
    assert built.returncode == EXIT_OPERATIONAL
    assert built.stderr.startswith('model "toy/letters" was not found offline; ')


# -- which kind handles a model
# -----------------------------------------------------------------------


def test_ptahs_kinds_are_registered_with_sentence_transformers_the_default():
    registry = EmbedderRegistry()
    assert registry.names() == (
        "ptah/deterministic",
        "openai",
        "sentence-transformers-onnx",
        "sentence-transformers",
    )
    assert registry.origin("sentence-transformers") == "ptah"
    assert (
        registry.kind_for(GenerationSettings("d", "ptah/deterministic")).name
        == "ptah/deterministic"
    )
    for model in (
        "sentence-transformers/all-MiniLM-L6-v2",
        "BAAI/bge-small-en-v1.5",
        "./models/tiny",
        "toy/x",
    ):
        assert registry.kind_for(GenerationSettings("g", model)).name == "sentence-transformers"
        assert (
            registry.kind_for(GenerationSettings("g", model, backend="onnx")).name
            == "sentence-transformers-onnx"
        )


def test_a_model_no_kind_handles_exits_2_naming_the_kinds(tmp_path):
    with pytest.raises(UnknownModelKind) as caught:
        EmbedderRegistry().kind_for(GenerationSettings("g", "ptah/hashed-v2"))
    assert caught.value.exit_code == EXIT_INPUT
    assert str(caught.value) == (
        'generation "g": no embedder handles model "ptah/hashed-v2"; the kinds registered are ptah/deterministic, '
        "openai, sentence-transformers-onnx, sentence-transformers (the default). Name a model one of them handles, "
        "or install the package that adds its kind."
    )
    project = letters_project(tmp_path, model="ptah/hashed-v2")
    built = ptah("inference", "build", "--spec", "ptah.yaml", cwd=project)
    assert (built.returncode, built.stderr.splitlines()[0]) == (
        EXIT_INPUT,
        str(caught.value).replace('"g"', '"letters"'),
    )


def test_a_specific_kind_wins_over_the_default_and_two_specific_ones_conflict():
    registry = EmbedderRegistry(discover=False)
    registry.register(Claims("catch-all", ""), default=True)
    registry.register(Claims("toy", "toy/"))
    assert registry.kind_for(GenerationSettings("g", "toy/a")).name == "toy"
    assert registry.kind_for(GenerationSettings("g", "other")).name == "catch-all"
    registry.register(Claims("toy-two", "toy/"))
    with pytest.raises(PluginError) as caught:
        registry.kind_for(GenerationSettings("g", "toy/a"))
    assert caught.value.exit_code == EXIT_OPERATIONAL
    assert str(caught.value) == (
        f'model "toy/a" is claimed by more than one embedder kind: "toy" (the module {__name__}); '
        f'"toy-two" (the module {__name__}); uninstall all but one'
    )


class Claims(DeterministicKind):
    """A kind claiming the models that start with ``prefix``."""

    def __init__(self, name: str, prefix: str):
        self.name = name
        self.prefix = prefix

    def claims(self, settings):
        return settings.model.startswith(self.prefix)


@pytest.mark.parametrize(
    "register, message",
    [
        (
            lambda r: r.register(DeterministicKind),
            "registered <class 'ptah.adapters.embedders.deterministic."
            "DeterministicKind'>, which is not an embedder kind",
        ),
        (lambda r: r.register(object()), "which is not an embedder kind"),
        (lambda r: r.register(Claims(" ", "x")), "registered an embedder kind whose name is ' '"),
        (
            lambda r: [r.register(Claims("a", "x")), r.register(Claims("a", "y"))],
            f'registered the embedder kind "a", which the module {__name__} already registered; uninstall one of them',
        ),
        (
            lambda r: [
                r.register(Claims("a", "x"), default=True),
                r.register(Claims("b", "y"), default=True),
            ],
            'registered "b" as the default embedder kind; "a" already is',
        ),
    ],
)
def test_what_cannot_be_registered_is_a_plugin_error(register, message):
    with pytest.raises(PluginError, match=re.escape(message)) as caught:
        register(EmbedderRegistry(discover=False))
    assert caught.value.exit_code == EXIT_OPERATIONAL and str(caught.value).startswith(
        "the module "
    )


# -- plugins found in installed distributions
# ------------------------------------------------------------


def test_an_entry_point_may_name_a_kind_object(on_path):
    install(
        on_path,
        "toy-embedder",
        "toy = toy_embedder:KIND",
        {"toy_embedder": TOY + "\nKIND = LetterKind()\n"},
    )
    registry = EmbedderRegistry()
    assert registry.names() == (
        "ptah/deterministic",
        "openai",
        "sentence-transformers-onnx",
        "sentence-transformers",
        "toy",
    )
    assert registry.origin("toy") == (
        'the ptah.embedders entry point "toy = toy_embedder:KIND" '
        "of the distribution toy-embedder 0.1"
    )
    settings = GenerationSettings("letters", "toy/letters")
    assert registry.library_versions(settings) == {"ptah": "0.1.0", "toy-embedder": "0.1"}
    assert registry.versions_of(
        [settings, GenerationSettings("d", "ptah/deterministic"), settings]
    ) == {"toy-embedder": "0.1"}


def test_the_default_registry_loads_plugins_once_at_the_first_lookup(on_path, monkeypatch):
    install(on_path, "toy-embedder", "toy = toy_embedder:register", {"toy_embedder": TOY})
    monkeypatch.setattr(registry_module, "REGISTRY", EmbedderRegistry())
    assert "toy_embedder" not in sys.modules
    settings = GenerationSettings("letters", "toy/letters")
    embedder = open_embedder(settings, "/nowhere")
    assert "toy_embedder" in sys.modules
    assert embedder.embed_queries(["abba"])[0, :3].tolist() == pytest.approx(
        [0.5**0.5, 0.5**0.5, 0.0], abs=1e-7
    )
    assert generation_identity(settings, SOURCE, "/nowhere").parts["model"] == {
        "kind": "toy",
        "alphabet": "a-z",
        "model": "toy/letters",
    }
    (on_path / "toy_embedder.py").unlink()  # a second lookup does not import again
    assert registry_module.kind_for(settings).name == "toy"


BROKEN_IMPORT = "import no_such_module_for_ptah\n"


@pytest.mark.parametrize(
    "entry, source, message",
    [
        (
            "broken = broken_embedder:register",
            BROKEN_IMPORT,
            "cannot be loaded: ModuleNotFoundError: No module named 'no_such_module_for_ptah'; "
            "reinstall or uninstall the distribution broken-embedder",
        ),
        (
            "broken = broken_embedder:nothing",
            "",
            "cannot be loaded: AttributeError: module 'broken_embedder' has no "
            "attribute 'nothing'; reinstall or uninstall the distribution "
            "broken-embedder",
        ),
        (
            "broken = broken_embedder:register",
            "def register(registry):\n    raise RuntimeError('no GPU here')\n",
            "failed while registering: RuntimeError: no GPU here; reinstall or uninstall the distribution "
            "broken-embedder",
        ),
        (
            "broken = broken_embedder:VALUE",
            "VALUE = 42\n",
            "names 42; name an embedder kind or a function register(registry)",
        ),
        (
            "broken = broken_embedder:register",
            "def register(registry):\n    registry.register(42)\n",
            "registered 42, which is not an embedder kind: register an object with name, claims(), identity_parts(), "
            "open() and versions()",
        ),
    ],
)
def test_a_broken_plugin_is_a_plugin_error_naming_its_distribution_and_entry_point(
    on_path, entry, source, message
):
    install(on_path, "broken-embedder", entry, {"broken_embedder": source})
    registry = EmbedderRegistry()
    settings = GenerationSettings("d", "ptah/deterministic")
    with pytest.raises(PluginError) as caught:
        registry.kind_for(settings)
    assert caught.value.exit_code == EXIT_OPERATIONAL
    assert (
        str(caught.value)
        == f'the ptah.embedders entry point "{entry}" of the distribution broken-embedder 0.1 '
        + message
    )
    with pytest.raises(
        PluginError
    ) as again:  # not only the first lookup: the registry is not half loaded
        registry.kind_for(settings)
    assert str(again.value) == str(caught.value)


def test_a_plugin_taking_a_kinds_name_is_refused(on_path):
    source = (
        "from ptah.adapters.embedders.deterministic import DeterministicKind\n"
        "class Thief(DeterministicKind):\n    name = 'sentence-transformers'\n"
        "def register(registry):\n    registry.register(Thief())\n"
    )
    install(
        on_path, "thief-embedder", "thief = thief_embedder:register", {"thief_embedder": source}
    )
    with pytest.raises(PluginError) as caught:
        EmbedderRegistry().names()
    assert str(caught.value) == (
        'the ptah.embedders entry point "thief = thief_embedder:register" of the distribution '
        'thief-embedder 0.1 registered the embedder kind "sentence-transformers", which ptah '
        "already registered; uninstall one of them"
    )


def test_a_broken_plugin_fails_the_commands_that_need_a_model_with_exit_3_and_no_other(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    install(
        site,
        "broken-embedder",
        "broken = broken_embedder:register",
        {"broken_embedder": BROKEN_IMPORT},
    )
    project = letters_project(tmp_path, model="ptah/deterministic")
    built = ptah("inference", "build", "--spec", "ptah.yaml", cwd=project, path=site)
    assert built.returncode == EXIT_OPERATIONAL
    assert built.stderr.splitlines() == [
        'the ptah.embedders entry point "broken = broken_embedder:register" of the distribution broken-embedder 0.1 '
        "cannot be loaded: ModuleNotFoundError: No module named 'no_such_module_for_ptah'; reinstall or uninstall "
        "the distribution broken-embedder",
        "exit 3 heavy []",
    ]
    assert ptah("--help", cwd=project, path=site).returncode == 0
    validated = ptah("corpus", "validate", "corpus.yaml", cwd=project, path=site)
    assert validated.returncode == 0, validated.stderr


@pytest.mark.parametrize(
    "parts, problem",
    [
        ({"kind": "sentence-transformers"}, "a mapping without the key kind (ptah adds it)"),
        (["a-z"], "a mapping without the key kind (ptah adds it)"),
        ({"scale": float("nan")}, "JSON values only"),
        ({"path": Path("/x")}, "JSON values only"),
    ],
)
def test_identity_parts_that_could_forge_or_not_hash_are_refused(monkeypatch, parts, problem):
    class Forger(Claims):
        def identity_parts(self, settings, root, *, cache_dir=None):
            return parts

    registry = EmbedderRegistry()
    registry.register(Forger("forger", "toy/"))
    monkeypatch.setattr(registry_module, "REGISTRY", registry)
    with pytest.raises(PluginError) as caught:
        generation_identity(GenerationSettings("g", "toy/x"), SOURCE, "/nowhere")
    assert str(caught.value).startswith(
        f'the embedder kind "forger" gave identity parts {parts!r} for model "toy/x"; '
        f"identity_parts() returns {problem}"
    )


def test_open_refuses_what_is_not_an_embedder(monkeypatch):
    class Hollow(Claims):
        def open(self, settings, root):
            return object()

    registry = EmbedderRegistry()
    registry.register(Hollow("hollow", "toy/"))
    monkeypatch.setattr(registry_module, "REGISTRY", registry)
    with pytest.raises(
        PluginError,
        match='^the embedder kind "hollow" opened <object object at 0x[0-9a-f]+> for '
        'model "toy/x"; open\\(\\) returns an object with a positive int dimension',
    ):
        open_embedder(GenerationSettings("g", "toy/x"), "/nowhere")


# -- ptah's own kinds keep every identity they ever gave
# --------------------------------------------------


def test_the_identities_of_ptahs_kinds_are_unchanged(tmp_path):
    """The deterministic kind's exact identity:
    test_embedders.test_identity_covers_what_vectors_depend_on_and_not_the_name."""
    spec = load_spec(str(REPO / "examples" / "support" / "ptah.yaml"))
    baseline = json.loads((REPO / "examples" / "support" / "baseline.json").read_text())
    minilm = generation_identity(
        spec.generation("title-body"), spec.source, spec.root, cache_dir=tmp_path
    )
    assert (
        minilm.identity
        == baseline["runs"][0]["generation"]["identity"]
        == ("sha256:c7138e3cf6d2ae1d2509caa43e68417af49000acae7e48e6ca39b06080807667")
    )


def test_threads_looking_up_while_the_kinds_are_discovered_wait_for_them(monkeypatch):
    """A server's workers resolve their first generations at once: none may see a registry half
    discovered (it said "the kinds registered are none" before discovery held a lock)."""
    import threading
    import time

    from ptah.core import plugins

    def slow_entry_points(group):
        time.sleep(0.3)  # an installed plugin being looked up
        return iter(())

    monkeypatch.setattr(plugins, "_entry_point_plugins", slow_entry_points)
    monkeypatch.setattr(plugins, "_installed", {})
    registry = EmbedderRegistry()
    found, failed = [], []

    def look_up():
        try:
            found.append(registry.kind_for(GenerationSettings("d", "ptah/deterministic")).name)
        except UnknownModelKind as exc:
            failed.append(str(exc))

    threads = [threading.Thread(target=look_up) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert (found, failed) == (["ptah/deterministic"] * 8, [])
