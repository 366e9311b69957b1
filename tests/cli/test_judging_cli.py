"""Filling the holes end to end: holes, the judge session in a real pseudo-terminal, scripted judge,
add, pin.

A real SQLite source and store and the deterministic embedder; the session is
``python -m ptah`` driven through a pseudo-terminal by pexpect, a key at a
time as a person types.
"""

from __future__ import annotations

import difflib
import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

import ptah
from ptah.adapters.judgements_yaml import read_record
from ptah.core.provenance import text_digest
from ptah.services.project import open_project
from ptah.services.search import search
from tests.adapters.test_corpus_edit import (
    CORPUS,
)  # comments, flow lists, quoted keys, a folded query
from tests.contract.conftest import make_workspace
from tests.services.conftest import DOCS, Workspace

TEXT = {str(row[0]): Workspace.judging_text(row) for row in DOCS}  # what a person judges a row by
NAMED = {"cancel": {"1"}, "invoices": {"3", "6"}, "login": {"7", "9"}}
ALREADY = {
    "cancel": ['"1" required (grade 1)'],
    "invoices": ['"3" grade 2', '"6" grade 1'],
    "login": ['"7" required (grade 1)', '"9" forbidden'],
}


@pytest.fixture
def space(tmp_path, cli):
    space = make_workspace(tmp_path, None)
    (tmp_path / "support.yaml").write_text(CORPUS)
    assert cli("inference", "build", "--spec", space.spec_path, "--quiet").code == 0
    return space


def top(space, query: str, k: int = 3) -> list[str]:
    with open_project(str(space.spec_path)) as project:
        (ranked,) = search(project, None, [query], k)
    return [key for key, _ in ranked]


def expected_worklist(space, runs: dict[str, dict[str, list[str]]]) -> list[dict]:
    """The pooled holes written out from the definitions: unjudged keys of each run's top 3, best
    rank first."""
    cases = []
    for case_id, query in (
        ("cancel", "how do I cancel my subscription?"),
        ("invoices", "export invoices as pdf"),
        ("login", "two factor login"),
    ):
        found: dict[str, dict[str, int]] = {}
        for run_name, rankings in runs.items():
            for rank, key in enumerate(rankings[case_id][:3], start=1):
                if key not in NAMED[case_id]:
                    found.setdefault(key, {})[run_name] = rank
        order = list(runs)
        ranked = sorted(
            found.items(),
            key=lambda item: (
                min(item[1].values()),
                min(order.index(n) for n, r in item[1].items() if r == min(item[1].values())),
                item[0],
            ),
        )
        if ranked:
            cases.append(
                {
                    "id": case_id,
                    "query": query,
                    "k": 3,
                    "judged": ALREADY[case_id],
                    "holes": [
                        {
                            "key": key,
                            "ranks": ranks,
                            "text": TEXT[key],
                            "text_sha256": text_digest(TEXT[key]),
                        }
                        for key, ranks in ranked
                    ],
                }
            )
    return cases


def test_holes_lists_the_pooled_unjudged_rows_of_every_run_with_their_ranks_and_text(space, cli):
    folder = space.folder
    code, out, err = cli(
        "corpus",
        "holes",
        folder / "support.yaml",
        "--spec",
        space.spec_path,
        "--channel",
        "vector",
        "--channel",
        "lexical",
        "--output",
        folder / "wl.json",
    )
    assert code == 0, err
    with ptah.open_project(space.spec_path) as project:
        report = project.evaluate(folder / "support.yaml", channels=["vector", "lexical"])
    runs = {run.name: {case.id: list(case.keys) for case in run.cases} for run in report.runs}
    assert runs["docs"] == {
        case: top(space, query)
        for case, query in (
            ("cancel", "how do I cancel my subscription?"),
            ("invoices", "export invoices as pdf"),
            ("login", "two factor login"),
        )
    }
    worklist = json.loads((folder / "wl.json").read_text())
    cases = expected_worklist(space, runs)
    assert worklist == {
        "format": "ptah-worklist@1",
        "corpus": {"path": str(folder / "support.yaml"), "digest": report.corpus.digest},
        "judgements": {
            "path": str(folder / "support.judged.yaml"),
            "digest": read_record(folder / "support.yaml").digest(),
        },
        "runs": ["docs", "lexical:docs"],
        "text_of": "columns title, body",
        "holes": sum(len(case["holes"]) for case in cases),
        "cases": cases,
    }
    assert worklist["holes"] == 7
    first = cases[0]["holes"][0]
    assert f'  "{first["key"]}": ' in out and out.endswith(
        f"7 holes in 3 cases; judge them with: ptah corpus judge {folder / 'support.yaml'} --worklist {folder / 'wl.json'}"
        f" --spec {space.spec_path}\n"
        f"wrote {folder / 'wl.json'}\n"
    )


