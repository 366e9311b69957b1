"""An error's advice in each interface's words: the command line's flags and commands at its
boundary, option names and plain verbs for the Python API and the server (``str()``)."""

from __future__ import annotations

import pytest

from ptah.cli.display import error_text
from ptah.cli.words import COMMAND_LINE
from ptah.core.errors import PLAIN, InputError, NotBuilt
from ptah.core.request import SearchOptions


def test_a_generation_not_built_is_told_to_build_it_in_each_interface_s_words():
    error = NotBuilt("docs", "sha256:ab", "spec/ptah.yaml")
    assert str(error) == (
        'generation "docs" has not been built with its current settings (identity sha256:ab); '
        'build generation "docs" first.'
    )
    assert (
        error_text(error)
        == error.said(COMMAND_LINE)
        == (
            'generation "docs" has not been built with its current settings (identity sha256:ab); '
            "run `ptah inference build docs --spec spec/ptah.yaml` first."
        )
    )
    assert error.said(PLAIN) == str(error) and error.exit_code == 3


def test_a_refused_option_is_named_by_its_flag_on_the_command_line_and_by_its_name_elsewhere():
    with pytest.raises(InputError) as refused:
        SearchOptions("exact", ef_search=10)
    assert str(refused.value) == (
        "ef_search: applies to index search; search in mode index or both."
    )
    assert error_text(refused.value) == (
        "--ef-search: applies to index search; search in mode index or both."
    )


def test_options_the_request_does_not_declare_are_spelled_as_typer_spells_a_parameter():
    assert COMMAND_LINE.option("generations", "NAME") == "--generation NAME"
    assert COMMAND_LINE.option("allow_stale", True) == "--allow-stale"
    assert COMMAND_LINE.option("keep", "docs") == "--keep docs"
    assert PLAIN.option("allow_stale", True) == "allow_stale=True"
    assert PLAIN.option("query") == "query"


def test_a_message_without_advice_reads_the_same_everywhere():
    error = InputError("corpus.yaml: not a mapping")
    assert (
        error.said(COMMAND_LINE) == error.said(PLAIN) == str(error) == "corpus.yaml: not a mapping"
    )
