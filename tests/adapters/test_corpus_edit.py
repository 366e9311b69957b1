"""Editing a corpus in place: only the added entries change; comments, order, quoting and style
stay."""

from __future__ import annotations

import difflib

import pytest

from ptah.adapters.corpus_edit import CorpusDocument
from ptah.adapters.corpus_yaml import load_corpus
from ptah.core.corpus import FORBIDDEN, REQUIRED
from ptah.core.errors import CorpusError, InputError, OperationalError

CORPUS = """\
# Support corpus, judged by hand
version: 1
name: "support"   # quoted name
default_k: 3

cases:
  # billing questions
  - id: cancel
    query: "how do I cancel my subscription?"
    required: ["1"]   # the cancel article
  - id: 'invoices'
    query: export invoices as pdf
    relevant:
      '3': 2
      "6": 1   # plan changes mention billing
    # end of the invoices case
  - id: login
    query: >-
      two factor
      login
    required:
      - "7"
    forbidden: ['9']
# the end
"""


def changes(before: str, after: str) -> list[str]:
    """The lines removed (``-``) and added (``+``), in order."""
    return [
        line
        for line in difflib.ndiff(before.splitlines(), after.splitlines())
        if line[:2] in ("+ ", "- ")
    ]


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "support.yaml"
    path.write_text(CORPUS)
    return path


def test_grades_added_to_block_collections_and_new_fields_are_the_only_new_lines(corpus):
    document = CorpusDocument.open(corpus)
    before = document.corpus.digest
    assert document.judge("invoices", "2", 1) == 1.0
    assert (
        document.judge("login", "3", 0.5) == 0.5
    )  # a case with only required: relevant made from it
    assert document.judge("login", "4", 0, FORBIDDEN) == 0.0
    document.append_case(
        "tokens", "api tokens", 5, [("8", 3, None), ("10", 1, REQUIRED), ("1", 0, FORBIDDEN)]
    )
    saved = document.save()
    after = corpus.read_text()
    assert changes(CORPUS, after) == [
        '+       "2": 1',
        "-     forbidden: ['9']",
        "+     forbidden: ['9', \"4\"]",
        "+     relevant:",
        '+       "7": 1',
        '+       "3": 0.5',
        '+   - id: "tokens"',
        '+     query: "api tokens"',
        "+     k: 5",
        '+     required: ["10"]',
        "+     relevant:",
        '+       "8": 3',
        '+       "10": 1',
        '+     forbidden: ["1"]',
    ]
    # the comment that followed the invoices grades still follows them, the end comment still ends
    # the file
    assert after.splitlines()[14:17] == [
        '      "6": 1   # plan changes mention billing',
        '      "2": 1',
        "    # end of the invoices case",
    ]
    assert after.endswith('    forbidden: ["1"]\n# the end\n')
    assert (document.lines_added, document.lines_changed) == (
        12,
        1,
    )  # the flow list rewrote its line
    assert saved == load_corpus(corpus) and saved.digest != before
    assert dict(saved.case("login").relevant) == {"7": 1.0, "3": 0.5}
    assert saved.case("login").forbidden == ("9", "4")
    assert (
        dict(saved.case("tokens").relevant) == {"8": 3.0, "10": 1.0} and saved.case("tokens").k == 5
    )


def test_a_flow_list_gains_its_entry_on_its_own_line_and_nothing_else_changes(corpus):
    document = CorpusDocument.open(corpus)
    document.judge("cancel", "x\x1fy", 1, REQUIRED)
    document.save()
    assert changes(CORPUS, corpus.read_text()) == [
        '-     required: ["1"]   # the cancel article',
        '+     required: ["1", "x\\x1Fy"] # the cancel article',
    ]
    assert load_corpus(corpus).case("cancel").required == ("1", "x\x1fy")


def test_required_in_a_case_with_relevant_is_graded_there_too(corpus):
    document = CorpusDocument.open(corpus)
    assert document.judge("invoices", "5", 2, REQUIRED) == 2.0
    saved = document.save()
    assert saved.case("invoices").required == ("5",)
    assert dict(saved.case("invoices").relevant) == {"3": 2.0, "6": 1.0, "5": 2.0}