def judge_session(folder) -> pexpect.spawn:
    return pexpect.spawn(
        sys.executable,
        ["-m", "ptah", "corpus", "judge", "support.yaml", "--worklist", "wl.json"],
        cwd=str(folder),
        encoding="utf-8",
        timeout=60,
        dimensions=(40, 200),
    )


def worklist_session(space, cli) -> tuple[list[tuple[str, str]], pexpect.spawn]:
    """The worklist's (case, key) items, written to wl.json, and a judge session over it."""
    folder = space.folder
    assert (
        cli(
            "corpus",
            "holes",
            folder / "support.yaml",
            "--spec",
            space.spec_path,
            "--output",
            folder / "wl.json",
        )[0]
        == 0
    )
    listed = json.loads((folder / "wl.json").read_text())
    return [
        (case["id"], hole["key"]) for case in listed["cases"] for hole in case["holes"]
    ], judge_session(folder)


def graded(folder) -> dict[tuple[str, str], float]:
    return {
        (case, key): judgement.grade
        for case, keys in read_record(folder / "support.yaml").cases.items()
        for key, judgement in keys.items()
    }


def ended(session: pexpect.spawn, leave=lambda session: session.send("q")) -> str:
    """What the session printed once ``leave`` (q: save and quit) answered its next prompt and it
    exited 0."""
    session.expect_exact("q save and quit] ")
    leave(session)
    session.expect(pexpect.EOF)
    session.close()
    assert session.exitstatus == 0, session.before
    return session.before


def test_the_terminal_session_writes_only_added_lines_and_the_record_and_resumes(space, cli):
    folder = space.folder
    items, session = worklist_session(space, cli)
    assert len(items) == 7
    before = (folder / "support.yaml").read_text()
    code, digest_before, _ = cli("corpus", "digest", folder / "support.yaml")
    session.expect_exact("7 rows to judge")
    for _index, key in enumerate(["2", "s", "u", "0", "f", "r", "1"]):
        session.expect_exact("q save and quit] ")
        session.send(key)
        if key == "u":
            session.expect_exact("[2/7]")
    # 1: grade 2, 2: skipped then undone and judged 0, 3: forbidden, 4: required, 5: grade 1
    answers = {
        items[0]: (2.0, None),
        items[1]: (0.0, None),
        items[2]: (0.0, "forbidden"),
        items[3]: (1.0, "required"),
        items[4]: (1.0, None),
    }
    session.expect_exact("[6/7]")
    transcript = ended(session)
    after = (folder / "support.yaml").read_text()
    code, digest_after, _ = cli("corpus", "digest", folder / "support.yaml")
    assert (
        f"{digest_before.strip()} before" in transcript
        and f"{digest_after.strip()} after" in transcript
    )
    assert digest_before != digest_after
    # the corpus differs only by added lines, but for a flow list that gained entries on its own
    # line
    diff = [
        line
        for line in difflib.ndiff(before.splitlines(), after.splitlines())
        if line[:2] in ("+ ", "- ")
    ]
    added = [line[2:] for line in diff if line.startswith("+ ")]
    for removed in (line[2:] for line in diff if line.startswith("- ")):
        flow = removed[: removed.index("]")]
        assert any(line.startswith(flow + ", ") for line in added), (removed, diff)
    assert len(added) > len(diff) - len(added)
    corpus = ptah.load_corpus(folder / "support.yaml")
    record = read_record(folder / "support.yaml")
    assert record.corpus == digest_after.strip()
    for (case_id, key), (grade, mark) in answers.items():
        judgement = record.cases[case_id][key]
        assert (judgement.grade, judgement.text_sha256) == (grade, text_digest(TEXT[key]))
        case = corpus.case(case_id)
        assert (key in case.forbidden) == (mark == "forbidden") and (key in case.required) == (
            mark == "required"
        )
        assert case.relevant.get(key, 0.0) == grade or (mark == "required" and key in case.required)
    assert len(record) == 5
    # resumed: only the two rows still unjudged are asked
    session = judge_session(folder)
    session.expect_exact("2 rows to judge (5 of the worklist judged already)")
    session.expect_exact("[1/2]")
    assert "nothing judged; nothing written" in ended(session)
    assert (folder / "support.yaml").read_text() == after


