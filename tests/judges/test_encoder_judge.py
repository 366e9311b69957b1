"""The encoder judge: a generation's model scores each (query, judging text) pair, and the
thresholds turn the score into the highest grade it reaches."""

from __future__ import annotations

import numpy as np
import pytest

from ptah.core.ranking import pair_scores
from tests.judges.test_chat_judge import QUERIES, holes, judge, model_grades
from tests.services.conftest import DOCS, Workspace


def scores(project, pairs):
    embedder = project.embedder(project.spec.generation("docs"))
    found = {}
    for case_id, key in pairs:
        query = embedder.embed_queries([QUERIES[case_id]])
        row = embedder.embed_documents([Workspace.judging_text(DOCS[int(key) - 1])])
        found[(case_id, key)] = float(
            pair_scores(query, row, np.zeros(1, dtype=np.int64), np.arange(1))[0]
        )
    return found


def test_the_encoder_judge_grades_by_its_thresholds(judged_space, capsys):
    pairs = holes(capsys, judged_space)
    with judged_space.project() as project:
        scored = scores(project, pairs)
    middle = float(np.median(list(scored.values())))
    with judged_space.spec_path.open("a") as spec:
        spec.write(f"  enc: {{kind: encoder, generation: docs, threshold: {middle!r}}}\n")
    code, out, err = judge(capsys, judged_space, name="enc")
    assert code == 0, err
    grades = model_grades(judged_space, "enc")
    assert grades == {pair: (1.0 if scored[pair] >= middle else 0.0) for pair in pairs}
    assert 0 < sum(grades.values()) < len(pairs)


def test_an_encoder_judge_whose_grade_the_corpus_does_not_use_is_exit_2(judged_space, capsys):
    with judged_space.spec_path.open("a") as spec:
        spec.write("  enc: {kind: encoder, generation: docs, thresholds: {1: 0.1, 3: 0.5}}\n")
    code, _, err = judge(capsys, judged_space, name="enc")
    assert code == 2
    assert (
        "the encoder judge's thresholds name grade 3, which the corpus does not use (its grades: 0, 1)"
        in err
    )


@pytest.mark.parametrize(
    "line, said",
    [
        (
            "  enc: {kind: encoder, generation: docs}",
            "judges.enc.threshold: missing; an encoder judge turns scores into grades",
        ),
        ("  enc: {kind: oracle}", None),
    ],
)
def test_a_judge_the_spec_cannot_use_is_refused_naming_it(judged_space, capsys, line, said):
    with judged_space.spec_path.open("a") as spec:
        spec.write(line + "\n")
    code, _, err = judge(capsys, judged_space, name="enc")
    assert code == 2
    assert (said or "unknown judge kind 'oracle'; the registered kinds are encoder, chat") in err, (
        err
    )
