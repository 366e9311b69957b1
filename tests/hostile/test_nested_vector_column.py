"""A table's own vector column holding JSON nested 100,000 deep: a bad row named (exit 2), never a
RecursionError."""

from __future__ import annotations

from tests.conftest import run_cli
from tests.contract.conftest import make_workspace


def test_json_nested_deeper_than_the_parser_goes_is_a_row_that_holds_no_vector(tmp_path, capsys):
    space = make_workspace(tmp_path, None)
    space.execute("ALTER TABLE articles ADD COLUMN embedding TEXT")
    space.execute("UPDATE articles SET embedding = ?", ("[" + ",".join(["0.5"] * 32) + "]",))
    space.execute(
        "UPDATE articles SET embedding = ? WHERE id = 5", ("[" * 100_000 + "]" * 100_000,)
    )
    space.write_spec(
        generations={
            "ext": "vectors: {column: embedding}\n    model: ptah/deterministic\n    dimension: 32"
        },
        active="ext",
    )
    expected = (
        "sqlite:///source.db table articles: column embedding cannot be read as vectors: 1 rows hold text that is not a JSON array of "
        "numbers, e.g. the rows with keys '5'\n"
    )
    for argv in (["verify"], ["search", "password"]):
        assert run_cli(capsys, "inference", *argv, "--spec", space.spec_path) == (
            2,
            "",
            expected,
        ), argv
