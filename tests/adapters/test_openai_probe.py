"""A service generation's usage (build summary, report) and its probe against a silent model
change."""

from __future__ import annotations

import json
import sqlite3

import pytest

from ptah.adapters.embedders.openai_compatible import PROBE_TEXT
from ptah.services.project import NOT_CHECKED, TOLERANCE
from tests.adapters.openai_server import MODEL
from tests.adapters.test_openai_embedder import (
    CORPUS,
    KEY,
    fast_policy,  # noqa: F401 (a fixture)
    local,  # noqa: F401 (a fixture)
    run,
    served_example,
    server,  # noqa: F401 (a fixture)
)
from tests.conftest import run_cli

ROWS, BATCH = 187, 16
MEASURE_ADVICE = (
    "To measure it as it is now, build it again from empty (undeclare it, run `ptah inference "
    "prune`, declare it again); or pass --allow-stale to measure it anyway."
)


@pytest.fixture
def project(tmp_path, server, monkeypatch):  # noqa: F811
    monkeypatch.setenv("PTAH_TEST_KEY", KEY)
    return served_example(tmp_path, server, BATCH)


def evaluate(project, capsys, *extra):
    code, out = run(
        [
            "inference",
            "evaluate",
            "--spec",
            project / "ptah.yaml",
            "--corpus",
            CORPUS,
            "--generation",
            "served",
            "--json",
            *extra,
        ],
        capsys,
    )
    return code, (json.loads(out)["runs"][0]["generation"] if code in (0, 1) else out)


def forget_queries(project):
    with sqlite3.connect(
        project / ".ptah" / "ptah.db"
    ) as connection:  # the next evaluate is cold again
        connection.execute("DELETE FROM query_cache")


def test_build_and_a_cold_evaluate_record_usage_and_the_probe_passes(project, server, capsys):
    code, out = run(
        ["inference", "build", "served", "--spec", project / "ptah.yaml", "--json"], capsys
    )
    assert code == 0, out
    usage = json.loads(out)["usage"]
    requests = 1 + -(
        -ROWS // BATCH
    )  # the probe (which also told the dimension), then the rows 16 at a time
    assert (usage["requests"], usage["retries"], usage["backoff_seconds"]) == (requests, 0, 0.0)
    assert usage["server_prompt_tokens"] == sum(
        len(text.split()) for r in server.requests for text in r["body"]["input"]
    )
    assert usage["server_seconds"] > 0
    code, out = run(["inference", "build", "served", "--spec", project / "ptah.yaml"], capsys)
    assert out.endswith(
        " 0 embedded, 187 unchanged, 0 deleted in " + out.split(" in ")[-1]
    )  # nothing asked
    with sqlite3.connect(project / ".ptah" / "ptah.db") as connection:
        settings = json.loads(
            connection.execute("SELECT settings FROM generations WHERE name = 'served'").fetchone()[
                0
            ]
        )
    assert settings["probe"]["model"] == MODEL and len(settings["probe"]["vector"]) == 384

    before = len(server.requests)
    code, generation = evaluate(project, capsys)
    assert code in (0, 1), generation
    assert generation["probe"] == {
        "checked": True,
        "passed": True,
        "cosine": 1.0,
        "tolerance": TOLERANCE,
        "model_at_build": MODEL,
        "model_now": MODEL,
    }
    assert generation["usage"]["requests"] == len(server.requests) - before
    assert generation["usage"]["server_prompt_tokens"] > 0
    assert "probe" not in generation["settings"]

    before = len(server.requests)
    code, generation = evaluate(project, capsys)  # warm: nothing asked, so neither checked nor used
    assert len(server.requests) == before
    assert generation["probe"] == NOT_CHECKED and "usage" not in generation


