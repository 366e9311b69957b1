"""The report's JSON: the file is the document as written; the terminal form escapes what a terminal would act on."""

from __future__ import annotations

import copy
import enum
import json
import random
import tracemalloc

import pytest

from ptah.render.json import indented, report_chunks, report_json, terminal_json
from ptah.services.documents import write_json
from tests.render.reports import compared, document, report


def test_the_file_is_the_document_indented_with_a_trailing_newline():
    data = compared()
    data["runs"][0]["cases"][0]["query"] = "café ⟨naïve⟩"
    assert report_json(report(data)) == json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    assert '"query": "café ⟨naïve⟩"' in report_json(report(data))


def test_the_terminal_form_escapes_c1_and_bidi_and_reads_back_as_the_same_report():
    data = compared()
    data["runs"][0]["cases"][0]["id"] = "a\x9b2J\u202eevil\x1b"
    written, shown = report_json(report(data)), terminal_json(report(data))
    assert '"id": "a\\u009b2J\\u202eevil\\u001b"' in shown
    assert "\x9b" in written and "\x9b" not in shown and "\u202e" not in shown
    assert json.loads(shown) == json.loads(written) == data
    assert shown.endswith("}\n")


def test_the_pieces_are_the_document_a_case_at_a_time():
    data = compared()
    data["runs"][0]["cases"][0]["query"] = "line\nbreak \u2028 \"quoted\" ⟨naïve⟩ \\"
    data["runs"][1]["cases"][1]["id"] = "ptah-cases-"
    empty = copy.deepcopy(data["runs"][1]) | {"cases": []}
    empty["aggregates"]["cases"] = 0
    data["runs"].append(empty)
    pieces = list(report_chunks(report(data)))
    assert "".join(pieces) == report_json(report(data)) == json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    # Per run: the text before its cases, each case alone, the list's end (or "[]"); then the rest.
    assert [piece.count('"query": ') for piece in pieces] == [0, 1, 1, 0, 0, 1, 1, 0, 0, 0, 0]
    assert pieces[-3].endswith('"cases": ') and pieces[-2] == "[]"


def test_a_report_of_many_cases_is_written_without_its_whole_text_in_memory(tmp_path):
    data = document()
    [case] = data["runs"][0]["cases"][:1]
    data["runs"][0]["cases"] = [case | {"id": f"c{i}", "query": f"query {i} " + "word " * 40} for i in range(5_000)]
    data["runs"][0]["aggregates"]["cases"] = 5_000
    measured = report(data)
    path = tmp_path / "report.json"
    tracemalloc.start()
    try:
        write_json(measured, path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    text = path.read_text(encoding="utf-8")
    assert text == json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    assert len(text) > 5_000_000 and peak < 2_000_000  # a quarter MiB gathered per write, and one case at a time


def test_indented_is_json_dumps_with_indent_two_for_any_value():
    """ptah's indenting encoder against json's, on random nested values and on what json alone refuses."""
    class Grade(enum.IntEnum):
        HIGH = 2

    class Text(str):
        pass

    leaves = [0, -3, 10**30, 0.1, -2.5e-300, 1e16, 0.0, -0.0, True, False, None, "", "a\"b\\c\n\t\x00\x7f",
              "café ⟨naïve⟩ \u2028", Grade.HIGH, Text("sub"), 1.5]
    draw = random.Random(7)

    def value(depth: int):
        if depth > 4 or draw.random() < 0.4:
            return draw.choice(leaves)
        if draw.random() < 0.5:
            return [value(depth + 1) for _ in range(draw.randint(0, 4))]
        if draw.random() < 0.2:
            return tuple(value(depth + 1) for _ in range(draw.randint(0, 3)))
        keys = ["k", "é", "a\"b", "", 1, 2.5, True, None] if draw.random() < 0.1 else ["k", "é", "a\"b", "", "x y"]
        return {draw.choice(keys): value(depth + 1) for _ in range(draw.randint(0, 4))}

    for _ in range(3000):
        item = value(0)
        expected = json.dumps(item, indent=2, ensure_ascii=False, allow_nan=False)
        assert indented(item) == expected
        assert indented(item, "\n    ") == expected.replace("\n", "\n    ")
    deep: list = []
    for _ in range(150):
        deep = [deep]
    assert indented(deep) == json.dumps(deep, indent=2)
    circle: list = []
    circle.append(circle)
    refused = [float("nan"), {"x": float("inf")}, [-float("inf")], {(1, 2): 3}, {"x": object()}, circle]
    for item in refused:
        with pytest.raises((ValueError, TypeError)) as ours:
            indented(item)
        with pytest.raises((ValueError, TypeError)) as theirs:
            json.dumps(item, indent=2, allow_nan=False)
        assert (type(ours.value), str(ours.value)) == (type(theirs.value), str(theirs.value))
