"""Exact search over vectors streamed in blocks gives the report the whole matrix gives, on both
stores.

The generation is made bigger than one block (``STREAM_ROWS`` patched to
4,096, ``STREAM_BYTES`` to 0 so it streams) and full of ties: many rows share
one text, so their vectors and scores are equal, and ties straddle the cutoffs.
Required keys are missed and ranked thousands deep; the snapshot reads their
vectors by key before the blocks, so the stream counts those ranks as the
blocks go by and reads each block once.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

import ptah
from ptah.core.exact import ExactRanking
from ptah.services.channels import exact

ROWS = 9_500
WORDS = "invoice refund password export team invite plan upgrade token webhook report tax".split()


def corpus_text() -> str:
    rng = random.Random(5)
    lines = ["version: 1", "default_k: 5", "cases:"]
    for number in range(24):
        target = rng.randrange(11, ROWS)
        words = " ".join(rng.sample(WORDS, 2))
        lines += [
            f"  - id: c{number}",
            f'    query: "{words}"',
            f"    k: {rng.choice([1, 3, 5, 10])}",
            f'    required: ["{target}"]',
            f'    relevant: {{"{rng.randrange(11, ROWS)}": 1, "{target}": 2}}',
        ]
        if number % 3 == 0:
            lines.append(f'    forbidden: ["{rng.randrange(11, ROWS)}"]')
    return "\n".join(lines) + "\n"


@pytest.fixture
def big_workspace(store_workspace):
    return filled(store_workspace)


def filled(space):
    """``space`` with ROWS look-alike rows (ties everywhere), the corpus, and generation ``docs``
    built."""
    rng = random.Random(3)
    rows = [
        (i, " ".join(rng.sample(WORDS, 2)), " ".join(rng.sample(WORDS, 1)), "published")
        for i in range(11, ROWS)
    ]
    space.execute(
        "INSERT INTO articles VALUES (?, ?, ?, ?)", rows
    )  # 12 x 11 x 12 texts: every text many times over
    space.write_spec(
        generations={"docs": "model: ptah/deterministic\n    dimension: 32\n    batch_size: 512"}
    )
    (space.folder / "corpus.yaml").write_text(corpus_text())
    with ptah.open_project(space.spec_path) as project:
        project.build()
    return space


def measured(report) -> dict:
    data = report.to_dict()
    for volatile in ("created_at", "timings"):
        data.pop(volatile)
    for run in data["runs"]:
        run["generation"].pop(
            "queries_from_cache"
        )  # the first evaluation embeds the queries, later ones read them
        run.pop("cost")  # seconds
    for candidate in (data["comparison"] or {}).get("candidates", []):
        candidate.pop("cost")
    return data


def evaluate(space, monkeypatch, *, streaming: bool, **options):
    if streaming:
        monkeypatch.setattr(exact, "STREAM_ROWS", 4_096)
        monkeypatch.setattr(exact, "STREAM_BYTES", 0)
    else:
        monkeypatch.setattr(exact, "STREAM_BYTES", 1 << 40)
    with ptah.open_project(space.spec_path) as project:
        return project.evaluate(
            space.folder / "corpus.yaml", measures=["MAP@10", "P@10"], **options
        )


def test_a_streamed_evaluation_reports_exactly_what_the_whole_matrix_does(
    big_workspace, monkeypatch
):
    whole = evaluate(big_workspace, monkeypatch, streaming=False)
    calls = []

    def no_matrix(self, identity):
        calls.append(identity)
        raise AssertionError("a streamed evaluation must not read the whole matrix")

    for kind in ("sqlite_snapshot.StoreSnapshot", "pgvector_snapshot.PgvectorSnapshot"):
        module, name = kind.split(".")
        monkeypatch.setattr(
            getattr(__import__(f"ptah.adapters.stores.{module}", fromlist=[name]), name),
            "matrix",
            no_matrix,
        )
    streamed_report = evaluate(big_workspace, monkeypatch, streaming=True)
    assert calls == []
    assert measured(streamed_report) == measured(whole)
    run = whole.runs[0]
    assert run.generation.rows == ROWS - 1
    assert (
        sum(1 for case in run.cases if case.ties.straddles_cutoff) > 5
    )  # ties were there to get right
    missed = [miss for case in run.cases for miss in case.missed]
    assert missed and any(
        miss.rank is not None and miss.rank > 4_096 for miss in missed
    )  # ranked past a block


def test_index_search_both_streams_the_exact_side_and_index_alone_reads_no_vector(
    big_workspace, monkeypatch, store_kind
):
    if store_kind != "pgvector":
        pytest.skip("index search needs the pgvector store")
    with ptah.open_project(big_workspace.spec_path) as project:
        project.index(m=8, ef_construction=32)
    whole = evaluate(big_workspace, monkeypatch, streaming=False, search="both")
    assert measured(
        evaluate(big_workspace, monkeypatch, streaming=True, search="both")
    ) == measured(whole)
    blocks = []
    original = ExactRanking.add

    def counted(self, *args, **kwargs):
        blocks.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(ExactRanking, "add", counted)
    index_only = evaluate(big_workspace, monkeypatch, streaming=True, search="index")
    assert blocks == []
    assert [case.ranking for case in index_only.runs[0].cases] == [
        case.ranking for case in whole.runs[0].cases
    ]


def test_a_matrix_gives_the_vectors_of_keys_of_one_row_before_its_blocks():
    vectors = np.arange(8, dtype=np.float32).reshape(4, 2)
    rows_of = exact.matrix_rows(["a", "b", "a", "c"], vectors)
    found = rows_of({"a", "c", "absent"})
    assert list(found) == ["c"]  # "a" is two rows: its rank is counted as before
    assert found["c"].tolist() == [6.0, 7.0]


@pytest.mark.parametrize("normalize", [True, False])
def test_a_streamed_missed_key_is_ranked_in_the_one_pass_over_the_blocks(
    big_workspace, monkeypatch, normalize
):
    if not normalize:  # stored as embedded, scaled as read: the blocks and the rows read by key
        big_workspace.write_spec(
            generations={
                "docs": "model: ptah/deterministic\n    dimension: 32\n    batch_size: 512\n"
                "    normalize: false"
            }
        )
        with ptah.open_project(big_workspace.spec_path) as project:
            project.build()
    whole = evaluate(big_workspace, monkeypatch, streaming=False)
    streams, again = [], []
    for kind in ("sqlite_snapshot.StoreSnapshot", "pgvector_snapshot.PgvectorSnapshot"):
        module, name = kind.split(".")
        cls = getattr(__import__(f"ptah.adapters.stores.{module}", fromlist=[name]), name)

        def counted(self, identity, rows, original=cls.vector_blocks):
            streams.append(rows)
            return original(self, identity, rows)

        monkeypatch.setattr(cls, "vector_blocks", counted)
    original_count = ExactRanking.count

    def recounted(self, *args, **kwargs):
        again.append(1)
        return original_count(self, *args, **kwargs)

    monkeypatch.setattr(ExactRanking, "count", recounted)
    streamed_report = evaluate(big_workspace, monkeypatch, streaming=True)
    assert streams == [4_096]  # one stream of the generation's blocks, 3 of them
    assert again == []  # no block given a second time
    assert measured(streamed_report) == measured(whole)
    missed = [miss for case in streamed_report.runs[0].cases for miss in case.missed]
    assert sum(1 for miss in missed if miss.rank is not None and miss.rank > 4_096) >= 1
