"""Composite keys as people read them (``1 · published``) and the hint when a corpus joins them with
another mark."""

from __future__ import annotations

import json

import pytest

from ptah.core.corpus import composite_spellings, shown_key


@pytest.fixture
def composite(workspace):
    workspace.write_spec(key_fields=("id", "status"))
    return workspace


def corpus(folder, key: str) -> str:
    path = folder / "corpus.yaml"
    path.write_text(
        f"version: 1\ndefault_k: 3\ncases:\n  - id: c1\n    query: invoices\n"
        f"    relevant: {{{json.dumps(key)}: 1}}\n"
    )
    return str(path)


def test_search_prints_a_composite_key_as_its_components_and_json_keeps_the_separator(
    composite, cli
):
    assert cli("inference", "build", "--spec", composite.spec_path, "--quiet").code == 0
    text = cli("inference", "search", "Export invoices", "-k", "1", "--spec", composite.spec_path)
    assert text.code == 0 and text.out.split("  ")[3] == "3 · published", text.out
    data = cli(
        "inference", "search", "Export invoices", "-k", "1", "--spec", composite.spec_path, "--json"
    )
    assert json.loads(data.out)["results"][0]["key"] == "3\x1fpublished"


@pytest.mark.parametrize("written", ["3|published", "3:published", "3/published", "3 published"])
def test_a_key_joined_with_another_mark_is_told_the_u001f_spelling(composite, cli, written):
    assert cli("inference", "build", "--spec", composite.spec_path, "--quiet").code == 0
    path = corpus(composite.folder, written)
    result = cli("inference", "evaluate", "--spec", composite.spec_path, "--corpus", path)
    assert (result.code, result.out, result.err) == (
        2,
        "",
        (
            f'{path}: key {written!r} (case "c1") is not in table articles; the row 3 · published is spelled with '
            'U+001F between its key fields: "3\\x1fpublished" in YAML (a double-quoted string)\n'
        ),
    )


def test_a_key_of_no_row_in_any_spelling_gets_no_hint(composite, cli):
    assert cli("inference", "build", "--spec", composite.spec_path, "--quiet").code == 0
    path = corpus(composite.folder, "99|published")
    result = cli("inference", "evaluate", "--spec", composite.spec_path, "--corpus", path)
    assert (result.code, result.err) == (
        2,
        f"{path}: key '99|published' (case \"c1\") is not in table articles\n",
    )


def test_the_spellings_and_the_display():
    assert composite_spellings("1|pruning", 2) == ["1\x1fpruning"]
    assert composite_spellings("1|a|b", 2) == []  # two marks: not two components
    assert composite_spellings("1|pruning", 1) == []
    assert shown_key("1\x1fpruning") == "1 · pruning" and shown_key("plain") == "plain"
