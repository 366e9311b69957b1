"""Where a baseline came from: another generation identity, another source snapshot (ptah.core.provenance)."""

from __future__ import annotations

from ptah.core.baseline import compare
from ptah.core.provenance import provenance
from ptah.core.report import Run


def run(name: str, identity: str, rows: int, fingerprint: str | None) -> Run:
    verification = {"ok": True, "allow_stale": False} | ({} if fingerprint is None else {"fingerprint": fingerprint})
    return Run(generation={"name": name, "identity": identity, "rows": rows, "verification": verification},
               search={"channel": "vector"}, cases=(), means={}, required={}, forbidden={}, ties={})


A = "sha256:" + "a" * 64
B = "sha256:" + "b" * 64


def test_the_same_generation_on_the_same_snapshot_says_nothing():
    assert provenance(run("docs", A, 10, "sha256:1"), run("docs", A, 10, "sha256:1")) == {
        "same_identity": True, "same_source": True, "notes": []}


def test_the_same_generation_on_another_snapshot_says_so_with_both_row_counts():
    assert provenance(run("docs", A, 12, "sha256:2"), run("docs", A, 10, "sha256:1")) == {
        "same_identity": True, "same_source": False, "notes": [
            "the baseline measured generation docs on another snapshot of the source (10 rows then, 12 now; "
            "rows were added, removed or edited since)"]}


def test_another_identity_is_said_and_the_source_is_not_judged():
    assert provenance(run("new", B, 10, "sha256:2"), run("docs", A, 10, "sha256:1")) == {
        "same_identity": False, "same_source": None, "notes": [
            "the baseline measured generation docs (sha256:aaaaaaaaaaaa…), another generation identity than new "
            "(sha256:bbbbbbbbbbbb…): its deltas compare other vectors (another model, settings or text)"]}


def test_a_baseline_without_a_fingerprint_leaves_the_source_unjudged():
    assert provenance(run("docs", A, 12, "sha256:2"), run("docs", A, 10, None)) == {
        "same_identity": True, "same_source": None, "notes": []}


def test_compare_carries_the_provenance():
    assert compare(run("docs", A, 12, "sha256:2"), run("docs", A, 10, "sha256:1"))["provenance"]["same_source"] is False
