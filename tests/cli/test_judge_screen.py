"""The judge screen says what each key does and, with each row, the grades its case already
gives."""

from __future__ import annotations

from ptah.cli.judge_session import legend, show
from ptah.core.worklist import Hole, WorkCase

CASE = WorkCase(
    "refund",
    "how do I get a refund",
    5,
    (),
    ('"42" required (grade 2)', '"7" grade 1', '"9" not relevant'),
)
HOLE = Hole("13", {"title-body": 3}, "title: Refunds", "0" * 64)


def test_each_row_shows_the_grades_its_case_gives_and_its_judged_keys_quoted(capsys):
    show((CASE, HOLE), 0, 4, (2.0, 1.0, 2.0))
    assert capsys.readouterr().out.splitlines()[:4] == [
        "",
        '[1/4] case "refund" (k 5): how do I get a refund',
        "  this case grades 2, 1",
        '  already judged: "42" required (grade 2), "7" grade 1, "9" not relevant',
    ]
    show((CASE, HOLE), 1, 4, ())
    assert "  this case grades no key relevant yet" in capsys.readouterr().out.splitlines()


def test_the_legend_says_what_each_key_does():
    assert legend((1.0, 2.0)) == (
        "keys: 0 not relevant (kept in the judgement record, not the corpus); 1 grade 1, 2 grade 2: relevant at "
        "that grade on the corpus's scale (written into the case's relevant keys; compare with the grades the case "
        "already gives, shown with each row); r required: it must be in the top k (grade 1); f forbidden: it must "
        "not be in the top k; s skip: ask again next session; u undo the last answer; q save and quit"
    )