@pytest.mark.parametrize("leave", ["ctrl-c", "ctrl-d"])
def test_ctrl_c_and_ctrl_d_save_what_was_judged(space, cli, leave):
    items, session = worklist_session(space, cli)
    session.expect_exact("q save and quit] ")
    session.send("2")  # the corpus grades 1 and 2: key 2 is grade 2
    session.expect_exact("[2/7]")
    assert "judgements" in ended(
        session,
        lambda session: session.sendintr() if leave == "ctrl-c" else session.sendcontrol("d"),
    )
    assert graded(space.folder) == {items[0]: 2.0}


def test_special_keys_and_pasted_text_are_ignored_whole(space, cli):
    folder = space.folder
    items, session = worklist_session(space, cli)
    # the case's grades and judged keys (quoted: key "1", not one key), then the row's judging text
    session.expect_exact('  this case grades 1\r\n  already judged: "1" required (grade 1)')
    session.expect_exact(f"  | title: {DOCS[int(items[0][1]) - 1][1]}")
    # Delete, F5, PageUp and a pasted "2103": each a burst of bytes holding digits, none of them a
    # grade
    for burst in ("\x1b[3~", "\x1b[15~", "\x1b[5~", "2103", "\x1b"):
        session.expect_exact("q save and quit] ")
        session.send(burst)
        session.expect_exact("ignored: a special key or pasted text is not an answer")
    session.expect_exact("q save and quit] ")
    session.send("0")
    session.expect_exact("[2/7]")
    ended(session)
    assert graded(folder) == {items[0]: 0.0}


def test_closing_the_terminal_saves_what_was_judged(space, cli):
    folder = space.folder
    items, session = worklist_session(space, cli)
    for number, key in enumerate("210", start=2):
        session.expect_exact("q save and quit] ")
        session.send(key)
        session.expect_exact(f"[{number}/7]")
    session.expect_exact("q save and quit] ")
    # the terminal window closes: the kernel hangs up the session (SIGHUP). Closed through the file
    # object that owns the descriptor: an os.close behind its back left it to close, when collected,
    # whatever file had taken that number since (once a later test's SQLite journal: 'disk I/O
    # error')
    session.ptyproc.fileobj.close()
    session.ptyproc.wait()
    assert graded(folder) == {items[0]: 2.0, items[1]: 1.0, items[2]: 0.0}
    assert (
        ptah.load_corpus(folder / "support.yaml").case(items[0][0]).relevant.get(items[0][1]) == 2.0
    )


def test_sigterm_on_a_terminal_saves_what_was_judged(space, cli):
    items, session = worklist_session(space, cli)
    for number, key in enumerate("21", start=2):
        session.expect_exact("q save and quit] ")
        session.send(key)
        session.expect_exact(f"[{number}/7]")
    transcript = ended(
        session, lambda session: session.kill(signal.SIGTERM)
    )  # a CI job cancelled, docker stop
    assert (
        "terminated (SIGTERM): saving what was judged" in transcript and "judgements" in transcript
    )
    assert graded(space.folder) == {items[0]: 2.0, items[1]: 1.0}


