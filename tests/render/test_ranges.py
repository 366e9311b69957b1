"""A value the holes move reads min..max over every way they could be judged, never a "high" below
the low."""

from __future__ import annotations

from ptah.core.parts import RunGeneration, Search
from ptah.core.report import make_run
from ptah.render.layout import bounded, case_range, mean_range
from tests.core.test_bounds import low_holes


def test_a_case_and_a_mean_read_their_interval_over_completions_min_first():
    result = (
        low_holes()
    )  # nDCG 1.0 judged, 0.8529 with every hole relevant, 0.8503 with the deepest alone
    assert (result.values["nDCG"], round(result.highs["nDCG"], 4)) == (1.0, 0.8529)
    assert case_range(result, "nDCG") == "0.8503..1.0000"
    run = make_run(
        RunGeneration.from_dict({"name": "g"}), Search.from_dict({"channel": "vector"}), [result]
    )
    assert mean_range(run, "nDCG") == "0.8503..1.0000"
    assert case_range(result, "recall") == "1.0000"  # a relevant hole cannot move recall from 1


def test_a_stored_pair_reads_smaller_first():
    assert (bounded(1.0, 0.9383), bounded(0.5, 0.75), bounded(0.5, 0.5)) == (
        "0.9383..1.0000",
        "0.5000..0.7500",
        "0.5000",
    )
