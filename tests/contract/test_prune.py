"""``ptah inference prune`` on both stores: superseded generations go, declared and --keep ones
stay."""

from __future__ import annotations

import json

import pytest

from ptah.core.errors import EXIT_INPUT, EXIT_OPERATIONAL

DOCS_32 = "model: ptah/deterministic\n    dimension: 32\n    batch_size: 4"
DOCS_16 = "model: ptah/deterministic\n    dimension: 16\n    batch_size: 4"
OTHER = "model: ptah/deterministic\n    dimension: 8"


@pytest.fixture
def superseded(store_workspace, cli):
    """``docs`` built at dimension 32, then its settings changed to 16 and built again; ``other``
    built too.

    Returns the workspace, the superseded identity and the two current ones.
    """
    space = store_workspace
    space.write_spec(generations={"docs": DOCS_32, "other": OTHER})
    for name in ("docs", "other"):
        assert cli("inference", "build", name, "--spec", space.spec_path, "--quiet")[0] == 0
    with space.project() as project:
        old = project.generation("docs").identity.identity
        other = project.generation("other").identity.identity
    space.write_spec(generations={"docs": DOCS_16, "other": OTHER})
    assert cli("inference", "build", "--spec", space.spec_path, "--quiet")[0] == 0
    with space.project() as project:
        new = project.generation("docs").identity.identity
    return space, old, new, other


def stored(space) -> dict[str, int]:
    with space.project() as project:
        store = project.store()
        with store.snapshot() as snapshot:
            return {
                record.identity: snapshot.vector_count(record.identity)
                for record in snapshot.generations()
            }


def test_a_dry_run_names_what_would_go_and_removes_nothing(superseded, cli):
    space, old, new, other = superseded
    code, out, err = cli("inference", "prune", "--dry-run", "--spec", space.spec_path)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].startswith(
        f"would remove docs ({old[:19]}, ptah/deterministic): 10 vectors, last built "
    )
    assert sorted(lines[1:3]) == sorted(
        [
            f"kept docs ({new[:19]}): declared as docs",
            f"kept other ({other[:19]}): declared as other",
        ]
    )
    assert lines[3:] == [
        "would remove 1 superseded generation (10 vectors); run without --dry-run to remove them"
    ]
    assert stored(space) == {old: 10, new: 10, other: 10}


def test_prune_removes_the_superseded_generation_its_vectors_and_cached_queries(superseded, cli):
    space, old, new, other = superseded
    code, out, err = cli("inference", "prune", "--json", "--spec", space.spec_path)
    assert (code, err) == (0, "")
    result = json.loads(out)
    assert (result["dry_run"], result["vectors_removed"]) == (False, 10)
    assert [
        (g["identity"], g["name"], g["vectors"], g["kept_because"]) for g in result["removed"]
    ] == [(old, "docs", 10, None)]
    assert sorted((g["identity"], g["kept_because"]) for g in result["kept"]) == sorted(
        [(new, "declared as docs"), (other, "declared as other")]
    )
    assert stored(space) == {new: 10, other: 10}
    with space.project() as project:
        assert project.store().cached_queries(old, ["anything"]) == {}
    code, out, _ = cli("inference", "prune", "--spec", space.spec_path)
    assert code == 0
    assert out.splitlines()[-1] == "nothing to prune: every stored generation is declared or kept"
    code, out, _ = cli("inference", "list", "--spec", space.spec_path)
    assert "superseded" not in out


def test_pgvector_drops_the_generations_table(superseded, cli, store_kind, postgres_server):
    if store_kind != "pgvector":
        pytest.skip("the pgvector store's tables")
    space, old, _, _ = superseded
    import psycopg

    from ptah.adapters.stores.pgvector_schema import vectors_table

    def tables() -> set[str]:
        with psycopg.connect(space.store, autocommit=True) as connection:
            rows = connection.execute(
                "SELECT tablename FROM pg_tables WHERE tablename LIKE 'ptah_vectors_%'"
            )
            return {row[0] for row in rows}

    assert vectors_table(old) in tables()
    assert cli("inference", "prune", "--spec", space.spec_path)[0] == 0
    assert vectors_table(old) not in tables()
    assert len(tables()) == 2


@pytest.mark.parametrize("how", ["name", "identity"])
def test_keep_by_name_or_identity_keeps_a_superseded_generation(superseded, cli, how):
    space, old, new, other = superseded
    wanted = "docs" if how == "name" else old[:19]
    code, out, err = cli("inference", "prune", "--keep", wanted, "--spec", space.spec_path)
    assert (code, err) == (0, "")
    assert f"kept docs ({old[:19]}): --keep {wanted}" in out.splitlines()
    assert out.splitlines()[-1] == "nothing to prune: every stored generation is declared or kept"
    assert stored(space) == {old: 10, new: 10, other: 10}


@pytest.mark.parametrize(
    "wanted, message",
    [
        (
            "doc",
            "ptah: --keep doc: no stored or declared generation has that name or identity "
            "(see `ptah inference list`); nothing was removed.",
        ),
        (
            "sha256:abc",
            "ptah: --keep sha256:abc: an identity needs at least its first 19 characters "
            "(as `ptah inference list` shows them).",
        ),
    ],
)
def test_a_keep_that_names_nothing_is_exit_2_and_removes_nothing(superseded, cli, wanted, message):
    space, old, new, other = superseded
    code, out, err = cli("inference", "prune", "--keep", wanted, "--spec", space.spec_path)
    assert (code, out) == (EXIT_INPUT, "")
    assert err.strip().endswith(message.removeprefix("ptah: "))
    assert stored(space) == {old: 10, new: 10, other: 10}


def test_a_generation_being_built_is_not_removed_exit_3(superseded, cli):
    space, old, new, other = superseded
    with space.project() as project:
        with project.store().build_lock(old, "docs"):
            code, out, err = cli("inference", "prune", "--spec", space.spec_path)
    assert code == EXIT_OPERATIONAL
    assert "docs" in err and "build" in err
    assert stored(space) == {old: 10, new: 10, other: 10}


def test_nothing_built_is_nothing_to_prune_and_creates_no_store(store_workspace, cli):
    code, out, err = cli("inference", "prune", "--spec", store_workspace.spec_path)
    assert (code, out, err) == (
        0,
        "nothing to prune: every stored generation is declared or kept\n",
        "",
    )
    with store_workspace.project() as project:
        assert project.store() is None
