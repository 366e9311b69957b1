"""Terminal injection: ids, queries, keys, names and paths from files and databases never reach a
terminal raw.

Each hostile string is a sequence a terminal (or rich) would act on: ESC [2J
clears the screen, ESC ] 0;…BEL sets the window title, U+009B is the C1 form
of CSI, U+202E reverses what follows, and ``[red]``/``[link=…]`` are rich
markup. Printed, each must read as its visible escape (or literally, for
markup), and no raw ESC, BEL, U+009B or U+202E may be in stdout or stderr.
"""

from __future__ import annotations

import json
import re
import sqlite3

import pytest

from ptah.core.visible import visible, visible_json
from tests.conftest import run_cli
from tests.hostile.files_project import SPEC

HOSTILE = {
    "clear": "\x1b[2J",
    "title": "\x1b]0;pwned\x07",
    "c1": "\x9b2J",
    "bidi": "\u202eevil",
    "markup": "[red]x[/red]",
    "link": "[link=https://evil.example]y[/link]",
}
SHOWN = {
    "clear": "\\x1b[2J",
    "title": "\\x1b]0;pwned\\x07",
    "c1": "\\x9b2J",
    "bidi": "\\u202eevil",
    "markup": "[red]x[/red]",
    "link": "[link=https://evil.example]y[/link]",
}
RAW = ("\x1b", "\x07", "\x9b", "\u202e")


def yaml_text(value: str) -> str:
    """A YAML double-quoted scalar for any string (JSON with every non-ASCII character escaped is
    one)."""
    return json.dumps(value, ensure_ascii=True)


def assert_no_raw_controls(*texts: str) -> None:
    for text in texts:
        for character in RAW:
            assert character not in text, f"raw {character!r} reached the terminal: {text!r}"


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch):
    """Rich folds long table cells at 80 columns; a wide console keeps each escape on one line."""
    monkeypatch.setenv("COLUMNS", "400")


@pytest.fixture
def project(tmp_path, capsys):
    """A deterministic generation over rows whose keys and texts hold every hostile sequence,
    built."""
    connection = sqlite3.connect(tmp_path / "source.db")
    with connection:
        connection.execute("CREATE TABLE articles (id TEXT PRIMARY KEY, title TEXT, body TEXT)")
        connection.executemany(
            "INSERT INTO articles VALUES (?, ?, ?)",
            [
                (f"key-{name}{sequence}", "text", f"{sequence} of {name}")
                for name, sequence in HOSTILE.items()
            ],
        )
    connection.close()
    (tmp_path / "ptah.yaml").write_text(SPEC)
    code, _, err = run_cli(
        capsys, "inference", "build", "--spec", tmp_path / "ptah.yaml", "--quiet"
    )
    assert code == 0, err
    return tmp_path


def write_corpus(path, cases, k: int = 1) -> None:
    lines = ["version: 1", f"default_k: {k}", "cases:"]
    for case_id, query, keys in cases:
        lines.append(f"  - id: {yaml_text(case_id)}")
        lines.append(f"    query: {yaml_text(query)}")
        lines.append("    required: [" + ", ".join(yaml_text(key) for key in keys) + "]")
    path.write_text("\n".join(lines) + "\n")


def hostile_corpus(path) -> None:
    write_corpus(
        path,
        [
            (f"case-{name}{sequence}", f"query {sequence}", [f"key-{name}{sequence}"])
            for name, sequence in HOSTILE.items()
        ],
    )


def test_visible_writes_controls_and_bidi_as_escapes_and_keeps_the_rest():
    assert (
        visible("a\x1b[2Jb\x07\x9b\u202e\u2066\x7f\x00é中")
        == "a\\x1b[2Jb\\x07\\x9b\\u202e\\u2066\\x7f\\x00é中"
    )
    assert visible("one\ntwo\tthree\r") == "one\\ntwo\\tthree\\r"
    assert visible("one\ntwo\x1b", newlines=True) == "one\ntwo\\x1b"
    assert visible("[red]x[/red] C:\\dir") == "[red]x[/red] C:\\dir"


