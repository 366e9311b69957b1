"""The report's JSON: the file is the document as written; the terminal form escapes what a terminal
would act on."""

from __future__ import annotations

import copy
import json
import tracemalloc

import ptah
from ptah.render.json import report_chunks, report_json, terminal_json
from tests.render.reports import compared, document, report


def test_the_file_is_the_document_indented_with_one_case_a_line():
    data = compared()
    data["runs"][0]["cases"][0]["query"] = "café ⟨naïve⟩"
    text = report_json(report(data))
    assert json.loads(text) == data and text.endswith("}\n")
    assert text.startswith(
        '{\n  "format": "ptah-report@1",\n  "created_at": "2025-01-01T00:00:00Z",\n  "corpus": {\n'
    )
    cases = [line for line in text.splitlines() if '"query": ' in line]
    assert cases == [
        " " * 8 + json.dumps(case, ensure_ascii=False) + ("," if index == 0 else "")
        for run in data["runs"]
        for index, case in enumerate(run["cases"])
    ]
    assert '"query": "café ⟨naïve⟩"' in cases[0]


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
    data["runs"][0]["cases"][0]["query"] = 'line\nbreak \u2028 "quoted" ⟨naïve⟩ \\'
    data["runs"][1]["cases"][1]["id"] = "ptah-cases-"
    empty = copy.deepcopy(data["runs"][1]) | {"cases": []}
    empty["aggregates"]["cases"] = 0
    data["runs"].append(empty)
    pieces = list(report_chunks(report(data)))
    assert "".join(pieces) == report_json(report(data))
    assert json.loads("".join(pieces)) == data
    # Per run: the text before its cases, each case alone, the list's end (or "[]"); then the rest.
    assert [piece.count('"query": ') for piece in pieces] == [0, 1, 1, 0, 0, 1, 1, 0, 0, 0, 0]
    assert pieces[-3].endswith('"cases": ') and pieces[-2] == "[]"


def test_a_report_of_many_cases_is_written_without_its_whole_text_in_memory(tmp_path):
    data = document()
    [case] = data["runs"][0]["cases"][:1]
    data["runs"][0]["cases"] = [
        case | {"id": f"c{i}", "query": f"query {i} " + "word " * 40} for i in range(5_000)
    ]
    data["runs"][0]["aggregates"]["cases"] = 5_000
    measured = report(data)
    path = tmp_path / "report.json"
    tracemalloc.start()
    try:
        measured.save(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    text = path.read_text(encoding="utf-8")
    assert json.loads(text) == data
    assert (
        len(text) > 3_000_000 and peak < 2_000_000
    )  # a quarter MiB gathered per write, and one case at a time
