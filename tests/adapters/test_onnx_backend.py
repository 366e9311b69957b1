"""backend: onnx and quantize: int8 -- the settings, the identity, and the real MiniLM run by
onnxruntime."""

from __future__ import annotations

import gc
import importlib.util
import os
import sqlite3
import sys

import numpy as np
import pytest

from ptah.adapters.embedders import open_embedder
from ptah.adapters.embedders.onnx_backend import EXPORT_FORMAT
from ptah.adapters.embedders.registry import generation_identity
from ptah.adapters.embedders.resolve import model_digest, resolve_model
from ptah.adapters.spec_yaml import load_spec
from ptah.core.errors import InputError
from ptah.core.spec import GenerationSettings, SourceSpec
from tests.adapters.test_openai_spec import problems, spec
from tests.conftest import run_cli

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
SOURCE = SourceSpec("sqlite:///x.db", "articles", ("id",), "{title}")
TEXTS = [  # lengths from two tokens to past max_seq_length, so batches are padded and cut
    "hi",
    "How do I reset my password after the account was locked?",
    "Microstructural development of human newborn cerebral white matter assessed in vivo by diffusion tensor "
    "magnetic resonance imaging. Alterations of the architecture of cerebral white matter in the developing "
    "human brain can affect cortical development and result in functional disabilities.",
    "Refunds are paid to the card used within five working days. " * 12,
]
needs_onnxruntime = pytest.mark.skipif(
    importlib.util.find_spec("onnxruntime") is None,
    reason="onnxruntime is not installed (the onnx extra)",
)


def settings(**fields) -> GenerationSettings:
    return GenerationSettings(
        "g", MINILM, max_seq_length=128, query_prefix="query: ", batch_size=3, **fields
    )


# -- the settings and the identity (no model loaded) -------------------------------------------


def test_backend_and_quantize_are_read_and_their_mistakes_named(tmp_path):
    path = spec(tmp_path, f"model: {MINILM}\nbackend: onnx\nquantize: int8\n")
    generation = load_spec(path, env={}).generation("small")
    assert (generation.backend, generation.quantize) == ("onnx", "int8")
    assert problems(spec(tmp_path, f"model: {MINILM}\nquantize: int8\n")) == [
        "10: generations.small.quantize: applies to backend: onnx only; add backend: onnx or remove it"
    ]
    assert problems(spec(tmp_path, f"model: {MINILM}\nbackend: openvino\nquantize: int4\n")) == [
        '10: generations.small.backend: "openvino" is not one ptah knows; write torch or onnx',
        '11: generations.small.quantize: "int4" is not one ptah knows; write int8',
    ]
    assert problems(spec(tmp_path, "model: ptah/deterministic\nbackend: onnx\n")) == [
        "10: generations.small.backend: applies to a local sentence-transformers model only; remove it"
    ]
    assert problems(spec(tmp_path, "model: m\nprovider: openai\nquantize: int8\n")) == [
        "11: generations.small.quantize: applies to a local sentence-transformers model only; remove it"
    ]


def test_the_backend_and_the_quantisation_are_three_generations_and_torch_keeps_its_identity(
    tmp_path,
):
    torch, onnx, int8 = (
        generation_identity(settings(**fields), SOURCE, str(tmp_path))
        for fields in ({}, {"backend": "onnx"}, {"backend": "onnx", "quantize": "int8"})
    )
    digest = model_digest(resolve_model(MINILM, str(tmp_path)))
    assert torch.parts["model"] == {"kind": "sentence-transformers", "digest": digest}
    assert generation_identity(settings(backend="torch"), SOURCE, str(tmp_path)) == torch
    assert onnx.parts["model"] == {
        "kind": "sentence-transformers-onnx",
        "digest": digest,
        "export": EXPORT_FORMAT,
        "quantize": None,
    }
    assert int8.parts["model"] == onnx.parts["model"] | {"quantize": "int8"}
    assert {key: value for key, value in int8.parts.items() if key != "model"} == {
        key: value for key, value in torch.parts.items() if key != "model"
    }
    assert len({torch.identity, onnx.identity, int8.identity}) == 3


