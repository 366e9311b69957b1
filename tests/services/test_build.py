"""Building generations on real SQLite files, proven with the recording deterministic embedder.

The embedder is always the one the project opens for the generation's model:
a test reads the calls of ``ptah/deterministic`` through :func:`model_of`,
or registers its own under ``test/NAME`` (the ``embedders`` fixture).
"""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys
import textwrap
from contextlib import contextmanager
from pathlib import Path

from ptah.adapters.embedders.deterministic import DeterministicEmbedder
from ptah.core.provenance import text_digest
from ptah.services.build import build
from ptah.services.verify import list_generations, verify


def model_of(project) -> DeterministicEmbedder:
    """The embedder the project opens for its active generation (one per project), which records its
    calls."""
    return project.embedder(project.generation().settings)


def stored(workspace, identity):
    with sqlite3.connect(workspace.store_path) as connection:
        return dict(
            connection.execute(
                "SELECT key, text_sha256 FROM vectors WHERE generation = ? ORDER BY key",
                (identity,),
            ).fetchall()
        )


def test_a_first_build_embeds_every_row_and_registers_the_generation(workspace):
    with workspace.project() as project:
        embedder = model_of(project)
        summary = build(project)
        identity = project.generation().identity.identity
    assert (summary.generation, summary.identity, summary.rows) == ("docs", identity, 10)
    assert (summary.embedded, summary.unchanged, summary.deleted, summary.dimension) == (
        10,
        0,
        0,
        32,
    )
    assert embedder.embedded_texts() == [workspace.text(row) for row in workspace.docs]
    assert stored(workspace, identity) == {
        str(row[0]): text_digest(workspace.text(row)) for row in workspace.docs
    }
    assert (
        stored(workspace, identity)["1"]
        == hashlib.sha256(b"Cancel a subscription\n\nOpen billing and press cancel.").hexdigest()
    )
    with sqlite3.connect(workspace.store_path) as connection:
        name, model, settings, dimension, versions = connection.execute(
            "SELECT name, model, settings, dimension, library_versions FROM generations"
        ).fetchone()
    assert (name, model, dimension) == ("docs", "ptah/deterministic", 32)
    assert '"batch_size": 4' in settings and '"normalize": true' in settings
    assert '"ptah": "0.1.0"' in versions


def test_a_build_with_nothing_to_do_never_loads_the_model(workspace, monkeypatch):
    with workspace.project() as project:
        build(project)

    def no_model(*args, **kwargs):
        raise AssertionError("the model was loaded")

    monkeypatch.setattr("ptah.adapters.embedders.open_embedder", no_model)
    with workspace.project() as project:
        summary = build(project)
    assert (summary.embedded, summary.unchanged, summary.deleted) == (0, 10, 0)


def test_the_filter_excludes_rows_and_a_row_leaving_it_loses_its_vector(workspace):
    workspace.write_spec(filter="status = 'published'")
    with workspace.project() as project:
        summary = build(project)
        identity = project.generation().identity.identity
    assert (summary.rows, summary.embedded) == (9, 9)
    assert "9" not in stored(workspace, identity)
    workspace.execute("UPDATE articles SET status = 'draft' WHERE id = 1")
    with workspace.project() as project:
        summary = build(project)
    assert (summary.rows, summary.embedded, summary.deleted) == (8, 0, 1)
    assert sorted(stored(workspace, identity)) == ["10", "2", "3", "4", "5", "6", "7", "8"]


def test_composite_keys_with_separators_inside_values_stay_distinct(workspace):
    workspace.execute("CREATE TABLE tenants (tenant TEXT, id TEXT, body TEXT)")
    rows = [
        ("a\x1fb", "c", "first"),
        ("a", "b\x1fd", "second"),
        ("acme1", "2", "third"),
        ("acme", "12", "fourth"),
        ("5:x", "1:y", "fifth"),
        ("5", "x1:y", "sixth"),
    ]
    workspace.execute("INSERT INTO tenants VALUES (?, ?, ?)", rows)
    workspace.write_spec(table="tenants", key_fields=("tenant", "id"), text="{body}")
    with workspace.project() as project:
        summary = build(project)
        identity = project.generation().identity.identity
    assert (summary.rows, summary.embedded) == (6, 6)
    with sqlite3.connect(workspace.store_path) as connection:
        held = dict(
            connection.execute(
                "SELECT row_identity, key FROM vectors WHERE generation = ?", (identity,)
            )
        )
    assert held == {
        "3:a\x1fb1:c": "a\x1fb\x1fc",
        "1:a3:b\x1fd": "a\x1fb\x1fd",
        "5:acme11:2": "acme1\x1f2",
        "4:acme2:12": "acme\x1f12",
        "3:5:x3:1:y": "5:x\x1f1:y",
        "1:54:x1:y": "5\x1fx1:y",
    }
    workspace.execute("UPDATE tenants SET body = 'changed' WHERE tenant = 'a'")
    with workspace.project() as project:
        embedder = model_of(project)
        summary = build(project)
    assert embedder.embedded_texts() == ["changed"]
    assert (summary.embedded, summary.unchanged) == (1, 5)


