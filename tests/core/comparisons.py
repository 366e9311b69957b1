"""Baseline comparisons built by hand for the drop gates' tests: only what a gate reads is given."""

from __future__ import annotations

from collections.abc import Mapping

from ptah.core.compared import BaselineComparison, BaselineMean, MeasureComparison, SignFlipResult


def against(
    means: Mapping[str, tuple[float | None, float | None]],
    significance: Mapping[str, MeasureComparison] | None = None,
) -> BaselineComparison:
    """A comparison with the baseline whose means are ``means`` (report key -> (baseline,
    current)) and whose paired tests are ``significance``."""
    return BaselineComparison(
        generation="base",
        identity=None,
        provenance=None,
        aggregates={
            key: BaselineMean(before, now, None if before is None or now is None else now - before)
            for key, (before, now) in means.items()
        },
        cases_changed=(),
        significance=significance,
    )


def paired(finding: str, p_value: float) -> MeasureComparison:
    """A measure's paired test that finds ``finding`` at ``p_value`` (exact); its counts are not
    read."""
    return MeasureComparison(
        reference=None,
        candidate=None,
        delta=None,
        cases=0,
        wins=0,
        ties=0,
        losses=0,
        undefined=0,
        interval=None,
        test=SignFlipResult(p_value, "exact", 8, 256),
        finding=finding,
    )
