"""Which recorded random sample of holes a run's gates may use, and why the others are ignored."""

from __future__ import annotations

from ptah.core.corpus import Case
from ptah.core.judged import Judgement, JudgementRecord, Sample, population_digest
from ptah.core.parts import RunGeneration, Search
from ptah.core.report import make_run, measure_case
from ptah.services.evidence import samples_of

SHA = "a" * 64
IDENTITY = "sha256:" + "1" * 64
OTHER = "sha256:" + "2" * 64
CASE = Case(id="c", query="q", k=3, relevant={"r": 1.0})
DRAWN = Sample(
    5, population_digest([("c", "a"), ("c", "b")]), 1, (IDENTITY,), "2026-11-30T12:00:00Z"
)


def run(identity: str, judged=frozenset()):
    case = Case(id="c", query="q", k=3, relevant={"r": 1.0}, judged=frozenset(judged))
    result = measure_case(case, [("a", 0.9), ("b", 0.8), ("r", 0.7)], searched=3)
    return make_run(
        RunGeneration.from_dict({"name": identity[-4:], "identity": identity}),
        Search.from_dict({"channel": "vector", "mode": "exact"}),
        [result],
    )


def test_a_sample_counts_for_the_runs_it_was_drawn_from_and_holes_judged_since_still_belong_to_it():
    record = JudgementRecord(
        samples=(DRAWN,),
        cases={
            "c": {
                "a": Judgement(0.0, SHA, "2026-11-30T12:00:01Z", sample=0),
                "b": Judgement(0.0, SHA, "2026-11-30T12:05:00Z"),
            }
        },
    )  # judged by hand after the draw
    found = samples_of(record, [run(IDENTITY, {"a", "b"}), run(OTHER, {"a", "b"})])
    # a (first) and b (second) are holes only the run ranks: two strata; the one drawn hole went to
    # the first
    assert dict(found["1111"].latest) == {"candidate/1": (1, 1, 0), "candidate/2-3": (1, 0, 0)}
    assert (found["1111"].seed, found["1111"].index, found["1111"].rates.as_dict()) == (
        5,
        0,
        {"candidate/1": {"judged": 1, "relevant": 0}},
    )
    assert (found["2222"].latest, found["1111"].ignored, found["2222"].ignored) == (None, (), ())


def test_a_sample_drawn_from_other_holes_or_runs_is_ignored_with_the_reason():
    record = JudgementRecord(
        samples=(DRAWN,),
        cases={
            "c": {
                "a": Judgement(0.0, SHA, "2026-11-30T12:00:01Z", sample=0),
                "b": Judgement(0.0, SHA, "2026-11-29T00:00:00Z"),
            }
        },
    )  # judged BEFORE the draw: the population differs
    found = samples_of(record, [run(IDENTITY, {"a", "b"})])
    assert found["1111"].latest is None
    assert found["1111"].ignored == (
        "sample 0 (seed 5) was drawn from other holes than these runs have now (the corpus, its record or the "
        "rankings changed since); draw a new one",
    )
    pooled = Sample(5, DRAWN.population, 1, (IDENTITY, OTHER), DRAWN.drawn_at)
    found = samples_of(JudgementRecord(samples=(pooled,)), [run(IDENTITY)])
    assert found["1111"].latest is None and found["1111"].ignored == (
        "sample 0 (seed 5) was drawn from the holes of 2 runs; evaluate them together (with its baseline) to use it",
    )


def test_a_sample_whose_seed_does_not_draw_its_keys_is_refused():
    import pytest

    from ptah.core.errors import InputError

    # seed 5 draws a (ranked first), not b: a record that tags b as the sample's is not the random
    # one
    forged = JudgementRecord(
        samples=(DRAWN,),
        cases={
            "c": {
                "a": Judgement(0.0, SHA, "2026-11-30T12:00:01Z"),
                "b": Judgement(0.0, SHA, "2026-11-30T12:00:01Z", sample=0),
            }
        },
    )
    with pytest.raises(InputError) as refused:
        samples_of(forged, [run(IDENTITY, {"a", "b"})])
    assert refused.value.exit_code == 2 and "case 'c' key 'b'" in str(refused.value)
    larger = Sample(5, DRAWN.population, 3, (IDENTITY,), DRAWN.drawn_at)  # 3 drawn from 2
    with pytest.raises(InputError) as refused:
        samples_of(JudgementRecord(samples=(larger,)), [run(IDENTITY)])
    assert refused.value.exit_code == 2 and "never larger than its population" in str(refused.value)