def test_sigterm_on_a_piped_session_saves_what_was_judged(space, cli):
    items, _ = worklist_session(space, cli)
    session = subprocess.Popen(
        [sys.executable, "-m", "ptah", "corpus", "judge", "support.yaml", "--worklist", "wl.json"],
        cwd=space.folder,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    session.stdin.write("0\n")
    session.stdin.flush()
    shown = ""
    while (
        "[2/7]" not in shown
    ):  # the answer was taken: the next row is shown, and its prompt read waits
        shown += session.stdout.read(1)
    session.send_signal(signal.SIGTERM)
    out, err = session.communicate(timeout=60)
    assert session.returncode == 0, err
    assert "terminated (SIGTERM): saving what was judged" in out
    assert graded(space.folder) == {items[0]: 0.0}


def test_a_scripted_judgement_goes_into_the_corpus_and_the_record(space, cli):
    corpus = space.folder / "support.yaml"
    code, out, err = cli("corpus", "grade", corpus, "login", "2", "2", "--spec", space.spec_path)
    assert (code, err) == (0, "")
    assert "(+3 lines, 0 changed)" in out  # relevant: made from required ("7": 1) and the new grade
    assert dict(ptah.load_corpus(corpus).case("login").relevant) == {"7": 1.0, "2": 2.0}
    code, out, err = cli("corpus", "forbid", corpus, "login", "4", "--spec", space.spec_path)
    assert (code, err) == (0, "")
    assert ptah.load_corpus(corpus).case("login").forbidden == ("9", "4")
    code, out, err = cli(
        "corpus", "grade", corpus, "cancel", "5", "1", "--required", "--spec", space.spec_path
    )
    assert (code, err) == (0, "")
    assert ptah.load_corpus(corpus).case("cancel").required == ("1", "5")
    record = read_record(corpus)
    assert {
        (case, key): (j.grade, j.text_sha256)
        for case, keys in record.cases.items()
        for key, j in keys.items()
    } == {
        ("login", "2"): (2.0, text_digest(TEXT["2"])),
        ("login", "4"): (0.0, text_digest(TEXT["4"])),
        ("cancel", "5"): (1.0, text_digest(TEXT["5"])),
    }


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["grade", "nope", "1", "1"], 'no case "nope" in the corpus'),
        (
            ["grade", "login", "99", "1"],
            "case \"login\": key '99' is not in table articles; judge rows of the source only",
        ),
        (["grade", "login", "9", "1"], "the corpus forbids this key"),
        (["grade", "login", "2", "0", "--required"], "a required key is relevant"),
        (["forbid", "login", "7"], "the corpus expects this key (required or relevant)"),
        (["forbid", "nope", "7"], 'no case "nope" in the corpus'),
        (
            ["grade", "login", "2", "nan"],
            "GRADE must be a number from 0 (not relevant) to 1,000,000, not nan",
        ),
        (["grade", "login", "2", "5"], "GRADE: grade 5 is not on the corpus's scale (1, 2)"),
    ],
)
def test_a_scripted_judgement_of_what_is_not_there_is_refused_and_writes_nothing(
    space, cli, argv, message
):
    corpus = space.folder / "support.yaml"
    command, *rest = argv
    code, out, err = cli("corpus", command, corpus, *rest, "--spec", space.spec_path)
    assert code == 2 and message in err, err
    assert corpus.read_text() == CORPUS and not (space.folder / "support.judged.yaml").exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        # each was one of judge's errors about options that do not go together
        (["grade", "login", "2", "1", "--forbidden"], "No such option: --forbidden"),
        (["grade", "login", "2"], "Missing argument 'grade'"),
        (["grade", "login", "2", "1", "--worklist", "wl.json"], "No such option: --worklist"),
        (["forbid", "login", "4", "0"], "Got unexpected extra argument"),
        (["forbid", "login", "4", "--required"], "No such option: --required"),
        (["sample", "3", "--case", "login"], "No such option: --case"),
        (["sample", "3", "--worklist", "wl.json"], "No such option: --worklist"),
        (["sample", "3", "--json"], "No such option: --json"),
        (["judge-model", "gpt", "--sample", "3"], "No such option: --sample"),
        (["judge-model", "gpt", "--grades", "g.tsv"], "No such option: --grades"),
        (["judge-model", "gpt", "--worklist", "wl.json"], "No such option: --worklist"),
    ],
)
def test_options_that_do_not_go_together_are_not_on_the_same_command(space, cli, argv, message):
    corpus = space.folder / "support.yaml"
    command, *rest = argv
    code, out, err = cli("corpus", command, corpus, *rest, "--spec", space.spec_path)
    assert (code, out) == (2, "") and message in err, err
    assert corpus.read_text() == CORPUS and not (space.folder / "support.judged.yaml").exists()


