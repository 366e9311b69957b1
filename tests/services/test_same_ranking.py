"""The same ranking on every machine, end to end: a case's results do not depend on what else is
evaluated with it.

The table's own vectors (an external generation: ``vectors: {column: …}``)
lie within about 3e-7 of one direction, so their float32 scores against a
query differ by a few float32 steps at most, and which of two rows ranks first
was decided by the rounding of the BLAS product before ptah re-scored
candidates in float64. Evaluated here in every way that used to move rankings
-- cases added, removed and reordered; one BLAS thread or two; the rows
written in reverse order -- each case's results, ranks of missed keys, ties
and measures must stay what they were. Nothing is compared with a BLAS
product's bits.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from ptah.adapters.corpus_yaml import parse_corpus
from ptah.services.evaluate import evaluate
from tests.services.conftest import Workspace, request

ROWS, DIMENSION = 1_500, 32
EXTERNAL = (
    f"vectors: {{column: embedding}}\n    model: ptah/deterministic\n    dimension: {DIMENSION}"
)
WORDS = "invoice refund password export team invite plan upgrade token webhook report tax billing login".split()


def near_vectors(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    direction = rng.standard_normal(DIMENSION)
    vectors = direction / np.linalg.norm(direction) + rng.standard_normal((ROWS, DIMENSION)) * 3e-7
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def make_workspace(folder, *, reverse: bool) -> Workspace:
    space = Workspace(folder)
    space.execute(
        "CREATE TABLE articles (id INTEGER PRIMARY KEY, title TEXT, body TEXT, status TEXT, embedding BLOB)"
    )
    vectors = near_vectors(8)
    rows = [
        (i + 1, f"t{i}", f"b{i}", "published", vectors[i].astype("<f4").tobytes())
        for i in range(ROWS)
    ]
    space.execute("INSERT INTO articles VALUES (?, ?, ?, ?, ?)", rows[::-1] if reverse else rows)
    space.write_spec(generations={"ext": EXTERNAL}, active="ext")
    return space


def cases(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [
        f'  - {{id: c{seed}-{i}, query: "{" ".join(rng.sample(WORDS, 3))} {i}", k: {rng.choice([1, 5, 10])}, '
        f'required: ["{rng.randrange(1, ROWS + 1)}"], relevant: {{"{rng.randrange(1, ROWS + 1)}": 2}}}}'
        for i in range(count)
    ]


def measured(space: Workspace, lines: list[str]) -> dict[str, dict]:
    """Each case's report entry, by case id."""
    corpus = parse_corpus("version: 1\ncases:\n" + "\n".join(lines) + "\n", name="c.yaml")
    with space.project() as project:
        report = evaluate(project, corpus, request(measures=["MAP@10", "P@10"])).to_dict()
    return {case["id"]: case for case in report["runs"][0]["cases"]}


@pytest.fixture(scope="module")
def spaces(tmp_path_factory):
    return (
        make_workspace(tmp_path_factory.mktemp("forward"), reverse=False),
        make_workspace(tmp_path_factory.mktemp("reverse"), reverse=True),
    )


def test_the_vectors_really_are_too_close_for_float32_to_order(spaces):
    vectors = near_vectors(8).astype(np.float64)
    query = np.random.default_rng(1).standard_normal(DIMENSION)
    exact = vectors @ (query / np.linalg.norm(query))
    assert (
        len(np.unique(exact.astype(np.float32))) < len(np.unique(exact)) / 3
    )  # even rounded exactly


def test_a_cases_results_stay_whatever_else_is_evaluated_and_however(spaces):
    forward, reverse = spaces
    mine, others = cases(150, 1), cases(150, 2)
    alone = measured(forward, mine)
    assert (
        sum(1 for case in alone.values() if case["required"]["missed"]) > 100
    )  # ranks of missed keys counted, thousands deep

    shuffled = mine[:]
    random.Random(3).shuffle(shuffled)
    mixed = measured(
        forward, others[:70] + shuffled[:90] + others[70:]
    )  # cases added, removed and reordered
    assert {key: mixed[key] for key in alone if key in mixed} == {
        key: alone[key] for key in mixed if key in alone
    }
    assert len([key for key in alone if key in mixed]) == 90

    assert measured(reverse, mine) == alone  # the rows written in the other order
    for threads in (1, 2):
        with threadpool_limits(limits=threads, user_api="blas"):
            assert measured(forward, mine) == alone
