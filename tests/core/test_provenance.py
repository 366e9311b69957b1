"""Where a baseline came from: another generation identity, another source snapshot
(ptah.core.provenance)."""

from __future__ import annotations

import pytest

from ptah.core.baseline import compare
from ptah.core.parts import RunGeneration, Search
from ptah.core.provenance import provenance
from ptah.core.report import Run


def run(name: str, identity: str, rows: int, fingerprint: str | None) -> Run:
    verification = {"ok": True, "allow_stale": False} | (
        {} if fingerprint is None else {"fingerprint": fingerprint}
    )
    return Run(
        generation=RunGeneration.from_dict(
            {"name": name, "identity": identity, "rows": rows, "verification": verification}
        ),
        search=Search.from_dict({"channel": "vector"}),
        cases=(),
        means={},
        required={},
        forbidden={},
        ties={},
    )


A = "sha256:" + "a" * 64
B = "sha256:" + "b" * 64


@pytest.mark.parametrize(
    "now, then, said",
    [
        pytest.param(
            run("docs", A, 10, "sha256:1"),
            run("docs", A, 10, "sha256:1"),
            {"same_identity": True, "same_source": True, "notes": []},
            id="same-generation-same-snapshot",
        ),
        pytest.param(
            run("docs", A, 12, "sha256:2"),
            run("docs", A, 10, "sha256:1"),
            {
                "same_identity": True,
                "same_source": False,
                "notes": [
                    "the baseline measured generation docs on another snapshot of the source (10 rows then, 12 now; "
                    "rows were added, removed or edited since)"
                ],
            },
            id="another-snapshot-with-both-row-counts",
        ),
        pytest.param(
            run("new", B, 10, "sha256:2"),
            run("docs", A, 10, "sha256:1"),
            {
                "same_identity": False,
                "same_source": None,
                "notes": [
                    "the baseline measured generation docs (sha256:aaaaaaaaaaaa…), another generation identity than new "
                    "(sha256:bbbbbbbbbbbb…): its deltas compare other vectors (another model, settings or text)"
                ],
            },
            id="another-identity-leaves-the-source-unjudged",
        ),
        pytest.param(
            run("docs", A, 12, "sha256:2"),
            run("docs", A, 10, None),
            {"same_identity": True, "same_source": None, "notes": []},
            id="no-fingerprint-leaves-the-source-unjudged",
        ),
    ],
)
def test_provenance_says_where_the_baseline_came_from(now, then, said):
    assert provenance(now, then).to_dict() == said


def test_compare_carries_the_provenance():
    compared = compare(run("docs", A, 12, "sha256:2"), run("docs", A, 10, "sha256:1"))
    assert compared.provenance is not None and compared.provenance.same_source is False
