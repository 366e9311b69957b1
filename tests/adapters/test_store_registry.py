"""The store and source seams: one registry decides each value's kind, and a store kind is added by
one registration.

The toy kind is a dict-backed store in this process (``store: memory:NAME``)
implementing the whole :class:`~ptah.adapters.stores.base.Store` protocol; a
project over it builds, verifies and evaluates through the CLI exactly as
over the SQLite store.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from contextlib import contextmanager

import numpy as np
import pytest

from ptah.adapters.sources import base as sources
from ptah.adapters.sources.base import Source, source_kind
from ptah.adapters.sources.postgres import PostgresSource
from ptah.adapters.sources.sqlite import SqliteSource
from ptah.adapters.stores import registry
from ptah.adapters.stores.base import (
    Capabilities,
    LexicalIndexStore,
    Snapshot,
    Store,
    VectorIndexSnapshot,
    VectorIndexStore,
    conformance_problem,
)
from ptah.adapters.stores.pgvector import PgvectorStore
from ptah.adapters.stores.records import GenerationRecord, Matrix, SnapshotReads, now
from ptah.adapters.stores.registry import StoreKind, capabilities_of, open_store, store_kind
from ptah.adapters.stores.sqlite import SqliteStore
from ptah.core.errors import EXIT_OPERATIONAL, CapabilityUnavailable, PluginError, StoreUnavailable
from ptah.services.project import open_project
from tests.conftest import run_cli
from tests.contract.conftest import make_workspace, postgres_database, postgres_server, postgres_url  # noqa: F401
from tests.services.conftest import Workspace

CORPUS = """\
version: 1
default_k: 3
cases:
  - id: billing
    query: cancel my subscription in billing
    relevant: {"1": 2, "6": 1}
  - id: login
    query: two-factor login with an app
    relevant: {"7": 1}
  - id: tokens
    query: developer API tokens
    relevant: {"8": 1, "4": 1}