def test_without_onnxruntime_a_build_is_exit_2_naming_the_install(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(
        sys.modules, "onnxruntime", None
    )  # as if it were not installed: importing it fails
    with pytest.raises(InputError) as caught:
        open_embedder(settings(backend="onnx"), str(tmp_path))
    message = (
        'generation "g" has backend: onnx, which needs onnxruntime and onnx; install them with '
        "pip install 'ptah-eval[onnx]' (or pip install onnxruntime onnx)"
    )
    assert str(caught.value) == message
    with sqlite3.connect(tmp_path / "support.db") as db:
        db.execute("CREATE TABLE articles (id INTEGER PRIMARY KEY, title TEXT)")
        db.execute("INSERT INTO articles VALUES (1, 'hello')")
    path = spec(tmp_path, f"model: {MINILM}\nbackend: onnx\n")
    result = run_cli(capsys, "inference", "build", "small", "--spec", path, "--quiet")
    assert (result.code, result.err.strip()) == (2, message.replace('"g"', '"small"'))


# -- the real MiniLM ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def embedders(tmp_path_factory):
    """torch, ONNX fp32 and ONNX int8 embedders of MiniLM, the ONNX ones exported into one project
    folder."""
    root = tmp_path_factory.mktemp("onnx-project")
    opened = {
        name: open_embedder(settings(**fields), str(root))
        for name, fields in (
            ("torch", {}),
            ("onnx", {"backend": "onnx"}),
            ("int8", {"backend": "onnx", "quantize": "int8"}),
        )
    }
    return root, opened


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, axis=1)  # both unit length


@needs_onnxruntime
def test_onnx_vectors_are_torchs_and_int8_stays_close(embedders):
    _, opened = embedders
    torch = opened["torch"].embed_documents(TEXTS)
    onnx = opened["onnx"].embed_documents(TEXTS)
    int8 = opened["int8"].embed_documents(TEXTS)
    assert opened["onnx"].dimension == opened["int8"].dimension == 384
    assert onnx.shape == int8.shape == (4, 384) and onnx.dtype == int8.dtype == np.float32
    assert np.allclose(np.linalg.norm(int8, axis=1), 1.0, atol=1e-5)
    assert cosines(onnx, torch).min() > 0.9999
    assert (
        cosines(int8, torch).min() > 0.98
    )  # least 0.987 over 1,000 SciFact abstracts (benchmarks/RESULTS.md)
    one = opened["onnx"].embed_documents(
        TEXTS[2:3]
    )  # alone: no padding, another sequence length than traced
    assert cosines(one, torch[2:3])[0] > 0.9999
    query = opened["onnx"].embed_queries(
        [TEXTS[1]]
    )  # the query prefix is applied as torch applies it
    assert cosines(query, opened["torch"].embed_queries([TEXTS[1]]))[0] > 0.9999
    assert cosines(query, onnx[1:2])[0] < 0.99
    assert opened["onnx"].embed_queries([]).shape == (0, 384)


@pytest.mark.filterwarnings("ignore::FutureWarning")  # torch's deprecated names, met by the scan
@needs_onnxruntime
def test_the_session_never_spins_and_holds_the_only_copy_of_the_weights(embedders):
    from sentence_transformers import SentenceTransformer

    _, opened = embedders
    for name in ("onnx", "int8"):  # exported when the fixture opened them
        options = opened[name].session.get_session_options()
        assert options.intra_op_num_threads == len(os.sched_getaffinity(0))
        assert options.inter_op_num_threads == 1
        assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
        assert options.get_session_config_entry("session.inter_op.allow_spinning") == "0"
        assert (options.enable_cpu_mem_arena, options.enable_mem_pattern) == (True, False)
        assert not hasattr(opened[name], "model")
        tensors = [*opened[name].tokenizer.parameters(), *opened[name].tokenizer.buffers()]
        assert len(tensors) > 100 and all(tensor.is_meta for tensor in tensors)

    def models() -> int:
        gc.collect()
        return sum(isinstance(held, SentenceTransformer) for held in gc.get_objects())

    before = models()  # torch's embedder holds one
    again = open_embedder(settings(backend="onnx"), str(embedders[0]))  # the export found
    assert models() == before and not hasattr(again, "model")


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity here")
@needs_onnxruntime
def test_the_session_has_a_thread_for_each_cpu_the_process_may_use(embedders):
    allowed = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(allowed)})
    try:
        one = open_embedder(settings(backend="onnx"), str(embedders[0]))
    finally:
        os.sched_setaffinity(0, allowed)
    assert one.session.get_session_options().intra_op_num_threads == 1
    assert (
        cosines(
            one.embed_documents(TEXTS[:2]), embedders[1]["onnx"].embed_documents(TEXTS[:2])
        ).min()
        > 0.99999
    )