def test_the_baseline_holes_the_current_run_lost_are_counted():
    from ptah.core.corpus import Corpus
    from ptah.services.evidence import holes_lost

    corpus = Corpus(cases=(CASE,))
    before = run(IDENTITY)  # top 3: a, b (holes), r
    now = make_run(
        RunGeneration.from_dict({"name": "now", "identity": OTHER}),
        Search.from_dict({"channel": "vector", "mode": "exact"}),
        [measure_case(CASE, [("r", 0.9), ("b", 0.8), ("x", 0.7)], searched=3)],
    )
    assert (
        holes_lost(corpus, before, now) == 1
    )  # a: in the baseline's top 3, unjudged, gone from the run's
    judged = Corpus(
        cases=(Case(id="c", query="q", k=3, relevant={"r": 1.0}, judged=frozenset({"a"})),)
    )
    assert holes_lost(judged, before, now) == 0  # judged since: not a hole any more


def test_a_grades_file_names_the_line_it_refuses(tmp_path):
    import pytest

    from ptah.core.errors import InputError
    from ptah.core.worklist import Hole, WorkCase
    from ptah.services.judging import verdicts_from_file

    hole = Hole("7", {"docs": 1}, "title: Two-factor login", SHA)
    items = [(WorkCase("c", "q", 3, (hole,)), hole)]
    grades = tmp_path / "grades.tsv"
    grades.write_text("# none relevant\n7\t0\nx\t1\n")  # a row the sample did not draw is not used
    assert [(v.case, v.key, v.grade) for v in verdicts_from_file(grades, items, (1.0,))] == [
        ("c", "7", 0.0)
    ]
    for text, problem in [
        (
            "7\t0\n7 1\n",
            "write KEY<TAB>GRADE or CASE<TAB>KEY<TAB>GRADE with a grade from 0 to "
            "1,000,000, not '7 1'",
        ),
        (
            "c\t7\t2\n",
            "grade 2 is not on the corpus's scale (0.5, 1); use one of those, or pass "
            "--new-grade to add it",
        ),
    ]:
        grades.write_text(text)
        with pytest.raises(InputError) as refused:
            verdicts_from_file(grades, items, (0.5, 1.0))
        line = text.count("\n")
        assert (str(refused.value), refused.value.exit_code) == (f"{grades}:{line}: {problem}", 2)
    assert [v.grade for v in verdicts_from_file(grades, items, (0.5, 1.0), new_grade=True)] == [2.0]


def test_a_grades_file_is_read_as_written_bom_repeats_and_underscores(tmp_path):
    import pytest

    from ptah.core.errors import InputError
    from ptah.core.worklist import Hole, WorkCase
    from ptah.services.judging import verdicts_from_file

    hole = Hole("7", {"docs": 1}, "title: Two-factor login", SHA)
    items = [(WorkCase("c", "q", 3, (hole,)), hole)]
    grades = tmp_path / "grades.tsv"
    for data in (
        b"\xef\xbb\xbf7\t1\n",
        b"7\t1\nc\t7\t1\n7\t1\n",
    ):  # a byte order mark is no part of a key
        grades.write_bytes(data)
        assert [(v.key, v.grade) for v in verdicts_from_file(grades, items, (1.0,))] == [("7", 1.0)]
    grades.write_text("7\t0\n# second thoughts\nc\t7\t1\nc\t7\t0\n")
    with pytest.raises(InputError) as refused:
        verdicts_from_file(grades, items, (1.0,))
    assert (str(refused.value), refused.value.exit_code) == (
        f"{grades}:4: 'c\\t7' is graded 0 here and 1 on line 3; keep one of the two lines",
        2,
    )
    for grade in ("1_0", "\u0661\u0660", "+1", "inf"):  # float() reads the first two as 10
        grades.write_text(f"7\t{grade}\n")
        with pytest.raises(InputError) as refused:
            verdicts_from_file(grades, items, (1.0, 10.0))
        assert (
            str(refused.value).startswith(f"{grades}:1: write KEY<TAB>GRADE")
            and refused.value.exit_code == 2
        )
