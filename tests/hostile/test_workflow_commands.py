"""A case id or query written to start a second GitHub workflow command, or a Markdown link, or to
break XML.

``evaluate`` prints an ``::error`` annotation per failed case when
``GITHUB_ACTIONS=true``; GitHub runs every stdout/stderr line that starts with
``::`` as a command. A query holding a line break followed by
``::error file=…::`` (or ``::add-mask::``, ``::stop-commands::``), or an id
holding ``:`` and ``,`` to forge properties, must stay inside its own
annotation: percent-encoded per GitHub's rules. The same values must not
become links or HTML in the Markdown summary, nor unreadable XML in JUnit.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema

from ptah.render.annotations import command, escape_data, escape_property
from tests.cli.ci_project import evaluate, make_ci_project
from tests.cli.test_ci_outputs import ptah

XSD = Path(__file__).resolve().parents[1] / "render" / "junit.xsd"
HOSTILE_ID = "c1,line=1,title=x::forged"
HOSTILE_QUERY = "cancel\r\n::stop-commands::token\n::error file=evil.py::pwned 100%0A [x](https://evil.example) <img src=x> |"
QUOTED_QUERY = HOSTILE_QUERY.encode(
    "unicode_escape"
).decode()  # YAML's double-quoted escapes are Python's here
CORPUS = f"""\
version: 1
default_k: 1
cases:
  - id: {HOSTILE_ID!r}
    query: "{QUOTED_QUERY}"
    required: ["1", "2"]
  - id: "c2\\u001b]0;title\\u0007"
    query: "reset password"
    required: ["2"]
"""


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    folder = make_ci_project(tmp_path_factory.mktemp("hostile-ci"))
    (folder / "corpus.yaml").write_text(CORPUS)
    code, out, err = ptah(
        *evaluate(
            folder, "-g", "small", "--junit", folder / "r.xml", "--markdown", folder / "r.md"
        ),
        env={"GITHUB_ACTIONS": "true", "GITHUB_WORKSPACE": folder},
    )
    return folder, code, out, err


def test_the_escaping_rules_are_githubs():
    assert escape_data("a%b\r\nc:d,e") == "a%25b%0D%0Ac:d,e"
    assert escape_property("a%b\r\nc:d,e") == "a%25b%0D%0Ac%3Ad%2Ce"
    assert (
        escape_data("bell\x07 esc\x1b") == "bell\\x07 esc\\x1b"
    )  # other controls are made visible
    assert (
        command("error", "m", file="f", line=None, title="t:1") == "::error file=f,title=t%3A1::m"
    )


def test_a_hostile_query_and_id_stay_inside_one_annotation_each(hostile):
    _folder, code, _out, err = hostile
    assert code == 1
    lines = err.splitlines()
    commands = [line for line in lines if line.startswith("::")]
    assert len(commands) == 2  # c1 and c2 failed; nothing else starts a command
    assert all(line.startswith("::error file=corpus.yaml,line=") for line in commands)
    assert commands[0] == (
        "::error file=corpus.yaml,line=4,title=ptah%3A case c1%2Cline=1%2Ctitle=x%3A%3Aforged failed (small%2C vector)"
        "::required key '1' missed (ranked 3rd; k = 1); required key '2' missed (ranked 2nd; k = 1). Query: cancel%0D%0A::stop-commands::token%0A::error "
        "file=evil.py::pwned 100%250A [x](https://evil.example) <img src=x> |"
    )
    assert commands[1].startswith(
        "::error file=corpus.yaml,line=7,title=ptah%3A case c2\\x1b]0;title\\x07 failed"
    )
    assert not any("\x1b" in line or "\x07" in line for line in lines)


def outside_code_spans(line: str) -> str:
    """``line`` without its Markdown code spans (a run of n backticks up to the next run of exactly
    n)."""
    return re.sub(r"(?<!`)(`+)(?!`).*?(?<!`)\1(?!`)", "", line)


def test_the_markdown_summary_shows_them_as_code_never_as_links_or_html(hostile):
    text = (hostile[0] / "r.md").read_text()
    shown = [line for line in text.splitlines() if "evil.example" in line]
    assert len(shown) == 1  # the failing case's line
    assert (
        "`cancel\\r\\n::stop-commands::token\\n::error file=evil.py::pwned 100%0A [x](https://evil.example) <img src=x> |`"
        in shown[0]
    )
    assert [outside_code_spans(line) for line in shown] == ["-  in : query ; "]
    assert "\x1b" not in text and "\x07" not in text
    assert "`c2\\x1b]0;title\\x07`" in text


def test_the_junit_file_stays_valid_xml_holding_the_exact_values(hostile):
    text = (hostile[0] / "r.xml").read_text()
    xmlschema.XMLSchema(str(XSD)).validate(text)
    cases = ET.fromstring(text).find("testsuite").findall("testcase")
    assert [case.get("name") for case in cases] == [HOSTILE_ID, "c2\\x1b]0;title\\x07"]
    assert (
        cases[0]
        .find("failure")
        .text.startswith("query: " + HOSTILE_QUERY.replace("\r\n", "\n") + "\n")
    )
