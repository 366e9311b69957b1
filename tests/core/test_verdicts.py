"""Counts said right for one as for many: "1 hole", "the one attempt", never "all 1 attempts"."""

from __future__ import annotations

from ptah.core.report import all_of, counted


def test_a_count_of_one_is_singular():
    assert [counted(n, "unjudged row") for n in (0, 1, 2, 1200)] == [
        "0 unjudged rows",
        "1 unjudged row",
        "2 unjudged rows",
        "1,200 unjudged rows",
    ]


def test_every_one_of_one_is_the_one():
    assert [all_of(n, "attempt") for n in (1, 3)] == ["the one attempt", "all 3 attempts"]
