"""The report's JSON: the file is the document as written; the terminal form escapes what a terminal would act on."""

from __future__ import annotations

import json

from ptah.render.json import report_json, terminal_json
from tests.render.reports import compared, report


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
