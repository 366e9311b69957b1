"""A service reports each answered request to a build's progress (ptah.services.build_progress), in
any order."""

from __future__ import annotations

import numpy as np

from tests.adapters.test_openai_embedder import TEXTS, fast_policy, local, open_served, server  # noqa: F401 (fixtures)


def test_each_answered_request_moves_the_progress_one_at_a_time(server, local):  # noqa: F811
    embedder = open_served(server, batch_size=3, concurrency=1)
    done: list[int] = []
    vectors = embedder.embed_documents(TEXTS, progress=done.append)
    assert done == [3, 6, 7]
    assert np.abs(vectors - local.embed_documents(TEXTS)).max() <= 1e-6


def test_requests_in_flight_together_count_each_text_once(server):  # noqa: F811
    embedder = open_served(server, batch_size=2, concurrency=4)
    done: list[int] = []
    embedder.embed_documents(TEXTS, progress=done.append)
    assert (
        len(done) == 4 and done == sorted(done) and done[-1] == 7
    )  # four requests, answered in any order
