"""Which model grades an evaluation uses: only those pinned to the row's judging text as it is now,
calibrated on the pairs of the run's sample where the person and the model saw the same text."""

from __future__ import annotations

from ptah.core.baseline import Evidence
from ptah.core.corpus import Case
from ptah.core.judged import Judgement, JudgementRecord, Sample
from ptah.core.parts import RunGeneration, Search
from ptah.core.provenance import text_digest
from ptah.core.report import make_run, measure_case
from ptah.services.evidence import model_judges, ranked_texts
from tests.services.conftest import DOCS, Workspace

BY = "model:encoder@sha256:" + "e" * 64
WHEN = "2026-12-01T00:00:00Z"


def text_of(key: str) -> str:
    return text_digest(Workspace.judging_text(DOCS[int(key) - 1]))


def test_model_grades_of_changed_rows_and_of_other_text_are_not_used(workspace):
    cases = [Case(id=f"c{i}", query="q", k=2, relevant={"1": 1.0}) for i in range(3)]
    run = make_run(
        RunGeneration.from_dict({"name": "docs"}),
        Search.from_dict({"channel": "vector"}),
        [measure_case(case, [("2", 0.9), ("3", 0.8)], searched=2) for case in cases],
    )  # holes 2 and 3
    person = {
        "c0": {
            "4": Judgement(1.0, text_of("4"), WHEN, sample=0),
            "5": Judgement(0.0, text_of("5"), WHEN, sample=0),
            "6": Judgement(0.0, text_of("6"), WHEN, sample=0),
        }
    }
    model = {
        "c0": {
            "2": Judgement(1.0, text_of("2"), WHEN),
            "3": Judgement(0.0, "0" * 64, WHEN),  # row 3 changed
            "4": Judgement(1.0, text_of("4"), WHEN),
            "5": Judgement(1.0, text_of("5"), WHEN),
            "6": Judgement(0.0, "f" * 64, WHEN),
        },  # 6: the model saw another text than the person
        "c1": {"2": Judgement(0.0, text_of("2"), WHEN)},
    }
    record = JudgementRecord(
        cases=person, samples=(Sample(1, "sha256:" + "a" * 64, 3, (), WHEN),), models={BY: model}
    )
    with workspace.project() as project:
        texts = ranked_texts(project, [run])
        found = model_judges(record, [run], {"docs": Evidence(index=0)}, 0.6, texts)
        (judge,) = found["docs"]
        assert judge.by == BY and judge.name == "encoder"
        assert dict(judge.grades) == {("c0", "2"): 1.0, ("c1", "2"): 0.0}
        # pairs: row 4 (both relevant) and row 5 (model only); row 6's texts differ
        assert (judge.agreement.both, judge.agreement.model_only, judge.agreement.n) == (1, 1, 2)
        assert judge.untrusted == "only 2 sampled holes judged by both (at least 20 are needed)"
        # without a sample the run's U uses, the model is reported and untrusted
        (alone,) = model_judges(record, [run], {}, 0.6, texts)["docs"]
        assert alone.agreement.n == 0
        assert alone.untrusted == "no random sample of the holes judged by a person to check it on"
        assert model_judges(JudgementRecord(cases=person), [run], {}, 0.6, texts) == {}