def test_the_terminal_judge_offers_only_the_options_of_a_session(cli):
    code, out, err = cli("corpus", "judge", "--help")
    assert (code, err) == (0, "")
    offered = set(re.findall(r"(?<![\w-])--[a-z][\w-]*", out))
    assert offered == {
        "--worklist",
        "--generation",
        "--channel",
        "--variant",
        "--spec",
        "--help",
        "--output",  # holes --output, in the help of --worklist
    }


def holes_graded_zero(space) -> Path:
    """A grades file calling every row of the source not relevant."""
    path = space.folder / "grades.tsv"
    path.write_text("# none relevant\n" + "".join(f"{key}\t0\n" for key in TEXT))
    return path


def test_sample_judges_a_seeded_draw_of_the_holes_from_a_grades_file(space, cli):
    corpus = space.folder / "support.yaml"
    grades = holes_graded_zero(space)
    digest = ptah.load_corpus(corpus).digest
    code, out, err = cli(
        "corpus",
        "sample",
        corpus,
        "3",
        "--seed",
        "7",
        "--grades",
        grades,
        "--spec",
        space.spec_path,
    )
    assert (code, err) == (0, "")
    assert out == (
        f"corpus {corpus}: 3 holes drawn at random (seed 7) from the holes of 1 run\n"
        f"corpus {corpus}: {digest} before\n"
        f"corpus {corpus}: {digest} after (+0 lines, 0 changed)\n"
        f"judgement record {space.folder / 'support.judged.yaml'}: 3 judgements\n"
        "sample: 3 of 3 drawn holes judged, 0 relevant\n"
    )
    record = read_record(corpus)
    (drawn,) = record.samples
    assert (drawn.seed, drawn.drawn) == (7, 3)
    judged = [(case, key, j) for case, keys in record.cases.items() for key, j in keys.items()]
    assert len(judged) == 3
    assert all((j.grade, j.sample) == (0.0, 0) for _, _, j in judged)
    holes = {
        (case["id"], hole["key"])
        for case in json.loads(
            cli("corpus", "holes", corpus, "--spec", space.spec_path, "--json").out
        )["cases"]
        for hole in case["holes"]
    }
    assert len(holes) == 7 - 3  # what the sample judged is no hole any more
    assert corpus.read_text() == CORPUS


def judged(space) -> tuple[str, dict]:
    """The corpus text and its record's grades (without when they were made), then both reset."""
    corpus = space.folder / "support.yaml"
    record = read_record(corpus)
    grades = {
        case: {key: (j.grade, j.text_sha256, j.sample) for key, j in keys.items()}
        for case, keys in record.cases.items()
    }
    text = corpus.read_text()
    corpus.write_text(CORPUS)
    (space.folder / "support.judged.yaml").unlink(missing_ok=True)
    return text, grades


