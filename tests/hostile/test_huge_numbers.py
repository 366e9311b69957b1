"""A number with thousands of digits in a corpus or a specification is refused, and never echoed
whole.

Python converts at most 4,300 digits to an int; a 5,000-digit ``k`` used to
read as "not a whole number", a 1,000-digit one was printed in full. Each is
now refused as out of range, its text cut to 39 characters and its length.
"""

from __future__ import annotations

import pytest

from tests.conftest import run_cli
from tests.hostile.files_project import SPEC


def digits(count: int) -> str:
    return "9" * count


def cut(text: str) -> str:
    return f"{text[:39]}… ({len(text):,} characters)"


@pytest.mark.parametrize("count", [1_000, 5_000])
def test_huge_depths_and_grades_in_a_corpus_are_refused_cut_short(
    tmp_path, monkeypatch, capsys, count
):
    monkeypatch.chdir(tmp_path)
    huge = digits(count)
    (tmp_path / "corpus.yaml").write_text(
        f"version: 1\ndefault_k: {huge}\ncases:\n"
        f'  - id: a\n    query: q\n    k: -{huge}\n    relevant: {{"1": {huge}}}\n'
        f'  - id: b\n    query: q\n    k: "{huge}"\n    relevant: {{"1": 1000001}}\n'
    )
    code, out, err = run_cli(capsys, "corpus", "validate", "corpus.yaml")
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        f"corpus.yaml:2: default_k: {cut(huge)} is above the limit of 1000",
        f'corpus.yaml:6: case "a": k: must not be negative (got {cut("-" + huge)})',
        f"corpus.yaml:7: case \"a\": relevant['1']: a grade must be a finite number above 0, not {cut(huge)}",
        f'corpus.yaml:10: case "b": k: must be a whole number, not the text "{cut(huge)}"; remove the quotes: k: {cut(huge)}',
        "corpus.yaml:11: case \"b\": relevant['1']: a grade must be at most 1,000,000, not 1000001",
        "1 of 1 corpus files invalid",
    ]
    assert (
        max(len(line) for line in err.splitlines()) < 250
    )  # the 1,000- or 5,000-digit value is never whole


@pytest.mark.parametrize("field", ["dimension", "max_seq_length", "batch_size"])
def test_a_huge_number_in_the_spec_is_refused_cut_short(tmp_path, capsys, field):
    huge = digits(5_000)
    spec = tmp_path / "ptah.yaml"
    text = (
        SPEC.replace("dimension: 16", f"dimension: {huge}")
        if field == "dimension"
        else SPEC + f"    {field}: {huge}\n"
    )
    spec.write_text(text)
    code, out, err = run_cli(capsys, "inference", "list", "--spec", spec)
    assert (code, out) == (2, "")
    line = 11 if field == "dimension" else 12
    limit = {"dimension": "65,536", "max_seq_length": "1,000,000", "batch_size": "65,536"}[field]
    hint = (
        "; leave it out for the model's own limit (256 tokens for MiniLM)"
        if field == "max_seq_length"
        else ""
    )
    assert err == (
        f"{spec}:{line}: generations.docs.{field}: must be a whole number from 1 to {limit}, "
        f"not the number {cut(huge)}{hint}\n"
    )


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("--bootstrap", "--bootstrap: must be a whole number from 1 to 1,000,000, not {}."),
        ("--rrf-depth", "--rrf-depth: must be a whole number from 1 to 100,000, not {}."),
    ],
)
def test_a_huge_number_on_the_command_line_is_refused_cut_short(tmp_path, capsys, option, message):
    huge = digits(1_000)  # within what Python converts: click accepts it, ptah refuses it
    code, out, err = run_cli(
        capsys, "inference", "evaluate", "--corpus", tmp_path / "c.yaml", option, huge
    )
    assert (code, out) == (2, "")
    assert err == message.format(cut(huge)) + "\n"