def test_a_changed_model_refuses_a_cold_evaluate_with_exit_3_and_allow_stale_measures_it(
    project, server, capsys
):
    code, out = run(
        ["inference", "build", "served", "--spec", project / "ptah.yaml", "--quiet"], capsys
    )
    assert code == 0, out
    server.always = "perturbed"
    code, out = evaluate(project, capsys)
    assert code == 3
    assert out.startswith(
        'generation "served": its probe vector\'s cosine with the one stored at build is 0.'
    )
    assert out.endswith(
        f", below {TOLERANCE}, so the model behind the name may have changed and the stored "
        f"vectors may not match new queries. {MEASURE_ADVICE}\n"
    )
    code, generation = evaluate(project, capsys, "--allow-stale")
    assert code in (0, 1), generation
    probe = generation["probe"]
    assert (probe["checked"], probe["passed"], probe["model_now"]) == (True, False, MODEL)
    assert 0.5 < probe["cosine"] < TOLERANCE

    forget_queries(project)
    server.always = "no-model"  # the server names no model now; at build it named the one asked
    code, out = evaluate(project, capsys)
    assert (code, out) == (
        3,
        f'generation "served": the server now answers as model (no model named), at build as '
        f'"{MODEL}", so the model behind the name may have changed and the stored vectors may '
        f"not match new queries. {MEASURE_ADVICE}\n",
    )
    server.always = (
        "other-model"  # another name than asked: refused by the client whatever --allow-stale says
    )
    code, out = evaluate(project, capsys, "--allow-stale")
    assert code == 3 and '"other-model"' in out and f'"{MODEL}"' in out, out


def test_a_local_generation_reports_no_usage_and_no_probe(project, capsys):
    code, out, err = run_cli(
        capsys, "inference", "build", "title-body", "--spec", project / "ptah.yaml", "--json"
    )
    assert (code, err) == (0, "loading all-MiniLM-L6-v2 …\n") and "usage" not in json.loads(out), (
        out
    )
    code, out, err = run_cli(
        capsys,
        "inference",
        "evaluate",
        "--spec",
        project / "ptah.yaml",
        "--corpus",
        CORPUS,
        "--generation",
        "title-body",
        "--json",
    )
    assert (
        err == "loading all-MiniLM-L6-v2 …\n"
    )  # the queries' model, loaded again in this new command
    generation = json.loads(out)["runs"][0]["generation"]
    assert (
        "probe" not in generation
        and "usage" not in generation
        and "probe" not in generation["settings"]
    )


def test_a_changed_model_refuses_a_cold_search_and_a_build_that_would_embed_more_rows(
    project, server, capsys
):
    spec = project / "ptah.yaml"
    code, out = run(["inference", "build", "served", "--spec", spec, "--quiet"], capsys)
    assert code == 0, out
    code, out = run(
        ["inference", "search", "-g", "served", "--spec", spec, "--json", "reset my password"],
        capsys,
    )
    assert code == 0, out  # the model is unchanged: the probe passes
    server.always = "no-model"
    changed = (
        f'generation "served": the server now answers as model (no model named), at build as "{MODEL}", so '
        "the model behind the name may have changed and the stored vectors may not match new queries. "
    )
    code, out = run(
        ["inference", "search", "-g", "served", "--spec", spec, "a query never asked"], capsys
    )
    assert (code, out) == (
        3,
        changed + "Nothing was searched; build it again from empty (undeclare it, run `ptah "
        "inference prune`, declare it again).\n",
    )
    code, out = run(
        ["inference", "search", "-g", "served", "--spec", spec, "--json", "reset my password"],
        capsys,
    )
    assert code == 0, out  # a query the cache holds asks the server nothing, so nothing is checked
    with sqlite3.connect(project / "support.db") as connection:
        connection.execute(
            "INSERT INTO articles VALUES (9999, 'New', 'A row added after the build', 'billing', 'published')"
        )
    connection.close()
    requests = len(server.requests)
    code, out = run(["inference", "build", "served", "--spec", spec], capsys)
    assert (code, out) == (
        3,
        changed + "Embedding more rows now would mix two models' vectors in one generation, so "
        "nothing was embedded; build it again from empty (undeclare it, run `ptah inference "
        "prune`, declare it again).\n",
    )
    assert [r["body"]["input"] for r in server.requests[requests:]] == [
        [PROBE_TEXT]
    ]  # the probe, and no row
    server.always = None
    code, out = run(["inference", "build", "served", "--spec", spec, "--json"], capsys)
    assert code == 0 and json.loads(out)["embedded"] == 1, out