@pytest.mark.parametrize(
    ("old", "new", "line"),
    [
        (
            ["--case", "login", "--key", "2", "--grade", "2"],
            ["grade", "login", "2", "2"],
            "--case --key --grade goes in the next release; use ptah corpus grade CORPUS CASE KEY "
            "GRADE",
        ),
        (
            ["--case", "cancel", "--key", "5", "--required"],
            ["grade", "cancel", "5", "1", "--required"],
            "--case --key --required goes in the next release; use ptah corpus grade CORPUS CASE "
            "KEY GRADE",
        ),
        (
            ["--case", "login", "--key", "4", "--forbidden"],
            ["forbid", "login", "4"],
            "--case --key --forbidden goes in the next release; use ptah corpus forbid CORPUS CASE "
            "KEY",
        ),
        (
            ["--case", "login", "--key", "3", "--grade", "3", "--new-grade"],
            ["grade", "login", "3", "3", "--new-grade"],
            "--case --key --grade --new-grade goes in the next release; use ptah corpus grade "
            "CORPUS CASE KEY GRADE",
        ),
        (
            ["--sample", "3", "--seed", "7", "--grades", "grades.tsv"],
            ["sample", "3", "--seed", "7", "--grades", "grades.tsv"],
            "--sample --seed --grades goes in the next release; use ptah corpus sample CORPUS SIZE",
        ),
    ],
)
def test_an_old_spelling_of_judge_does_the_same_and_names_its_new_command_on_stderr(
    space, cli, monkeypatch, old, new, line
):
    monkeypatch.chdir(space.folder)
    holes_graded_zero(space)
    corpus = space.folder / "support.yaml"
    command, *rest = new
    code, out, err = cli("corpus", command, corpus, *rest, "--spec", space.spec_path)
    assert (code, err) == (0, "")
    after = judged(space)
    assert cli("corpus", "judge", corpus, *old, "--spec", space.spec_path) == (
        0,
        out,
        f"deprecated: ptah corpus judge {line}\n",
    )
    assert judged(space) == after


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--case", "login", "--key", "2"],
            "--grade: give the grade (0 for not relevant), or --required or --forbidden",
        ),
        (
            ["--case", "login", "--key", "2", "--grade", "-1"],
            "--grade must be a number from 0 (not relevant) to 1,000,000, not -1",
        ),
        (
            ["--case", "login", "--key", "2", "--required", "--forbidden"],
            "--required and --forbidden exclude each other",
        ),
        (["--key", "2", "--grade", "1"], "--case and --key go together"),
        (
            ["--sample", "3", "--case", "login"],
            "--sample draws the rows to judge itself: leave out --worklist, --case, "
            "--key and --grade",
        ),
        (["--seed", "1"], "--seed, --grades and --baseline go with --sample N"),
        (["--json"], "--json goes with --judge NAME"),
        (
            ["--judge", "gpt", "--sample", "3"],
            "--judge grades the holes with a model: leave out --worklist, --sample, --grades, "
            "--case, --key and --grade",
        ),
        (
            ["--case", "login", "--key", "2", "--grade", "5"],
            "--grade: grade 5 is not on the corpus's scale (1, 2)",
        ),
    ],
)
def test_an_old_spelling_keeps_its_errors_after_the_deprecation_line(space, cli, argv, message):
    corpus = space.folder / "support.yaml"
    code, out, err = cli("corpus", "judge", corpus, "--spec", space.spec_path, *argv)
    first, said = err.split("\n", 1)
    assert (code, out) == (2, "") and first.startswith("deprecated: ptah corpus judge --")
    assert said.startswith(message), said
    assert corpus.read_text() == CORPUS and not (space.folder / "support.judged.yaml").exists()


def test_add_authors_a_case_from_the_pooled_top_rows(space):
    folder = space.folder
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "ptah",
            "corpus",
            "add",
            "support.yaml",
            "--id",
            "tokens",
            "--query",
            "api tokens for developers",
            "--k",
            "3",
        ],
        cwd=folder,
        input="2\n0\nr\n",
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    with ptah.open_project(space.spec_path) as project:
        vector = [key for key, _ in project.search("api tokens for developers", 3)]
    assert vector == ["8", "1", "9"]
    # BM25 matches only row 8 ("API tokens … developer settings"): the pool is the vector top 3,
    # ranked by both
    assert (
        result.stdout.splitlines()[0] == 'case "tokens": 3 rows in the top 3 of docs, lexical:docs'
    )
    shown = [line for line in result.stdout.splitlines() if line.startswith('  key "')]
    assert shown == [
        '  key "8" — docs #1, lexical:docs #1',
        '  key "1" — docs #2',
        '  key "9" — docs #3',
    ]
    after = (folder / "support.yaml").read_text()
    assert after == CORPUS.removesuffix("# the end\n") + (
        '  - id: "tokens"\n'
        '    query: "api tokens for developers"\n'
        "    k: 3\n"
        '    required: ["9"]\n'
        "    relevant:\n"
        '      "8": 2\n'
        '      "9": 1\n'
        "# the end\n"  # the comment that ended the file still does
    )
    record = read_record(folder / "support.yaml")
    assert {key: (j.grade, j.text_sha256) for key, j in record.cases["tokens"].items()} == {
        "8": (2.0, text_digest(TEXT["8"])),
        "1": (0.0, text_digest(TEXT["1"])),
        "9": (1.0, text_digest(TEXT["9"])),
    }