def test_a_grade_of_zero_changes_nothing_in_the_corpus(corpus):
    document = CorpusDocument.open(corpus)
    assert document.judge("cancel", "4", 0) == 0.0
    document.save()
    assert corpus.read_text() == CORPUS


@pytest.mark.parametrize(
    ("case", "key", "grade", "mark", "message"),
    [
        (
            "nope",
            "1",
            1,
            None,
            'no case "nope" in the corpus; a judgement names a case of the corpus '
            "(`ptah corpus add` appends a new one)",
        ),
        (
            "login",
            "9",
            1,
            None,
            "case \"login\": key '9': the corpus forbids this key; remove it from forbidden before "
            "grading it relevant",
        ),
        (
            "login",
            "7",
            0,
            FORBIDDEN,
            "case \"login\": key '7': the corpus expects this key (required or relevant); a key "
            "cannot be both expected and forbidden: edit the corpus to change its mind",
        ),
        (
            "invoices",
            "3",
            0,
            None,
            "case \"invoices\": key '3': the corpus grades this key 2; edit the corpus to remove "
            "it before judging it not relevant",
        ),
        (
            "cancel",
            "2",
            0,
            REQUIRED,
            "case \"cancel\": key '2': a required key is relevant: give it a grade above 0",
        ),
    ],
)
def test_a_judgement_the_corpus_contradicts_is_refused(corpus, case, key, grade, mark, message):
    document = CorpusDocument.open(corpus)
    with pytest.raises(InputError) as info:
        document.judge(case, key, grade, mark)
    assert info.value.exit_code == 2
    assert str(info.value).removeprefix(f"{corpus}: ") == message


def test_a_new_case_needs_a_new_id_and_a_relevant_row(corpus):
    document = CorpusDocument.open(corpus)
    with pytest.raises(InputError, match='case "cancel" exists already'):
        document.append_case("cancel", "q", None, [("1", 1, None)])
    with pytest.raises(InputError, match='case "new": no row was judged relevant'):
        document.append_case("new", "q", None, [("1", 0, None), ("2", 0, FORBIDDEN)])


def test_an_edit_that_would_make_an_invalid_corpus_writes_nothing(corpus):
    document = CorpusDocument.open(corpus)
    document.append_case("bad\0id", "q", None, [("1", 1, None)])
    with pytest.raises(CorpusError, match="NUL"):
        document.save()
    assert corpus.read_text() == CORPUS


def test_a_corpus_changed_since_it_was_read_is_not_overwritten(corpus):
    document = CorpusDocument.open(corpus)
    document.judge("invoices", "2", 1)
    corpus.write_text(CORPUS + "\n")
    with pytest.raises(OperationalError) as info:
        document.save()
    assert info.value.exit_code == 3
    assert corpus.read_text() == CORPUS + "\n"


def test_an_unindented_list_layout_is_kept(tmp_path):
    path = tmp_path / "c.yaml"
    text = "version: 1\ndefault_k: 2\ncases:\n- id: a\n  query: q\n  relevant:\n    k1: 1\n"
    path.write_text(text)
    document = CorpusDocument.open(path)
    document.judge("a", "k2", 2)
    document.save()
    assert path.read_text() == text + '    "k2": 2\n'


def test_unquoted_numbers_and_booleans_stay_the_text_written(tmp_path):
    """ptah reads ``0042`` as the key "0042" and ``1e3`` and ``1000`` as two keys; the round trip
    must too."""
    path = tmp_path / "c.yaml"
    text = (
        "version: 1\ndefault_k: 0003\ncases:\n- id: 0042\n  query: q\n"
        "  relevant: {0042: 1, 1e3: 2, 1000: 1.50, true: 1}\n- id: true\n  query: r\n  required: [0x1F, 1_000]\n"
    )
    path.write_text(text)
    document = CorpusDocument.open(path)
    document.judge("0042", "1e3", 3)  # a grade changed in place
    document.judge("0042", "42", 0.5)
    document.judge("true", "0x1F", 2)
    saved = document.save()
    assert path.read_text() == text.replace("1e3: 2", "1e3: 3").replace(
        "true: 1}", 'true: 1, "42": 0.5}'
    ) + (
        '  relevant: {"0x1F": 2, "1_000": 1}\n'
    )  # in the flow style the corpus's other relevant uses
    assert dict(saved.case("0042").relevant) == {
        "0042": 1.0,
        "1e3": 3.0,
        "1000": 1.5,
        "true": 1.0,
        "42": 0.5,
    }
    assert dict(saved.case("true").relevant) == {"0x1F": 2.0, "1_000": 1.0}


