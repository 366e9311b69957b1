"""One door: a throwaway package outside ``ptah/``, installed as a distribution with an entry point
in the group ``ptah``, adds a command, a source, a channel and a report section; another, an add-on
like ptah-serve and ptah-ray, a command and a build engine -- with no change to ptah. Without ptah's
own add-ons, what they bring is refused in one sentence saying how to install them."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.adapters.test_embedder_registry import install, letters_project
from tests.cli.conftest import ptah_process as ptah
from tests.cli.conftest import python_with_add_ons

TOY_PLUGIN = '''
import dataclasses

import numpy as np
import typer

from ptah import hookimpl
from ptah.core.report import make_run
from ptah.core.parts import RunGeneration, Search
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
        return make_run(RunGeneration.from_dict(generation), Search.from_dict(search),
                        results, sides.measures)


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


# -- a third add-on, beside ptah-serve and ptah-ray: a command and a build engine
# ---------------------------------------------------------------------------------

CENSUS_ADD_ON = '''
import typer

from ptah import BuildSummary, hookimpl
from ptah.services.engines import Engine, EngineOption

census = typer.Typer(help="Count rows (a toy add-on).")


@census.command()
def hello():
    """Say where it comes from."""
    typer.echo("hello from the census add-on")


def build(project, name, progress, *, census_limit=None, census_label="counted"):
    """Count the generation's rows, embedding nothing."""
    generation = project.generation(name)
    template = generation.settings.template(project.spec.source)
    rows = sum(1 for _ in project.source.rows(template))
    if census_limit is not None:
        rows = min(rows, census_limit)
    return BuildSummary(
        generation=f"{census_label}:{generation.settings.name}",
        identity=generation.identity.identity,
        rows=rows,
        embedded=0,
        deleted=0,
        unchanged=rows,
        dimension=0,
        seconds=0.0,
    )


@hookimpl
def register_commands(cli):
    cli.add_typer(census, name="census")


@hookimpl
def register_engines(register):
    register(
        Engine(
            "census",
            (
                EngineOption("census_limit", int, "N", "census: count at most N rows."),
                EngineOption("census_label", str, "TEXT", "census: the summary's label."),
            ),
            build,
        )
    )
'''


def test_an_add_on_adds_a_command_and_a_build_engine_with_its_options_through_the_door(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    install(
        site, "census-add-on", "census = census_add_on", {"census_add_on": CENSUS_ADD_ON}, "ptah"
    )
    project = letters_project(tmp_path, model="ptah/deterministic")

    said = ptah("census", "hello", cwd=project, path=site)
    assert (said.returncode, said.stdout) == (0, "hello from the census add-on\n")
    shown = ptah("inference", "build", "--help", cwd=project, path=site)
    assert shown.returncode == 0, shown.stderr
    assert "--census-limit" in shown.stdout and "--census-label" in shown.stdout

    built = ptah(
        "inference",
        "build",
        "--engine",
        "census",
        "--census-limit",
        "3",
        "--census-label",
        "toy",
        "--json",
        cwd=project,
        path=site,
    )
    assert built.returncode == 0, built.stderr
    summary = json.loads(built.stdout)
    del summary["identity"]
    assert summary == {
        "generation": "toy:letters",
        "rows": 3,
        "embedded": 0,
        "deleted": 0,
        "unchanged": 3,
        "dimension": 0,
        "seconds": 0.0,
    }
    # an engine's option is refused by another engine, and its value is read as its kind
    local = ptah("inference", "build", "--census-limit", "3", cwd=project, path=site)
    assert (local.returncode, local.stderr.splitlines()[0]) == (
        2,
        '--census-limit applies to another build engine, not to "local"; choose the engine '
        "with --engine",
    )
    wrong = ptah(
        "inference", "build", "--engine", "census", "--census-limit", "x", cwd=project, path=site
    )
    assert wrong.returncode == 2
    assert "'x' is not a valid int" in wrong.stderr
    # nothing was embedded: the local engine still has every row to build
    assert ptah("inference", "verify", cwd=project, path=site).returncode != 0


# ptah's own add-ons hidden from importlib.metadata, whether installed or not: what a machine
# without them sees
WITHOUT_ADD_ONS = (
    "import importlib.metadata as metadata, sys\n"
    "found = metadata.entry_points\n"
    "def entry_points(**params):\n"
    "    return metadata.EntryPoints(e for e in found(**params) if e.dist is None or "
    "e.dist.name.lower().replace('_', '-') not in ('ptah-serve', 'ptah-ray'))\n"
    "metadata.entry_points = entry_points\n"
    "from ptah.cli import main\n"
    "main(sys.argv[1:])\n"
)


def without_add_ons(*argv, cwd) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_ADD_ONS, *map(str, argv)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
    )


def test_without_its_add_on_a_command_or_an_engine_says_how_to_install_it(tmp_path):
    project = letters_project(tmp_path, model="ptah/deterministic")
    for argv, asked, distribution in (
        (("serve",), "ptah serve", "ptah-serve"),
        (("token", "list"), "ptah token", "ptah-serve"),
        (("inference", "build", "--engine", "ray"), "--engine ray", "ptah-ray"),
    ):
        done = without_add_ons(*argv, cwd=project)
        assert (done.returncode, done.stdout, done.stderr) == (
            2,
            "",
            f"{asked} comes with the add-on {distribution}, which is not installed; install it "
            f"from a checkout of ptah with: pip install ./packages/{distribution}\n",
        ), argv
    shown = without_add_ons("--help", cwd=project)
    assert shown.returncode == 0
    assert "serve" not in shown.stdout and "token" not in shown.stdout
    other = without_add_ons("inference", "build", "--engine", "spark", cwd=project)
    assert (other.returncode, other.stderr) == (
        2,
        'there is no build engine "spark"; the engines are local\n',
    )


def test_the_door_knows_the_hooks_of_each_of_ptahs_own_plugins():
    """DEFAULT_PLUGINS names each module's hooks, so that a registry imports only the modules that
    fill it: the table is the modules' own @hookimpl functions, as the door reads them."""
    import importlib

    from ptah.core import plugins

    found = {
        name: sorted(plugins._of(importlib.import_module(name), "ptah").hooks)
        for name in plugins.DEFAULT_PLUGINS
    }
    assert found == {name: sorted(hooks) for name, hooks in plugins.DEFAULT_PLUGINS.items()}


def test_filling_one_registry_imports_only_the_plugins_that_fill_it():
    """The measures, in a fresh process with this repository's add-ons first on the path (their
    plugin modules are imported to look for measures too): neither the command line (typer) nor
    the formats or the other kinds' modules."""
    script = (
        "import sys\nfrom ptah.core.measures import kinds\n"
        "names = [kind.name for kind in kinds()]\n"
        "others = ('typer', 'ptah.cli', 'ptah.render.formats', 'ptah.adapters.rerankers.kinds',"
        " 'ptah.adapters.judges.kinds')\n"
        "print(names[:3], sorted(m for m in others if m in sys.modules))\n"
    )
    done = python_with_add_ons(script)
    assert done.stdout == "['recall', 'MRR', 'nDCG'] []\n", done.stderr