HALVES = """\
version: 1
default_k: 3
cases:
  - {id: login, query: two factor login, relevant: {"7": 1, "8": 0.5}}
"""


def test_grades_are_offered_and_checked_on_the_corpus_scale(space, cli):
    corpus = space.folder / "support.yaml"
    corpus.write_text(HALVES)
    # the corpus grades 0.5 and 1: a "2" would outrank the author's best row, so it is refused
    # without --new-grade
    code, out, err = cli("corpus", "grade", corpus, "login", "2", "2", "--spec", space.spec_path)
    assert (code, err) == (
        2,
        "GRADE: grade 2 is not on the corpus's scale (0.5, 1); use one of those, or pass "
        "--new-grade to add it\n",
    )
    assert corpus.read_text() == HALVES
    code, out, err = cli("corpus", "grade", corpus, "login", "2", "0.5", "--spec", space.spec_path)
    assert code == 0, err
    code, out, err = cli(
        "corpus", "grade", corpus, "login", "3", "2", "--new-grade", "--spec", space.spec_path
    )
    assert code == 0, err
    assert dict(ptah.load_corpus(corpus).case("login").relevant) == {
        "7": 1.0,
        "8": 0.5,
        "2": 0.5,
        "3": 2.0,
    }
    # the session offers the scale: key 1 is grade 0.5, key 2 grade 1, key 3 grade 2, and 4 is no
    # answer
    corpus.write_text(HALVES)
    (space.folder / "support.judged.yaml").unlink()
    result = subprocess.run(
        [sys.executable, "-m", "ptah", "corpus", "judge", "support.yaml"],
        cwd=space.folder,
        input="4\n1\n2\nq\n",
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert "grades on the corpus's scale: 0.5, 1" in result.stdout
    assert (
        "[0 not relevant · 1 grade 0.5 · 2 grade 1 · r required · f forbidden · s skip · u undo · q save and quit]"
        in result.stdout
    )
    assert "  4 is not an answer" in result.stdout
    assert (
        sorted(read_record(corpus).cases["login"].values(), key=lambda j: j.grade)[0].grade == 0.5
    )
    assert sorted(j.grade for j in read_record(corpus).cases["login"].values()) == [0.5, 1.0]


def test_add_without_a_relevant_row_adds_nothing(space):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "ptah",
            "corpus",
            "add",
            "support.yaml",
            "--id",
            "x",
            "--query",
            "webhooks",
        ],
        cwd=space.folder,
        input="0\nq\n",
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert (
        'no row was judged relevant (a grade) or required (r): case "x" was not added'
        in result.stderr
    )
    assert (space.folder / "support.yaml").read_text() == CORPUS


def test_pin_records_every_named_key_with_its_corpus_grade_and_text_digest(space, cli):
    corpus = space.folder / "support.yaml"
    code, out, err = cli("corpus", "pin", corpus, "--spec", space.spec_path)
    assert code == 0, err
    assert out == f"judgement record {space.folder / 'support.judged.yaml'}: 5 keys pinned\n"
    record = read_record(corpus)
    assert {
        case: {key: (j.grade, j.text_sha256) for key, j in keys.items()}
        for case, keys in record.cases.items()
    } == {
        "cancel": {"1": (1.0, text_digest(TEXT["1"]))},
        "invoices": {"3": (2.0, text_digest(TEXT["3"])), "6": (1.0, text_digest(TEXT["6"]))},
        "login": {"7": (1.0, text_digest(TEXT["7"])), "9": (0.0, text_digest(TEXT["9"]))},
    }
    assert corpus.read_text() == CORPUS and record.corpus == ptah.load_corpus(corpus).digest