PLAIN = (
    'version: 1\ndefault_k: 3\ncases:\n  - id: a\n    query: "x y"\n    relevant:\n      "1": 1\n'
    '  - id: b\n    query: q\n    required: ["2"]\n'
)
EDITED = (
    PLAIN.replace('"1": 1\n', '"1": 1\n      "3": 1\n')
    + '  - id: "c"\n    query: "z"\n    required: ["4"]\n'
)


@pytest.mark.parametrize(
    "written",
    [
        lambda text: text.replace("\n", "\r\n"),  # new lines in the file's own line ending
        lambda text: "\ufeff" + text,
        lambda text: "---\n" + text,
        lambda text: text + "...\n# after the end\n",  # new entries go before the end marker
        lambda text: text.replace('"x y"', '"x\ty"'),  # a raw tab stays raw
        lambda text: text.replace(
            '["2"]', '[ "2" ]'
        ),  # a flow collection not extended keeps its spacing
        lambda text: text.replace('["2"]', '[ "2" ]') + "...\n# after the end\n",
    ],
    ids=["crlf", "bom", "start", "end", "tab", "flow", "flow-end"],
)
def test_an_edit_changes_no_byte_it_did_not_mean_to(tmp_path, written):
    path = tmp_path / "c.yaml"
    path.write_bytes(written(PLAIN).encode())
    document = CorpusDocument.open(path)
    document.judge("a", "3", 1)
    document.append_case("c", "z", None, [("4", 1, REQUIRED)])
    saved = document.save()
    assert path.read_bytes() == written(EDITED).encode()
    assert saved.lines() == load_corpus(path).lines()  # each case's line in the file written
    assert (document.lines_added, document.lines_changed) == (4, 0)


def test_a_file_that_mixes_layouts_is_written_in_one_where_an_edit_needs_it(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(
        PLAIN + '    relevant:\n        "2": 1\n'
    )  # case b's grades indented deeper than case a's
    document = CorpusDocument.open(path)
    document.judge("b", "3", 1)
    document.save()
    assert path.read_text() == PLAIN + '    relevant:\n      "2": 1\n      "3": 1\n'
    assert (document.lines_added, document.lines_changed) == (1, 1)


@pytest.mark.parametrize(("mark", "required"), [(None, '"7", "8"'), (REQUIRED, '"7", "8", "3"')])
def test_flow_collections_written_over_lines_are_rewritten_with_the_lines_between_them_only(
    tmp_path, mark, required
):
    """ruamel.yaml writes a flow collection on one line: an edit takes in the whole run of lines it
    rewrote."""
    path, case = tmp_path / "c.yaml", '    query: "x y"\n    relevant:\n      "1": 1\n'
    path.write_text(
        PLAIN.replace(
            case,
            '    required: [ "7",\n      "8" ]\n    query: "x\ty"\n'
            '    relevant: { "1": 1,\n      "9": 1 }\n',
        ).replace('["2"]', '[ "2" ]')
    )
    document = CorpusDocument.open(path)
    document.judge("a", "3", 1, mark)
    document.save()
    assert path.read_text() == PLAIN.replace(
        case,
        f'    required: [{required}]\n    query: "x\\ty"\n'
        '    relevant: {"1": 1, "9": 1, "3": 1}\n',
    ).replace('["2"]', '[ "2" ]')
    assert (document.lines_added, document.lines_changed) == (0, 5)
