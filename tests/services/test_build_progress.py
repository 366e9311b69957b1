"""A build's progress between commits, what Ctrl-C says it kept, and the status ``inference list``
gives after it."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from ptah.adapters.embedders import open_embedder
from ptah.adapters.embedders.deterministic import DeterministicEmbedder
from ptah.core.spec import GenerationSettings
from ptah.services.build import build
from ptah.services.build_progress import BuildInterrupted
from ptah.services.verify import list_generations

REPO = Path(__file__).resolve().parents[2]


class PerRow(DeterministicEmbedder):
    """Reports each row it embeds, as the local model reports each model batch."""

    def embed_documents(self, texts, progress=None):
        vectors = super().embed_documents(texts)
        for done in range(1, len(texts) + 1):
            progress(done)
        return vectors


class Recorder:
    """A progress callback with ``rows``: records ("commit", done) and ("rows", done)."""

    def __init__(self):
        self.seen: list[tuple[str, int, int]] = []

    def __call__(self, done, total):
        self.seen.append(("commit", done, total))

    def rows(self, done, total):
        self.seen.append(("rows", done, total))


BETWEEN_COMMITS = [
    ("commit", 0, 9),
    *[("rows", n, 9) for n in (1, 2, 3, 4)],
    ("commit", 4, 9),
    *[("rows", n, 9) for n in (5, 6, 7, 8)],
    ("commit", 8, 9),
    ("rows", 9, 9),
    ("commit", 9, 9),
]


@pytest.mark.parametrize(
    "embedder, seen",
    [
        (PerRow, BETWEEN_COMMITS),  # rows as they are embedded, between commits
        (
            DeterministicEmbedder,
            [("commit", 0, 9), ("commit", 4, 9), ("commit", 8, 9), ("commit", 9, 9)],
        ),  # none
    ],
)
def test_progress_moves_with_each_row_the_embedder_reports_and_at_each_commit(
    workspace, embedders, embedder, seen
):
    workspace.write_spec(filter="status = 'published'", generations={"docs": "model: test/rows"})
    embedders["test/rows"] = embedder(dimension=8)
    progress = Recorder()
    with workspace.project() as project:
        build(project, batch_rows=4, progress=progress)
    assert progress.seen == seen


def test_the_local_model_reports_each_model_batch_and_embeds_the_same_vectors():
    minilm = open_embedder(
        GenerationSettings("minilm", "sentence-transformers/all-MiniLM-L6-v2", batch_size=2),
        "/nowhere",
    )
    texts = [
        "short",
        "a much longer text about resetting a password",
        "mid length text",
        "x",
        "another one",
    ]
    done: list[int] = []
    vectors = minilm.embed_documents(texts, progress=done.append)
    assert done == [2, 4, 5]
    assert np.allclose(vectors, minilm.embed_documents(texts), atol=1e-5)


# A build in a child process, not tests.conftest.run_cli: the test interrupts it with SIGINT
# mid-batch. Its model test/stops reports REPORTED rows of its batch number BATCHES_FIRST (from 0),
# says "embedding" and waits there.
INTERRUPTED_BUILD = textwrap.dedent(
    """
    import sys, time
    from ptah.adapters.embedders.deterministic import DeterministicEmbedder
    from ptah.cli import main
    from tests.embedders import EMBEDDERS

    class Stops(DeterministicEmbedder):
        def embed_documents(self, texts, progress=None):
            if len(self.calls) == int(sys.argv[2]):
                for done in range(1, int(sys.argv[3]) + 1):
                    progress(done)
                print("embedding", flush=True)
                time.sleep(120)
            return super().embed_documents(texts)

    EMBEDDERS["test/stops"] = Stops(dimension=8)
    main(["inference", "build", "--spec", sys.argv[1]])
    """
)


def interrupt_build(spec_path: Path, batches_first: int, reported: int = 0) -> tuple[int, str]:
    """Build ``spec_path`` (model ``test/stops``) in a child process, SIGINT it once its embedder
    has reported ``reported`` rows of the batch after ``batches_first`` and printed "embedding": its
    exit code and stderr."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            INTERRUPTED_BUILD,
            str(spec_path),
            str(batches_first),
            str(reported),
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout.readline() == "embedding\n"
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
    return process.returncode, err


@pytest.mark.parametrize(
    "batches_first, kept, status", [(1, 16, "partial 41%"), (0, 0, "partial 0%")]
)
def test_ctrl_c_says_how_many_rows_were_kept_exits_130_and_list_says_partial(
    workspace, embedders, batches_first, kept, status
):
    """A real ``ptah inference build`` in another process (39 rows, committed 16 at a time), SIGINT
    while it embeds a batch: the rows of the batches committed before are kept, the sentence says
    so, and ``inference list`` never says current."""
    workspace.execute(
        "INSERT INTO articles VALUES (?, ?, ?, ?)",
        [(n, f"Article {n}", f"Body {n}.", "published") for n in range(11, 41)],
    )
    workspace.write_spec(
        filter="status = 'published'", generations={"docs": "model: test/stops\n    batch_size: 1"}
    )
    assert interrupt_build(workspace.spec_path, batches_first) == (
        130,
        f"interrupted: {kept} of 39 rows embedded, {kept} of them committed; run the same command to resume\n",
    )
    embedders["test/stops"] = DeterministicEmbedder(dimension=8)
    with workspace.project() as project:
        (listing,) = list_generations(project)
        assert (listing.status, listing.vectors, listing.rows) == (status, kept, 39)
        assert (
            build(project).embedded == 39 - kept
        )  # the same command resumes where the commits stopped
        (listing,) = list_generations(project)
        assert (listing.status, listing.vectors) == ("current", 39)


def test_an_interrupt_in_the_first_batch_keeps_nothing_and_says_so(workspace, embedders):
    class Refuses:
        dimension = 8

        def embed_documents(self, texts):
            raise KeyboardInterrupt

        embed_queries = embed_documents

    workspace.write_spec(generations={"docs": "model: test/stop"})
    embedders["test/stop"] = Refuses()
    with workspace.project() as project:
        with pytest.raises(BuildInterrupted) as info:
            build(project, batch_rows=4)
    assert (str(info.value), info.value.kept, info.value.total) == (
        "interrupted: 0 of 10 rows embedded, 0 of them committed; run the same command to resume",
        0,
        10,
    )
