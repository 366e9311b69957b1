"""The output formats' registry behind ``Report.save``: each registered format writes its renderer's
text."""

from __future__ import annotations

import pytest

import ptah
from ptah.core.formats import FORMATS
from ptah.render.html import render_html
from ptah.render.json import report_json
from ptah.render.junit import render_junit
from ptah.render.markdown import render_markdown
from ptah.render.trec import run_lines
from tests.render.reports import compared, report


def test_save_writes_each_registered_format_as_its_renderer_makes_it(tmp_path):
    measured = report(compared())
    expected = {
        "json": report_json(measured),
        "html": render_html(measured),
        "junit": render_junit(measured),
        "markdown": render_markdown(measured),
        "trec": "".join(line + "\n" for line in run_lines(measured)),
    }
    assert FORMATS.names() == tuple(expected)
    for name, text in expected.items():
        measured.save(tmp_path / name, name)
        assert (tmp_path / name).read_text(encoding="utf-8") == text
    measured.save(tmp_path / "default")
    assert (tmp_path / "default").read_text(encoding="utf-8") == expected["json"]


def test_an_unknown_format_is_exit_2_and_writes_nothing(tmp_path):
    with pytest.raises(ptah.InputError) as raised:
        report(compared()).save(tmp_path / "r.pdf", "pdf")
    assert raised.value.exit_code == 2
    assert str(raised.value) == "unknown output format 'pdf'; use json, html, junit, markdown, trec"
    assert list(tmp_path.iterdir()) == []
