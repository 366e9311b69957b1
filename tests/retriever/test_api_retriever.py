"""The API's form: ``project.evaluate(corpus, retriever=fn)``, a function ``fn(query, k)``
answering keys best first (or ``(key, score)`` pairs), side by side with ptah's own channels."""

from __future__ import annotations

import pytest

import ptah
from ptah.core.errors import InputError, OperationalError
from tests.retriever.conftest import small_project


def letters(query: str, k: int) -> list[str]:
    """Rows ranked by how often the query's first letter occurs in their text (of 1-4)."""
    texts = {"1": "aaaa", "2": "bbbb", "3": "ab", "4": "cccc"}
    return sorted(texts, key=lambda key: (-texts[key].count(query[0]), key))[:k]


def test_a_function_is_the_run_and_stands_beside_lexical(tmp_path):
    folder = small_project(tmp_path, "http://127.0.0.1:9/unused")
    with ptah.open_project(folder / "ptah.yaml") as project:
        alone = project.evaluate(folder / "corpus.yaml", retriever=letters)
        both = project.evaluate(
            folder / "corpus.yaml", channels=["lexical", "retriever"], retriever=letters
        )
    (run,) = alone.runs
    assert run.name == "retriever:docs"
    assert run.generation.model == "an outside retriever (callable letters)"
    assert [list(case.keys) for case in run.cases] == [["1", "3"], ["2", "3"], ["4", "1"]]
    assert [case.ranking[0].score for case in run.cases] == [1.0, 1.0, 1.0]  # 1 / rank
    assert alone.verdict == "pass"
    assert [r.name for r in both.runs] == ["lexical:docs", "retriever:docs"]
    assert both.comparison is not None


def test_pairs_carry_their_scores_and_options_name_a_recorded_run(tmp_path):
    folder = small_project(tmp_path, "http://127.0.0.1:9/unused")
    (folder / "run.jsonl").write_text(
        '{"case": "a", "keys": ["1"]}\n{"case": "b", "keys": ["3"]}\n{"case": "c", "keys": ["4"]}\n'
    )
    with ptah.open_project(folder / "ptah.yaml") as project:
        paired = project.evaluate(
            folder / "corpus.yaml", retriever=lambda q, k: [("1", 0.5), ("3", 0.25)]
        )
        recorded = project.evaluate(folder / "corpus.yaml", retriever={"run": "run.jsonl"})
    assert [(r.key, r.score) for r in paired.runs[0].cases[0].ranking] == [("1", 0.5), ("3", 0.25)]
    assert recorded.verdict == "pass"
    assert recorded.runs[0].generation.settings == {"form": "run", "run": "run.jsonl"}


def test_a_function_that_raises_or_answers_numbers_is_one_sentence(tmp_path):
    folder = small_project(tmp_path, "http://127.0.0.1:9/unused")

    def broken(query, k):
        raise KeyError("index gone")

    with ptah.open_project(folder / "ptah.yaml") as project:
        with pytest.raises(OperationalError) as raised:
            project.evaluate(folder / "corpus.yaml", retriever=broken)
        assert str(raised.value) == (
            "the retriever broken raised KeyError on case 'a': 'index gone'"
        )
        with pytest.raises(InputError) as numbers:
            project.evaluate(folder / "corpus.yaml", retriever=lambda q, k: [1, 3])
        assert str(numbers.value) == (
            "the retriever <lambda> answered the key 1, which is not a string; write keys as the "
            "corpus spells them, e.g. \"42\" (case 'a')"
        )


def test_channel_retriever_on_the_command_line_needs_one_declared_retriever(tmp_path, cli):
    folder = small_project(tmp_path, "http://127.0.0.1:9/unused")
    asked = cli(
        "inference",
        "evaluate",
        "--spec",
        folder / "ptah.yaml",
        "--corpus",
        folder / "corpus.yaml",
        "--channel",
        "retriever",
    )
    assert asked.code == 2
    assert asked.err == (
        f"{folder / 'ptah.yaml'}: --channel retriever asks the one variant with channels: "
        "[retriever], and the specification declares 2; pass --variant NAME\n"
    )


def test_a_runs_rows_are_the_source_tables_as_filtered_not_the_keys_answered(tmp_path):
    folder = small_project(tmp_path, "http://127.0.0.1:9/unused")  # rows 1-4, and a draft 5
    with ptah.open_project(folder / "ptah.yaml") as project:
        report = project.evaluate(folder / "corpus.yaml", retriever=lambda query, k: ["1"])
    (run,) = report.runs
    assert {case.keys for case in run.cases} == {("1",)}  # one key answered in all
    assert run.generation.rows == 4