def test_changed_settings_make_a_new_identity_and_keep_the_old_vectors(workspace):
    with workspace.project() as project:
        build(project)
        old = project.generation().identity.identity
    workspace.write_spec(
        generations={
            "docs": "model: ptah/deterministic\n    dimension: 32\n    query_prefix: 'q: '"
        }
    )
    with workspace.project() as project:
        new = project.generation().identity.identity
        summary = build(project)
        listings = list_generations(project)
    assert new != old
    assert summary.embedded == 10
    assert len(stored(workspace, old)) == 10 and len(stored(workspace, new)) == 10
    assert [
        (item.name, item.identity, item.status, item.vectors, item.coverage) for item in listings
    ] == [
        ("docs", old, "superseded", 10, 1.0),
        ("docs", new, "current", 10, 1.0),
    ]


def test_renaming_a_generation_keeps_its_vectors_and_embeds_nothing(workspace):
    with workspace.project() as project:
        build(project)
        identity = project.generation().identity.identity
    workspace.write_spec(
        generations={"renamed": "model: ptah/deterministic\n    dimension: 32\n    batch_size: 4"},
        active="renamed",
    )
    with workspace.project() as project:
        embedder = model_of(project)
        summary = build(project)
        assert verify(project).ok
    assert (summary.generation, summary.identity, summary.embedded, summary.unchanged) == (
        "renamed",
        identity,
        0,
        10,
    )
    assert embedder.calls == []
    with sqlite3.connect(workspace.store_path) as connection:
        assert connection.execute("SELECT identity, name FROM generations").fetchall() == [
            (identity, "renamed")
        ]


def test_progress_is_reported_before_the_first_batch_and_after_each_commit(workspace):
    calls = []
    with workspace.project() as project:
        build(project, progress=lambda done, total: calls.append((done, total)), batch_rows=4)
    assert calls == [(0, 10), (4, 10), (8, 10), (10, 10)]


# --- interruption and concurrency, with a real second process ------------------------

SLOW_MODEL = "test/slow"
"""The model of the slow builds; the other process registers a slow deterministic embedder under
it."""

SLOW_BUILD = textwrap.dedent(
    """
    import sys, time
    from ptah.adapters.embedders.deterministic import DeterministicEmbedder
    from ptah.services.build import build
    from ptah.services.project import open_project
    from tests.embedders import EMBEDDERS

    class SlowAfterFirstBatch(DeterministicEmbedder):
        def embed_documents(self, texts):
            if self.calls:
                time.sleep(120)
            return super().embed_documents(texts)

    def report(done, total):
        print(done, total, flush=True)

    EMBEDDERS[sys.argv[2]] = SlowAfterFirstBatch(dimension=32)
    with open_project(sys.argv[1]) as project:
        build(project, batch_rows=3, progress=report)
    """
)


@contextmanager
def slow_build_of(workspace):
    """Generation ``docs`` of model ``test/slow``, built in another process (run from the repository
    root, so it imports ``tests.embedders``) and stopped inside its second batch after committing
    the first three rows."""
    workspace.write_spec(generations={"docs": f"model: {SLOW_MODEL}"})
    process = subprocess.Popen(
        [sys.executable, "-c", SLOW_BUILD, str(workspace.spec_path), SLOW_MODEL],
        cwd=Path(__file__).resolve().parents[2],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout.readline() == "0 10\n"
        assert process.stdout.readline() == "3 10\n"
        yield process
    finally:
        process.kill()
        process.wait()
