"""A report checked against itself before it is trusted as a baseline.

A baseline's means decide the drop gates, so a mean edited by hand (or a bug) could switch a gate
off. :func:`check_consistency` recomputes what the report can and refuses (``ReportError``, exit 2,
naming the field as a JSON path such as ``runs[0].aggregates.recall.value``) a report where

* a case's measure is neither null nor within [0, 1];
* a mean disagrees with its cases: ``denominator`` (cases defining it), ``undefined`` (cases
  leaving it N/A), ``numerator`` (their sum) or ``value`` (their mean; null over 0), within
  :data:`TOLERANCE` relative or absolute; likewise ``high`` and ``high_numerator`` against the
  cases' ``high``, and ``aggregates.judged`` against their ``judged`` (``ptah-report@2``);
* a count is not a non-negative integer at most the run's cases, or ``forbidden.rate`` is not
  leaking / cases;
* a case id appears twice in a run, or the corpus digest is not ``sha256:`` and 64 lowercase hex
  digits.

The shape is checked first, against the JSON schema, by ``ptah.adapters.report_json``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TypeGuard

from ptah.core.errors import ReportError
from ptah.core.measures import DEFAULT_MEASURES, Measure

TOLERANCE = 1e-9
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


def measure_keys(aggregates: Mapping) -> list[str]:
    """The report keys of the measures a run carries: the defaults, then any fixed-depth ones
    (``MAP@10``)."""
    keys = [m.key for m in DEFAULT_MEASURES]
    for key in aggregates:
        if key not in keys and "@" in key:
            try:
                if Measure.parse(key).key == key:
                    keys.append(key)
            except ValueError:
                continue
    return keys


def is_measure(value: object) -> TypeGuard[float | None]:
    """A measure's type as a report holds it: a finite number, or null for N/A (never a boolean)."""
    if value is None:
        return True
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _not_a_count(value: object) -> str:
    return (
        "is missing"
        if value is None
        else f"is {value!r}, not a non-negative integer"
        if is_measure(value)
        else "is not a non-negative integer"
    )


def _close(recorded: float, recomputed: float) -> bool:
    return math.isclose(recorded, recomputed, rel_tol=TOLERANCE, abs_tol=TOLERANCE)


def _damaged(path: str, field: str, what: str) -> ReportError:
    return ReportError(f"{path}: {field} {what}; the report is damaged")


def check_consistency(document: Mapping, path: str) -> None:
    """Refuse a report whose numbers disagree with each other or leave their range (module docs)."""
    if not DIGEST.fullmatch(document["corpus"]["digest"]):
        raise _damaged(path, "corpus.digest", "is not sha256: and 64 lowercase hexadecimal digits")
    for index, run in enumerate(document["runs"]):
        _check_run(run, f"runs[{index}]", path)


def _check_run(run: Mapping, where: str, path: str) -> None:
    cases: Sequence[Mapping] = run["cases"]
    aggregates: Mapping = run["aggregates"]
    seen: dict[str, int] = {}
    for number, case in enumerate(cases):
        if case["id"] in seen:
            raise _damaged(
                path, f"{where}.cases[{number}].id", f"repeats {where}.cases[{seen[case['id']]}].id"
            )
        seen[case["id"]] = number
    for name in measure_keys(aggregates):
        for number, case in enumerate(cases):
            if name not in case["metrics"]:
                raise _damaged(
                    path,
                    f"{where}.cases[{number}].metrics.{name}",
                    "is missing, but the run has a mean of it",
                )
        _check_mean(
            aggregates[name],
            [case["metrics"][name] for case in cases],
            f"{where}.aggregates.{name}",
            lambda n: f"{where}.cases[{n}].metrics.{name}",  # noqa: B023
            path,
        )
        _check_high(aggregates[name], cases, name, where, path)
    if "judged" in aggregates:
        _check_mean(
            aggregates["judged"],
            [case.get("judged") for case in cases],
            f"{where}.aggregates.judged",
            lambda n: f"{where}.cases[{n}].judged",
            path,
        )
    _check_counts(aggregates, len(cases), where, path)
    if "ann" in aggregates:
        _check_ann(aggregates["ann"], cases, where, path)


def _check_mean(
    mean: object,
    values: Sequence[object],
    field: str,
    case_field: Callable[[int], str],
    path: str,
    value_part: str = "value",
    numerator_part: str = "numerator",
) -> None:
    """``mean`` (a report's MEAN) against the per-case ``values`` it was computed from (its
    ``value_part`` and ``numerator_part``: ``high`` and ``high_numerator`` for the high bounds)."""
    defined: list[float] = []
    for number, value in enumerate(values):
        if not is_measure(value):
            raise _damaged(path, case_field(number), "is not a number or null")
        if value is not None and not 0 <= value <= 1:
            raise _damaged(path, case_field(number), f"is {value!r}, outside [0, 1]")
        if value is not None:
            defined.append(value)
    if not isinstance(mean, Mapping):
        raise _damaged(path, field, "is missing or not an object")
    value, numerator = mean.get(value_part), mean.get(numerator_part)
    if not is_measure(value):
        raise _damaged(path, f"{field}.{value_part}", "is not a number or null")
    if value is not None and not 0 <= value <= 1:
        raise _damaged(path, f"{field}.{value_part}", f"is {value!r}, outside [0, 1]")
    for part in ("denominator", "undefined"):
        if not _is_count(mean.get(part)):
            raise _damaged(path, f"{field}.{part}", _not_a_count(mean.get(part)))
    if not is_measure(numerator) or numerator is None:
        raise _damaged(path, f"{field}.{numerator_part}", "is missing or not a number")
    if mean["denominator"] != len(defined):
        raise _damaged(
            path,
            f"{field}.denominator",
            f"is {mean['denominator']}, but {len(defined)} of the run's {len(values)} cases define the measure",
        )
    if mean["undefined"] != len(values) - len(defined):
        raise _damaged(
            path,
            f"{field}.undefined",
            f"is {mean['undefined']}, but {len(values) - len(defined)} of the run's {len(values)} cases leave it N/A",
        )
    total = math.fsum(defined)
    if not _close(numerator, total):
        raise _damaged(
            path,
            f"{field}.{numerator_part}",
            f"is {numerator!r}, but the cases' values sum to {total!r}",
        )
    expected = total / len(defined) if defined else None
    if expected is None and value is not None:
        raise _damaged(
            path,
            f"{field}.{value_part}",
            f"is {value!r}, but no case defines the measure, so it must be null",
        )
    if expected is not None and (value is None or not _close(value, expected)):
        raise _damaged(
            path,
            f"{field}.{value_part}",
            f"is {value!r}, but the mean of the cases' values is {expected!r}",
        )


