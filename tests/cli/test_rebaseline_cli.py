"""``ptah report rebaseline``: an old report's runs measured again by identity on a new corpus, or
exit 3 saying why."""

from __future__ import annotations

import json

import pytest

import ptah
from tests.cli.test_judging_cli import space  # noqa: F401  (the fixture: a built deterministic project)


@pytest.fixture
def old_report(space, cli):  # noqa: F811
    folder = space.folder
    code, out, err = cli(
        "inference",
        "evaluate",
        "--spec",
        space.spec_path,
        "--corpus",
        folder / "support.yaml",
        "--channel",
        "vector",
        "--channel",
        "lexical",
        "--measure",
        "MAP@10",
        "--output",
        folder / "old.json",
    )
    assert code in (0, 1), err
    (folder / "new.yaml").write_text((folder / "support.yaml").read_text())
    code, out, err = cli(
        "corpus",
        "grade",
        folder / "new.yaml",
        "cancel",
        "2",
        "1",
        "--spec",
        space.spec_path,
    )
    assert code == 0, err
    return folder / "old.json"


def test_rebaseline_measures_the_old_runs_on_the_new_corpus(space, old_report, cli):  # noqa: F811
    folder = space.folder
    code, out, err = cli(
        "report",
        "rebaseline",
        old_report,
        "--corpus",
        folder / "new.yaml",
        "--spec",
        space.spec_path,
        "--output",
        folder / "new.json",
    )
    assert code == 0, err
    old, new = json.loads(old_report.read_text()), json.loads((folder / "new.json").read_text())
    new_digest = ptah.load_corpus(folder / "new.yaml").digest
    assert old["corpus"]["digest"] != new_digest == new["corpus"]["digest"]
    assert [
        (r["generation"]["name"], r["generation"]["identity"], r["search"]["channel"])
        for r in new["runs"]
    ] == [
        (r["generation"]["name"], r["generation"]["identity"], r["search"]["channel"])
        for r in old["runs"]
    ]
    with ptah.open_project(space.spec_path) as project:
        direct = project.evaluate(
            folder / "new.yaml", channels=["vector", "lexical"], measures=["MAP@10"]
        )
    assert [r["aggregates"] for r in new["runs"]] == [
        r.to_dict()["aggregates"] for r in direct.runs
    ]
    assert "MAP@10" in new["runs"][0]["aggregates"]
    assert out.splitlines()[-1] == f"wrote {folder / 'new.json'}"
    # the new report is a baseline of the new corpus: the same generation does not drop against it
    code, out, err = cli(
        "inference",
        "evaluate",
        "--spec",
        space.spec_path,
        "--corpus",
        folder / "new.yaml",
        "--baseline",
        folder / "new.json",
        "--max-ndcg-drop",
        "0",
        "--output",
        folder / "check.json",
    )
    assert code == 0, (
        err
    )  # a required key of the corpus is missed, as it was before: a known miss, not failed on
    gates = json.loads((folder / "check.json").read_text())["gates"]
    (ndcg,) = [g for g in gates if g["name"].startswith("max")]
    assert (ndcg["passed"], ndcg["drop"]) == (True, 0.0)
    (required,) = [g for g in gates if g["name"] == "required"]
    assert required["passed"] and required["known_misses"]


def test_rebaseline_refuses_a_generation_that_is_stale_now(space, old_report, cli):  # noqa: F811
    space.execute("UPDATE articles SET body = 'rewritten' WHERE id = 3")
    code, out, err = cli(
        "report",
        "rebaseline",
        old_report,
        "--corpus",
        space.folder / "new.yaml",
        "--spec",
        space.spec_path,
        "--output",
        space.folder / "new.json",
    )
    assert code == 3
    assert err == (
        f'cannot rebaseline {old_report}: generation "docs" is not complete and fresh: 1 vectors are '
        f"stale (e.g. 3). Run `ptah inference build docs --spec {space.spec_path}` first: a baseline is "
        "measured only on complete "
        "and fresh generations.\n"
    )
    assert not (space.folder / "new.json").exists()


def test_rebaseline_refuses_a_generation_whose_settings_changed(space, old_report, cli):  # noqa: F811
    space.write_spec(
        generations={"docs": "model: ptah/deterministic\n    dimension: 16\n    batch_size: 4"}
    )
    code, out, err = cli(
        "report",
        "rebaseline",
        old_report,
        "--corpus",
        space.folder / "new.yaml",
        "--spec",
        space.spec_path,
    )
    assert code == 3
    identity = json.loads(old_report.read_text())["runs"][0]["generation"]["identity"]
    assert err == (
        f"cannot rebaseline {old_report}: no generation declared now has the identity of its run docs "
        f"({identity}); its settings changed or it was removed, so its vectors are not the ones the old "
        "report measured\n"
    )