def test_visible_json_escapes_what_json_leaves_raw_and_reads_back_the_same():
    value = {"id": "a\x1b\x9b\u202e\x7f\u2028é"}
    text = visible_json(json.dumps(value, ensure_ascii=False))
    assert text == '{"id": "a\\u001b\\u009b\\u202e\\u007f\\u2028é"}'
    assert json.loads(text) == value


def test_corpus_validate_shows_hostile_paths_and_ids_visibly(tmp_path, capsys):
    valid = tmp_path / f"ok{HOSTILE['clear']}{HOSTILE['bidi']}.yaml"
    write_corpus(valid, [("a", "q", ["1"])])
    invalid = tmp_path / "bad.yaml"
    twice = f"twice{HOSTILE['title']}{HOSTILE['c1']}{HOSTILE['markup']}"
    write_corpus(invalid, [(twice, "q", ["1"]), (twice, "q", ["2"])])
    code, out, err = run_cli(capsys, "corpus", "validate", valid, invalid)
    assert code == 2
    assert_no_raw_controls(out, err)
    assert out.startswith(f"{tmp_path}/ok\\x1b[2J\\u202eevil.yaml: valid, 1 cases, sha256:")
    assert err.splitlines() == [
        f'{invalid}:7: case "twice\\x1b]0;pwned\\x07\\x9b2J[red]x[/red]": id: '
        "the id is used twice (lines 4 and 7); case ids must be unique",
        "1 of 2 corpus files invalid",
    ]


def test_corpus_validate_json_escapes_c1_and_bidi_and_reads_back_exactly(tmp_path, capsys):
    invalid = tmp_path / "bad.yaml"
    twice = "twice" + "".join(HOSTILE.values())
    write_corpus(invalid, [(twice, "q", ["1"]), (twice, "q", ["2"])])
    code, out, err = run_cli(capsys, "corpus", "validate", "--json", invalid)
    assert code == 2
    assert_no_raw_controls(out, err)
    assert "\\u009b2J\\u202eevil" in out
    assert json.loads(out)["files"][0]["problems"][0]["case"] == twice


def test_evaluate_shows_hostile_case_ids_and_keys_visibly(project, capsys):
    corpus = project / "corpus.yaml"
    hostile_corpus(corpus)
    code, out, err = run_cli(
        capsys, "inference", "evaluate", "--spec", project / "ptah.yaml", "--corpus", corpus
    )
    assert_no_raw_controls(out, err)
    assert err == ""
    for name in HOSTILE:
        assert f"case-{name}{SHOWN[name]}" in out
    _, report_text, _ = run_cli(
        capsys,
        "inference",
        "evaluate",
        "--spec",
        project / "ptah.yaml",
        "--corpus",
        corpus,
        "--json",
    )
    report = json.loads(report_text)
    missed = [m["key"] for case in report["runs"][0]["cases"] for m in case["required"]["missed"]]
    assert missed, "the deterministic ranking misses some required keys at k 1"
    for key in missed:
        assert (
            f"missed {key!r}" in out
        )  # repr writes controls as escapes; the markup stays literal text
    assert code == 1


def test_a_comparison_of_channels_shows_the_changed_hostile_cases_visibly(project, capsys):
    corpus = (
        project / "corpus.yaml"
    )  # every row in the top 6 by vector; no query word in any row for BM25
    cases = [
        (f"case-{name}{sequence}", f"zzz{name}", [f"key-{name}{sequence}"])
        for name, sequence in HOSTILE.items()
    ]
    write_corpus(corpus, cases, k=6)
    argv = [
        "inference",
        "evaluate",
        "--spec",
        project / "ptah.yaml",
        "--corpus",
        corpus,
        "--bootstrap",
        "10",
    ]
    code, out, err = run_cli(capsys, *argv, "--channel", "vector", "--channel", "lexical")
    assert code == 1
    assert_no_raw_controls(out, err)
    _, report_text, _ = run_cli(
        capsys, *argv, "--channel", "vector", "--channel", "lexical", "--json"
    )
    ids = [
        change["id"]
        for change in json.loads(report_text)["comparison"]["candidates"][0]["cases_changed"]
    ]
    assert sorted(ids) == sorted(f"case-{name}{sequence}" for name, sequence in HOSTILE.items())
    changed = [
        line.split(": recall")[0].strip()
        for line in out.splitlines()
        if line.startswith("    case-")
    ]
    assert changed == [visible(case_id) for case_id in ids]


