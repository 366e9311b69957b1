"""Drop gate keys: a measure, and a slice after the last @ unless it is a depth."""

from __future__ import annotations

import pytest

from ptah.core.measures import Measure
from ptah.core.registry import OptionError
from ptah.core.request import EvaluationRequest, gate_key


@pytest.mark.parametrize(
    "name, measure, tag",
    [
        ("recall", "recall", None),
        ("MAP@10", "MAP@10", None),
        ("recall@billing", "recall", "billing"),
        ("MAP@10@de", "MAP@10", "de"),
        ("nDCG@*", "nDCG", "*"),
        ("P@5@2fa", "P@5", "2fa"),
    ],
)
def test_a_gate_key_is_a_measure_and_maybe_a_slice(name, measure, tag):
    assert gate_key(name) == (Measure.parse(measure), tag)


def test_a_request_keeps_slice_gates_and_measures_their_measure():
    request = EvaluationRequest(
        max_drop={"recall@billing": 0.02, "MAP@10@*": 0.1}, baseline="b.json"
    )
    assert dict(request.max_drop) == {"recall@billing": 0.02, "MAP@10@*": 0.1}
    assert [str(m) for m in request.measures] == ["MAP@10"]


def test_a_tag_ptah_does_not_accept_is_refused_naming_the_option():
    with pytest.raises(OptionError) as caught:
        EvaluationRequest(max_drop={"recall@Billing": 0.02}, baseline="b.json")
    assert str(caught.value) == (
        "max_drop: 'Billing' is not a tag (1 to 32 lowercase letters, digits, '.', '_' or "
        "'-'), nor * for every slice."
    )