@needs_onnxruntime
def test_the_export_is_kept_in_the_project_and_opened_again_without_exporting(embedders):
    root, _ = embedders
    folder = root / ".ptah" / "onnx"
    before = {path.name: path.stat().st_mtime_ns for path in folder.iterdir()}
    assert len(before) == 2 and all(
        name.endswith(".onnx") for name in before
    )  # fp32, and int8 made from it
    again = open_embedder(settings(backend="onnx", quantize="int8"), str(root))
    assert {path.name: path.stat().st_mtime_ns for path in folder.iterdir()} == before
    assert (
        cosines(again.embed_documents(TEXTS[:1]), embedders[1]["int8"].embed_documents(TEXTS[:1]))[
            0
        ]
        > 0.99999
    )


@needs_onnxruntime
def test_a_swapped_or_linked_export_is_made_again_never_run_or_written_through(embedders, tmp_path):
    root, opened = embedders
    folder = root / ".ptah" / "onnx"
    fp32, int8 = sorted(folder.iterdir(), key=lambda path: -path.stat().st_size)
    expected = opened["int8"].embed_documents(TEXTS[:2])
    int8.write_bytes(
        fp32.read_bytes()
    )  # a valid model, not the one ptah made here: it would run silently
    again = open_embedder(settings(backend="onnx", quantize="int8"), str(root))
    assert int8.read_bytes() != fp32.read_bytes()
    assert cosines(again.embed_documents(TEXTS[:2]), expected).min() > 0.99999
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep")
    int8.unlink()
    int8.symlink_to(victim)  # committed in a pull request, or carried by a CI cache
    again = open_embedder(settings(backend="onnx", quantize="int8"), str(root))
    assert victim.read_bytes() == b"keep" and not int8.is_symlink() and int8.is_file()
    assert cosines(again.embed_documents(TEXTS[:2]), expected).min() > 0.99999
    assert sorted(path.name for path in folder.iterdir()) == sorted(
        [fp32.name, int8.name]
    )  # no temporary left


@needs_onnxruntime
def test_an_export_folder_that_is_a_link_is_not_written_into(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "project" / ".ptah").mkdir(parents=True)
    (tmp_path / "project" / ".ptah" / "onnx").symlink_to(elsewhere)
    embedder = open_embedder(settings(backend="onnx"), str(tmp_path / "project"))
    assert embedder.embed_documents(TEXTS[:1]).shape == (1, 384)
    assert list(elsewhere.iterdir()) == []


def test_two_processes_recording_exports_keep_each_others_records(tmp_path):
    """Each opener reads the record before either writes (two CI jobs, or a test run beside
    another): the second write keeps the first's export, so neither is exported again."""
    from ptah.adapters.embedders.onnx_backend import _Exports

    first, second = tmp_path / "a.onnx", tmp_path / "b.onnx"
    first.write_bytes(b"one model")
    second.write_bytes(b"another model")
    cache = tmp_path / "cache"
    cache.mkdir()
    one, two = _Exports(cache), _Exports(cache)
    one.made(first)
    two.made(second)
    later = _Exports(cache)
    assert later.vouches_for(first) and later.vouches_for(second)
    second.write_bytes(b"swapped")
    assert later.vouches_for(first) and not later.vouches_for(second)