def test_evaluate_json_holds_the_exact_values_with_every_hostile_character_escaped(project, capsys):
    corpus = project / "corpus.yaml"
    hostile_corpus(corpus)
    code, out, err = run_cli(
        capsys,
        "inference",
        "evaluate",
        "--spec",
        project / "ptah.yaml",
        "--corpus",
        corpus,
        "--json",
    )
    assert_no_raw_controls(out, err)
    cases = json.loads(out)["runs"][0]["cases"]
    assert [(case["id"], case["query"]) for case in cases] == [
        (f"case-{name}{sequence}", f"query {sequence}") for name, sequence in HOSTILE.items()
    ]
    assert code == 1


def test_search_shows_hostile_keys_visibly(project, capsys):
    code, out, err = run_cli(
        capsys, "inference", "search", "text", "-k", "6", "--spec", project / "ptah.yaml"
    )
    assert code == 0
    assert_no_raw_controls(out, err)
    rows = [
        re.fullmatch(r" +\d+  -?\d\.\d{4}  (\S+)  (.*)", line).groups() for line in out.splitlines()
    ]
    assert sorted(
        text for _, text in rows
    ) == sorted(  # each row's text beside its key, its controls made visible
        "text: " + visible(f"{sequence} of {name}") for name, sequence in HOSTILE.items()
    )
    shown = sorted(key for key, _ in rows)
    assert shown == sorted(
        [
            '"key-clear\\u001b[2J"',
            '"key-title\\u001b]0;pwned\\u0007"',
            '"key-c1\\u009b2J"',
            '"key-bidi\\u202eevil"',
            "key-markup[red]x[/red]",
            "key-link[link=https://evil.example]y[/link]",
        ]
    )


def test_verify_lists_a_hostile_missing_key_as_an_escaped_json_string(project, capsys):
    connection = sqlite3.connect(project / "source.db")
    with connection:
        connection.execute(
            "INSERT INTO articles VALUES (?, ?, ?)", ("new\x1b[2J\x9b\u202e", "fresh", "row")
        )
    connection.close()
    code, out, err = run_cli(capsys, "inference", "verify", "--spec", project / "ptah.yaml")
    assert code == 1
    assert_no_raw_controls(out, err)
    assert '  missing: "new\\u001b[2J\\u009b\\u202e"' in out.splitlines()


def test_an_error_quoting_hostile_ids_shows_them_visibly(project, capsys):
    corpus = project / "corpus.yaml"
    write_corpus(corpus, [(f"case{HOSTILE['clear']}{HOSTILE['c1']}", "q", ["absent"])])
    code, out, err = run_cli(
        capsys, "inference", "evaluate", "--spec", project / "ptah.yaml", "--corpus", corpus
    )
    assert code == 2
    assert out == ""
    assert_no_raw_controls(err)
    assert (
        err == f"{corpus}: key 'absent' (case \"case\\x1b[2J\\x9b2J\") is not in table articles\n"
    )


def test_a_spec_error_naming_a_hostile_generation_shows_it_visibly(tmp_path, capsys):
    spec = tmp_path / "ptah.yaml"
    spec.write_text(
        SPEC.replace(
            "  docs:\n", f"  {yaml_text('d' + HOSTILE['title'] + HOSTILE['bidi'])}:\n"
        ).replace("active: docs\n", "")
    )
    code, out, err = run_cli(capsys, "inference", "list", "--spec", spec)
    assert code == 2
    assert_no_raw_controls(out, err)
    assert "generations.d\\x1b]0;pwned\\x07\\u202eevil: a generation name is 1 to 64 letters" in err