def _check_high(mean: Mapping, cases: Sequence[Mapping], name: str, where: str, path: str) -> None:
    """A mean's high bound against its cases' (``ptah-report@2``): the same sums over the same
    cases."""
    if "high_numerator" not in mean:
        return
    highs = []
    for number, case in enumerate(cases):
        high = case.get("high")
        if not isinstance(high, Mapping) or name not in high:
            raise _damaged(
                path,
                f"{where}.cases[{number}].high.{name}",
                "is missing, but the run has a high bound of it",
            )
        if (high[name] is None) != (case["metrics"][name] is None):
            raise _damaged(
                path,
                f"{where}.cases[{number}].high.{name}",
                "is N/A where the value is not, or the other way",
            )
        highs.append(high[name])
    _check_mean(
        mean,
        highs,
        f"{where}.aggregates.{name}",
        lambda n: f"{where}.cases[{n}].high.{name}",
        path,
        "high",
        "high_numerator",
    )


def _check_counts(aggregates: Mapping, cases: int, where: str, path: str) -> None:
    if aggregates.get("cases") != cases or not _is_count(aggregates.get("cases")):
        raise _damaged(
            path, f"{where}.aggregates.cases", f"is not {cases}, the number of the run's cases"
        )
    bounded = {
        "required": ("cases", "failed"),
        "forbidden": ("cases", "leaking"),
        "ties": ("cases_flagged",),
    }
    unbounded = {"required": ("keys_missed",), "forbidden": ("hits",)}
    for group in ("required", "forbidden", "ties"):
        counts = aggregates.get(group)
        if not isinstance(counts, Mapping):
            raise _damaged(path, f"{where}.aggregates.{group}", "is missing or not an object")
        for part in bounded[group] + unbounded.get(group, ()):
            if not _is_count(counts.get(part)):
                raise _damaged(
                    path, f"{where}.aggregates.{group}.{part}", _not_a_count(counts.get(part))
                )
            if part in bounded[group] and counts[part] > cases:
                raise _damaged(
                    path,
                    f"{where}.aggregates.{group}.{part}",
                    f"is {counts[part]}, more than the run's {cases} cases",
                )
    forbidden = aggregates["forbidden"]
    if forbidden["leaking"] > forbidden["cases"]:
        raise _damaged(
            path, f"{where}.aggregates.forbidden.leaking", "is more than forbidden.cases"
        )
    if aggregates["required"]["failed"] > aggregates["required"]["cases"]:
        raise _damaged(path, f"{where}.aggregates.required.failed", "is more than required.cases")
    rate, expected = (
        forbidden.get("rate"),
        (forbidden["leaking"] / forbidden["cases"]) if forbidden["cases"] else None,
    )
    if (
        not is_measure(rate)
        or (rate is None) != (expected is None)
        or (expected is not None and rate is not None and not _close(rate, expected))
    ):
        raise _damaged(
            path, f"{where}.aggregates.forbidden.rate", f"is not leaking / cases ({expected!r})"
        )


def _check_ann(ann: object, cases: Sequence[Mapping], where: str, path: str) -> None:
    """``--search both``: the ANN recall and the exact search's means against each case's
    ``ann``."""
    if not isinstance(ann, Mapping) or not isinstance(ann.get("exact"), Mapping):
        raise _damaged(path, f"{where}.aggregates.ann", "is not an object with recall and exact")
    per_case = []
    for number, case in enumerate(cases):
        entry = case.get("ann")
        if not isinstance(entry, Mapping) or not isinstance(entry.get("exact"), Mapping):
            raise _damaged(
                path,
                f"{where}.cases[{number}].ann",
                "is missing or lacks recall and exact, but the run has aggregates.ann",
            )
        per_case.append(entry)
    _check_mean(
        ann.get("recall"),
        [e.get("recall") for e in per_case],
        f"{where}.aggregates.ann.recall",
        lambda n: f"{where}.cases[{n}].ann.recall",
        path,
    )
    for name in measure_keys(ann["exact"]):
        _check_mean(
            ann["exact"].get(name),
            [e["exact"].get(name) for e in per_case],
            f"{where}.aggregates.ann.exact.{name}",
            lambda n: f"{where}.cases[{n}].ann.exact.{name}",  # noqa: B023
            path,
        )