"""


# --- the toy store: one registration ----------------------------------------------------


class MemoryState:
    """What ``memory:NAME`` holds, shared by every store opened on it in this process."""

    def __init__(self):
        self.generations: dict[str, GenerationRecord] = {}
        self.vectors: dict[
            str, dict[str, tuple[str, str, np.ndarray]]
        ] = {}  # identity -> row identity -> ...
        self.queries: dict[str, dict[str, np.ndarray]] = {}
        self.lexical: dict[
            tuple[str, str], tuple[str, bytes]
        ] = {}  # (fingerprint, settings) -> (template, bytes)
        self.locks: set[str] = set()

    def copy(self) -> MemoryState:
        """A frozen view: the dicts copied, the (read-only) vectors shared."""
        state = MemoryState()
        state.generations = dict(self.generations)
        state.vectors = {identity: dict(rows) for identity, rows in self.vectors.items()}
        state.queries = {identity: dict(cached) for identity, cached in self.queries.items()}
        return state


class MemorySnapshot:
    def __init__(self, state: MemoryState):
        self._state = state

    def generation(self, identity):
        return self._state.generations.get(identity)

    def generations(self):
        return sorted(
            self._state.generations.values(),
            key=lambda record: (record.created_at, record.identity),
        )

    def vector_count(self, identity):
        return len(self._state.vectors.get(identity, {}))

    def digests(self, identity):
        return {
            row: (key, digest)
            for row, (key, digest, _) in self._state.vectors.get(identity, {}).items()
        }

    def matrix(self, identity):
        record = self.generation(identity)
        if record is None:
            return Matrix([], [], np.empty((0, 0), dtype=np.float32))
        rows = sorted(self._state.vectors.get(identity, {}).items())
        vectors = np.zeros((len(rows), record.dimension), dtype=np.float32)
        for position, (_, (_, _, vector)) in enumerate(rows):
            vectors[position] = vector
        return Matrix([key for _, (key, _, _) in rows], [row for row, _ in rows], vectors)

    def vector_blocks(self, identity, rows):
        whole = self.matrix(identity)
        for start in range(0, len(whole.keys), rows):
            end = start + rows
            yield Matrix(
                whole.keys[start:end], whole.row_identities[start:end], whole.vectors[start:end]
            )

    def check(self, identity):
        if not np.isfinite(self.matrix(identity).vectors).all():
            raise StoreUnavailable(
                f"store memory: generation {identity} holds a vector that is not finite"
            )

    def cached_queries(self, identity, texts):
        record = self.generation(identity)
        cached = self._state.queries.get(identity, {})
        return {
            text: cached[text].copy()
            for text in dict.fromkeys(texts)
            if text in cached and record is not None and cached[text].shape == (record.dimension,)
        }


class MemoryStore(
    SnapshotReads
):  # generation(s), cached_queries and the context manager, through snapshots
    capabilities = Capabilities(lexical_index=True, vector_index=False)

    def __init__(self, name: str, state: MemoryState):
        self.where = f"store memory:{name}"
        self._state = state

    @contextmanager
    def snapshot(self):
        yield MemorySnapshot(self._state.copy())

    def register_generation(self, record):
        stored = self._state.generations.get(record.identity)
        if stored is not None and stored.dimension != record.dimension:
            raise StoreUnavailable(
                f"generation {record.identity} is stored with dimension {stored.dimension}, "
                f"but its model now gives {record.dimension}."
            )
        created = stored.created_at if stored is not None else now()
        self._state.generations[record.identity] = dataclasses.replace(
            record, created_at=created, updated_at=now()
        )
        self._state.vectors.setdefault(record.identity, {})

    def write_vectors(self, identity, rows, vectors):
        data = np.array(vectors, dtype=np.float32)
        data.flags.writeable = False
        held = self._state.vectors[identity]
        for (row, key, digest), vector in zip(rows, data, strict=True):
            held[row] = (key, digest, vector)

    def delete_vectors(self, identity, row_identities):
        held = self._state.vectors.get(identity, {})
        return sum(held.pop(row, None) is not None for row in list(row_identities))

    def drop_generation(self, identity):
        self._state.generations.pop(identity, None)
        self._state.queries.pop(identity, None)
        return len(self._state.vectors.pop(identity, {}))

    def cache_queries(self, identity, vectors):
        cached = self._state.queries.setdefault(identity, {})
        cached.update(
            {
                text: np.array(vector, dtype=np.float32).reshape(-1)
                for text, vector in vectors.items()
            }
        )

    def lexical_index(self, fingerprint, settings):
        found = self._state.lexical.get((fingerprint, settings))
        return None if found is None else found[1]

    def save_lexical_index(
        self, fingerprint, settings, template_sha256, rows, vocabulary, serialized
    ):
        self._state.lexical = {
            where: held
            for where, held in self._state.lexical.items()
            if (held[0], where[1]) != (template_sha256, settings)
        }
        self._state.lexical[(fingerprint, settings)] = (template_sha256, bytes(serialized))

    @contextmanager
    def build_lock(self, identity, name):
        if identity in self._state.locks:
            raise StoreUnavailable(
                f"generation {name} is being built by another build; wait for it to finish."
            )
        self._state.locks.add(identity)
        try:
            yield
        finally:
            self._state.locks.discard(identity)

    def close(self):
        pass


MEMORY: dict[str, MemoryState] = {}


def open_memory(location: str, create: bool) -> MemoryStore | None:
    name = location.removeprefix("memory:")
    if name not in MEMORY:
        if not create:
            return None
        MEMORY[name] = MemoryState()
    return MemoryStore(name, MEMORY[name])


@pytest.fixture
def memory_kind():
    registry.register(
        StoreKind(
            "memory",
            MemoryStore.capabilities,
            lambda value: value.startswith("memory:"),
            open_memory,
        )
    )
    yield
    registry.unregister("memory")
    MEMORY.clear()


# --- which kind a value is ---------------------------------------------------------------


def test_store_kind_is_pgvector_for_postgres_urls_and_sqlite_for_everything_else():
    assert [
        store_kind(value)
        for value in (
            "postgresql://u@db/x",
            "postgres://db/x",
            "/srv/ptah.db",
            ".ptah/ptah.db",
            "sqlite:///x.db",
            "memory:x",
        )
    ] == ["pgvector", "pgvector", "sqlite", "sqlite", "sqlite", "sqlite"]
    assert capabilities_of("postgresql://db/x") == Capabilities(
        lexical_index=True, vector_index=True
    )
    assert capabilities_of("/srv/ptah.db") == Capabilities(lexical_index=True, vector_index=False)


def test_source_kind_reads_only_the_schemes_a_kind_registered():
    assert [
        source_kind(value)
        for value in (
            "sqlite:///support.db",
            "sqlite:////srv/x.db",
            "postgresql://db/x",
            "postgres://db/x",
            "sqlite://x.db",
            "mysql://db/x",
            "support.db",
        )
    ] == ["sqlite", "sqlite", "postgresql", "postgresql", None, None, None]


def test_a_registered_kind_claims_its_values_and_leaves_when_unregistered(memory_kind):
    assert store_kind("memory:x") == "memory"
    assert store_kind("postgresql://db/x") == "pgvector" and store_kind("x.db") == "sqlite"
    registry.unregister("memory")
    assert store_kind("memory:x") == "sqlite"


def test_a_kind_name_is_registered_once(memory_kind):
    with pytest.raises(
        PluginError, match='the store kind "memory" is registered already'
    ) as raised:
        registry.register(StoreKind("memory", Capabilities(), lambda value: False, open_memory))
    assert raised.value.exit_code == EXIT_OPERATIONAL
    with pytest.raises(PluginError, match='the source kind "sqlite" is registered already'):
        sources.register(
            sources.SourceKind("sqlite", lambda database: False, lambda spec, root: None)
        )


def test_a_kind_that_opens_something_short_of_a_store_is_refused():
    class Partial(MemoryStore):
        lexical_index = None  # declares lexical indexes, keeps none

    registry.register(
        StoreKind(
            "partial",
            MemoryStore.capabilities,
            lambda value: value.startswith("partial:"),
            lambda location, create: Partial("p", MemoryState()),
        )
    )
    try:
        with pytest.raises(PluginError) as raised:
            open_store("partial:p", create=True)
    finally:
        registry.unregister("partial")
    assert str(raised.value) == (
        'the store kind "partial" opened Partial, but it is not a LexicalIndexStore, as it declares '
        "capabilities.lexical_index: it lacks lexical_index"
    )


# --- the protocols ----------------------------------------------------------------------


def test_both_stores_sources_and_snapshots_conform_to_what_they_declare(tmp_path, postgres_url):
    with SqliteStore(tmp_path / "ptah.db") as sqlite, PgvectorStore(postgres_url) as pgvector:
        assert (isinstance(sqlite, LexicalIndexStore), isinstance(sqlite, VectorIndexStore)) == (
            True,
            False,
        )
        assert (
            isinstance(pgvector, LexicalIndexStore),
            isinstance(pgvector, VectorIndexStore),
        ) == (True, True)
        assert conformance_problem(sqlite) is None and conformance_problem(pgvector) is None
        with sqlite.snapshot() as first, pgvector.snapshot() as second:
            assert (isinstance(first, Snapshot), isinstance(first, VectorIndexSnapshot)) == (
                True,
                False,
            )
            assert (isinstance(second, Snapshot), isinstance(second, VectorIndexSnapshot)) == (
                True,
                True,
            )
    assert issubclass(SqliteSource, Source) and issubclass(PostgresSource, Source)
    with MemoryStore("x", MemoryState()) as memory:
        assert isinstance(memory, Store) and conformance_problem(memory) is None
        with memory.snapshot() as snapshot:
            assert isinstance(snapshot, Snapshot)


def test_missing_psycopg_says_how_to_install_it(tmp_path, monkeypatch):
    space = make_workspace(tmp_path, "postgresql://ptah@/nowhere?host=/nonexistent")
    monkeypatch.setitem(sys.modules, "psycopg", None)  # import psycopg raises ImportError
    for module in (
        "ptah.adapters.postgres",
        "ptah.adapters.stores.pgvector",
        "ptah.adapters.stores.pgvector_lock",
    ):
        monkeypatch.delitem(sys.modules, module, raising=False)
    with (
        open_project(str(space.spec_path)) as project,
        pytest.raises(CapabilityUnavailable) as raised,
    ):
        project.store()
    assert raised.value.exit_code == EXIT_OPERATIONAL
    assert str(raised.value).endswith(
        "; install it with: pip install 'psycopg[binary]>=3.1' (the postgres extra of ptah-eval)"
    )


# --- a project over the toy store -------------------------------------------------------


def workspace(folder, store: str | None) -> Workspace:
    space = make_workspace(folder, store)
    (folder / "corpus.yaml").write_text(CORPUS)
    return space


def measured(capsys, space: Workspace, *extra: str) -> dict:
    spec = ("--spec", space.spec_path)
    code, out, err = run_cli(
        capsys,
        "inference",
        "evaluate",
        "--corpus",
        space.folder / "corpus.yaml",
        "--json",
        "--bootstrap",
        200,
        *extra,
        *spec,
    )
    assert (code, err) == (0, "")
    runs = json.loads(out)["runs"]
    for run in runs:
        run.pop("timings", None), run.pop("cost")  # seconds: never the same twice
    return runs


def test_a_project_over_a_registered_store_builds_verifies_and_evaluates_as_over_sqlite(
    memory_kind, tmp_path, capsys
):
    sqlite, memory = (
        workspace(tmp_path / "sqlite", None),
        workspace(tmp_path / "memory", "memory:x"),
    )
    summaries = []
    for space in (sqlite, memory):
        code, out, err = run_cli(capsys, "inference", "build", "--json", "--spec", space.spec_path)
        assert (code, err) == (0, "")
        summary = json.loads(out)
        summaries.append(
            {
                name: summary[name]
                for name in ("identity", "rows", "embedded", "deleted", "dimension")
            }
        )
        code, out, err = run_cli(capsys, "inference", "verify", "--json", "--spec", space.spec_path)
        assert (code, err) == (0, "")
        verified = json.loads(out)
        assert (verified["coverage"], verified["freshness"], verified["orphans"]) == (1.0, 1.0, 0)
    assert (
        summaries[0] == summaries[1]
        and summaries[1]["rows"] == 10
        and summaries[1]["embedded"] == 10
    )
    assert list(MEMORY) == ["x"] and len(MEMORY["x"].vectors[summaries[1]["identity"]]) == 10
    assert not (memory.folder / ".ptah").exists()  # nothing went to a SQLite file

    for extra, runs in (((), 1), (("--channel", "lexical", "--channel", "hybrid"), 2)):
        expected, got = measured(capsys, sqlite, *extra), measured(capsys, memory, *extra)
        assert got == expected
        assert [len(run["cases"]) for run in got] == [3] * runs
    assert (
        len(MEMORY["x"].queries[summaries[1]["identity"]]) == 3
    )  # the query vectors were cached in it
    assert len(MEMORY["x"].lexical) == 1

    memory.execute("UPDATE articles SET body = 'Changed.' WHERE id = 3")
    code, out, _ = run_cli(capsys, "inference", "verify", "--json", "--spec", memory.spec_path)
    assert (code, json.loads(out)["stale"]) == (1, 1)
