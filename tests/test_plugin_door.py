"""One door: a throwaway package outside ``ptah/``, installed as a distribution with an entry point
in the group ``ptah``, adds a command, a source, a channel and a report section -- with no change
to ptah."""

from __future__ import annotations

import json

from tests.adapters.test_embedder_registry import install, letters_project
from tests.cli.conftest import ptah_process as ptah

TOY_PLUGIN = '''
import dataclasses

import numpy as np
import typer

from ptah import hookimpl
from ptah.core.outcomes import make_run
from ptah.core.ranking import key_columns
from ptah.adapters.sources.base import SourceKind
from ptah.adapters.sources.sqlite import SqliteSource
from ptah.services.channels.base import measure_scores


def open_toy(source, root):
    """toy:///FILE: a SQLite file under another name (a source kind of the plugin's own)."""
    database = "sqlite:///" + source.database.removeprefix("toy:///")
    return SqliteSource(dataclasses.replace(source, database=database), root)


class CountChannel:
    """Each row scored by how often the query's letters occur in its text."""

    name = "letters"
    needs_vectors = False

    def measure(self, plan, sides):
        spec = sides.project.spec
        template = spec.generation(plan.generation).template(spec.source)
        rows = sorted(sides.project.source.rows(template), key=lambda row: row.key)
        keys = [row.key for row in rows]
        scores = np.array(
            [[float(sum(row.text.count(c) for c in case.query)) for row in rows]
             for case in sides.corpus.cases]
        )
        results = measure_scores(
            sides.corpus.cases, keys, key_columns(keys), scores, sides.measures
        )
        generation = {
            "name": "letters:" + plan.generation,
            "identity": "sha256:" + "0" * 64,
            "model": "letter counts",
            "settings": {"text": template},
            "dimension": 26,
            "rows": len(rows),
            "verification": {"ok": True, "allow_stale": False},
            "text_of": plan.generation,
        }
        search = {"channel": "letters", "mode": "exact", "similarity": "letter count"}
        return make_run(generation, search, results,
                        sides.measures)


class Counted:
    def __init__(self, cases, ranked):
        self.cases, self.ranked = cases, ranked

    def to_dict(self):
        return {"cases": self.cases, "ranked": self.ranked}


class CountSection:
    """How many cases, and ranked rows over every run."""

    name = "counts"

    def compute(self, context):
        ranked = sum(len(case.ranking) for run in context.runs for case in run.cases)
        return Counted(len(context.corpus.cases), ranked)

    def gates(self, context):
        return ()


toy = typer.Typer(help="A toy command group from a plugin.")


@toy.command()
def hello(name: str = "world"):
    """Say hello."""
    typer.echo(f"hello, {name}, from the toy plugin")


@hookimpl
def register_commands(cli):
    cli.add_typer(toy, name="toy")


@hookimpl
def register_sources(register):
    register(SourceKind("toy", lambda database: database.startswith("toy:///"), open_toy))


@hookimpl
def register_channels(register):
    register(CountChannel())


@hookimpl
def register_sections(register):
    register(CountSection())
'''


def test_a_package_adds_a_command_a_source_a_channel_and_a_section_through_the_door(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    install(site, "toy-plugin", "toy = toy_plugin", {"toy_plugin": TOY_PLUGIN}, "ptah")
    project = letters_project(tmp_path, model="ptah/deterministic")
    spec = project / "ptah.yaml"
    spec.write_text(spec.read_text().replace("sqlite:///source.db", "toy:///source.db"))

    shown = ptah("--help", cwd=project, path=site)
    assert shown.returncode == 0, shown.stderr
    assert "toy" in shown.stdout
    said = ptah("toy", "hello", "--name", "door", cwd=project, path=site)
    assert (said.returncode, said.stdout) == (0, "hello, door, from the toy plugin\n")

    evaluated = ptah(
        "inference",
        "evaluate",
        "--spec",
        "ptah.yaml",
        "--corpus",
        "corpus.yaml",
        "--channel",
        "letters",
        "--output",
        "report.json",
        cwd=project,
        path=site,
    )
    assert evaluated.returncode == 0, evaluated.stderr
    report = json.loads((project / "report.json").read_text())
    (run,) = report["runs"]
    assert run["search"]["channel"] == "letters"
    # a: "aaaa" (4) and "ab" (1); b: "bbbb" (4) and "ab" (1); ccb: "cccc" (8) and "bbbb" (4)
    assert [[r["key"] for r in case["results"]] for case in run["cases"]] == [
        ["1", "3"],
        ["2", "3"],
        ["4", "2"],
    ]
    assert run["aggregates"]["recall"]["value"] == 1.0
    assert report["sections"] == {"counts": {"cases": 3, "ranked": 6}}


def test_without_the_package_the_channel_is_unknown_and_the_report_has_no_sections(tmp_path):
    project = letters_project(tmp_path, model="ptah/deterministic")
    evaluated = ptah(
        "inference",
        "evaluate",
        "--spec",
        "ptah.yaml",
        "--corpus",
        "corpus.yaml",
        "--channel",
        "letters",
        cwd=project,
    )
    assert evaluated.returncode == 2
    assert "unknown channel 'letters'" in evaluated.stderr
