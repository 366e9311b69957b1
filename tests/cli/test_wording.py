"""What a new user reads: flags without a value word in help, --version, digest --json, p-values,
gate sentences, corpus problems.

Every command and group is walked from the Typer app itself (as in
``test_help.py``), so a command added later is checked without a list to update.
"""

from __future__ import annotations

import json
import re

import pytest

import ptah
from ptah.core.baseline import gates, movement
from ptah.core.compared import SignFlipResult
from ptah.core.parts import ForbiddenCounts, RequiredCounts
from ptah.core.significance import p_value_phrase, p_value_text
from tests.cli.test_help import OPTIONS, label
from tests.core.comparisons import against


def spelled(option) -> str:
    """A pattern of the option's spellings as its help row shows them: the long one, then any short
    one."""
    long = [opt for opt in option.opts if opt.startswith("--")][0]
    return re.escape(long) + "".join(
        rf"\s+{re.escape(opt)}" for opt in option.opts if not opt.startswith("--")
    )


FLAGS = [(path, option) for path, option in OPTIONS if option.is_flag]


@pytest.mark.parametrize("path, option", FLAGS, ids=[f"{label(p)} {o.opts[0]}" for p, o in FLAGS])
def test_a_flag_shows_no_value_word(path, option, cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    _, out, _ = cli(*path, "--help")
    row = re.compile(
        rf"^│\s+{spelled(option)}\s+{re.escape(option.help[:12])}"
    )  # the help next: no word
    assert [line for line in out.splitlines() if row.match(line)] != [], option.opts


def test_version(cli):
    assert cli("--version") == (0, f"ptah {ptah.__version__}\n", "")


def test_digest_json(cli):
    code, out, err = cli("corpus", "digest", "corpora/support.yaml", "--json")
    assert (code, err) == (0, "")
    plain = cli("corpus", "digest", "corpora/support.yaml")[1].strip()
    assert json.loads(out) == {"path": "corpora/support.yaml", "digest": plain, "cases": 25}


@pytest.mark.parametrize(
    "test, column, phrase",
    [
        (SignFlipResult(0.00390625, "exact", 8, 256), "0.0039", "p = 0.0039"),
        (SignFlipResult(0.0002, "monte-carlo", 30, 10_000), "~0.0002", "p ~ 0.0002"),
        (SignFlipResult(1 / 10_001, "monte-carlo", 30, 10_000), "<0.0001", "p < 0.0001"),
        (SignFlipResult(1 / 2**20, "exact", 20, 2**20), "<0.0001", "p < 0.0001"),
        (None, "N/A", "p N/A"),
    ],
)
def test_a_p_value_reads_as_one_relation(test, column, phrase):
    assert (p_value_text(test), p_value_phrase(test)) == (column, phrase)


@pytest.mark.parametrize(
    "drop, said",
    [
        (0.0625, "dropped 0.0625"),
        (-0.0625, "rose 0.0625"),
        (0.0, "unchanged"),
        (1e-13, "unchanged"),
        (-0.00004, "rose less than 0.0001"),
    ],
)
def test_a_mean_moves_with_one_sign(drop, said):
    assert movement(drop) == said


def run_of(required_cases: int, forbidden_cases: int):
    """A stand-in run with the expectation counts gates() reads."""

    class Counts:
        name = "g"
        required = RequiredCounts(cases=required_cases, failed=0, keys_missed=0)
        forbidden = ForbiddenCounts(cases=forbidden_cases, leaking=0, hits=0, rate=None)

    return Counts()


def test_gates_without_required_or_forbidden_keys_say_so():
    required, forbidden = gates(run_of(0, 0), None, {})
    assert (required.passed, required.detail) == (True, "no required keys: no case names one")
    assert (forbidden.passed, forbidden.detail) == (True, "no forbidden keys: no case names one")
    required, forbidden = gates(run_of(4, 2), None, {})
    assert (required.detail, forbidden.detail) == (
        "0 of 4 cases missed a required key",
        "0 of 2 cases leaked a forbidden key",
    )


def test_a_drop_gate_says_rose_when_the_mean_rose():
    comparison = against({"recall": (0.5, 0.5625)})
    (gate,) = gates(run_of(1, 0), comparison, {"recall": 0.02})[2:]
    assert (gate.passed, gate.detail) == (
        True,
        "recall 0.5000 -> 0.5625 (rose 0.0625; a drop of 0.0200 is allowed)",
    )


@pytest.mark.parametrize(
    "text, problem",
    [
        pytest.param(
            "version: 1\ndefualt_k: 5\ncases:\n"
            + "".join(f'  - id: c{i}\n    query: q{i}\n    required: ["1"]\n' for i in range(5)),
            '2: defualt_k: unknown field in the corpus; did you mean "default_k"?',
            id="misspelt-default-k-once",
        ),
        pytest.param(
            'version: 1\ncases:\n  - {id: a, query: q, required: ["1"]}\n',
            '3: case "a": k: no depth: give the case a k, or the corpus a default_k',
            id="no-field-like-default-k",
        ),
    ],
)
def test_a_missing_depth_is_one_problem(tmp_path, cli, text, problem):
    corpus = tmp_path / "c.yaml"
    corpus.write_text(text)
    assert cli("corpus", "validate", corpus) == (
        2,
        "",
        f"{corpus}:{problem}\n1 of 1 corpus files invalid\n",
    )


def test_problems_are_printed_in_line_order(tmp_path, cli):
    corpus = tmp_path / "c.yaml"
    corpus.write_text(
        "version: 1\ndefault_k: 5\ncases:\n  - id: a\n    query: refund\n    colour: red\n"
        '  - id: a\n    query: x\n    required: ["1"]\n    bogus: 1\n'
    )
    code, out, err = cli("corpus", "validate", corpus)
    known = "known fields are id, query, k, required, relevant, forbidden, tags"
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        f'{corpus}:4: case "a": declares neither required nor relevant; any answer would satisfy it, '
        "so name the keys a good result contains",
        f'{corpus}:6: case "a": colour: unknown field in a case; {known}',
        f'{corpus}:7: case "a": id: the id is used twice (lines 4 and 7); case ids must be unique',
        f'{corpus}:10: case "a": bogus: unknown field in a case; {known}',
        "1 of 1 corpus files invalid",
    ]


def test_the_specification_page_gives_the_defaults_of_normalize_and_max_seq_length():
    from tests.cli.test_help import DOCS

    spec = DOCS["docs/specification.md"]
    assert (
        "normalize: true                     # default true: vectors scaled to unit length" in spec
    )
    assert "max_seq_length: 256                 # default: the model's own limit" in spec
