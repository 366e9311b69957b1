"""How far a model judge can be trusted on this corpus, measured on the holes a person judged from a
random sample (docs/judges.md, "Calibration on the person's sample").

* A grade above 0 is *relevant*, 0 *not relevant*, for person and model alike; the **agreement
  table** counts the sampled holes both judged: ``both``, ``model_only``, ``person_only``,
  ``neither``.
* **Cohen's kappa** = (p_o - p_e) / (1 - p_e), p_o the share of agreement, p_e the agreement the
  margins expect; None when p_e = 1 (each side gave one answer to everything).
* **TPR** both / (both + person_only) and **TNR** neither / (neither + model_only), each with its
  exact two-sided 95% (Clopper-Pearson) interval; FNR = 1 - TPR, its one-sided 95% upper bound 1
  minus TPR's one-sided lower bound (FPR likewise from TNR).
* The model **may move U** (a run's plausible relevant holes) only when at least
  :data:`MIN_SAMPLED` sampled holes were judged by both and kappa reaches the threshold (default
  :data:`MIN_KAPPA`, ``--min-kappa``). Then ``U = R + upper_relevant(Q + n, n, f) + X``: R the
  holes the model called relevant, Q those it called not relevant, X those it did not judge (R and
  X counted relevant), n the sampled holes it called not relevant and f how many of those the
  person found relevant -- a uniform sample of its rejections, so the bound is on its false
  omission rate, which the sample measures directly (both rates are reported).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ptah.core.estimate import FLOAT_NOISE, upper_relevant
from ptah.core.gate_parts import JudgeAccount

MIN_KAPPA = 0.6
MIN_SAMPLED = 20
CONFIDENCE = 0.95


def upper_rate(x: int, n: int, alpha: float = 1 - CONFIDENCE) -> float:
    """The exact one-sided upper confidence bound (level 1 - alpha) on a binomial rate from x of n:
    the p at which P(X <= x) = alpha for X ~ Binomial(n, p), which is the 1 - alpha quantile of
    Beta(x + 1, n - x) (Clopper and Pearson, 1934); 1 when x is n."""
    if not 0 <= x <= n or n == 0:
        raise ValueError(f"{x} of {n} is not a rate")
    if x == n:
        return 1.0
    from scipy.special import betaincinv  # here: scipy's import is not paid where this is not used

    return float(betaincinv(x + 1, n - x, 1 - alpha))


def lower_rate(x: int, n: int, alpha: float = 1 - CONFIDENCE) -> float:
    """The exact one-sided lower confidence bound (level 1 - alpha) on a binomial rate from x of
    n."""
    return 1.0 - upper_rate(n - x, n, alpha)


def interval(x: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """The exact two-sided (Clopper-Pearson) interval of a rate from x of n; None when n is 0."""
    if n == 0:
        return None
    half = (1 - confidence) / 2
    return (0.0 if x == 0 else lower_rate(x, n, half)), (1.0 if x == n else upper_rate(x, n, half))


@dataclass(frozen=True)
class Agreement:
    """The sampled holes both a person and the model judged, as a 2 x 2 table (relevant = grade
    above 0)."""

    both: int
    model_only: int
    person_only: int
    neither: int

    @classmethod
    def of(cls, pairs: Iterable[tuple[float, float]]) -> Agreement:
        """The table of ``(person grade, model grade)`` pairs."""
        counts = [0, 0, 0, 0]
        for person, model in pairs:
            counts[(0 if person > 0 else 2) + (0 if (person > 0) == (model > 0) else 1)] += 1
        return cls(both=counts[0], person_only=counts[1], model_only=counts[3], neither=counts[2])

    @property
    def n(self) -> int:
        return self.both + self.model_only + self.person_only + self.neither

    @property
    def kappa(self) -> float | None:
        n = self.n
        if n == 0:
            return None
        observed = (self.both + self.neither) / n
        expected = (
            (
                (self.both + self.person_only) * (self.both + self.model_only)
                + (self.neither + self.model_only) * (self.neither + self.person_only)
            )
            / n
            / n
        )
        return None if expected >= 1 else (observed - expected) / (1 - expected)

    @property
    def tpr(self) -> float | None:
        relevant = self.both + self.person_only
        return self.both / relevant if relevant else None

    @property
    def tnr(self) -> float | None:
        irrelevant = self.neither + self.model_only
        return self.neither / irrelevant if irrelevant else None

    def fnr_upper(self) -> float | None:
        """The exact one-sided 95% upper bound on the share of relevant holes the model calls not
        relevant."""
        relevant = self.both + self.person_only
        return upper_rate(self.person_only, relevant) if relevant else None

    def fpr_upper(self) -> float | None:
        """The exact one-sided 95% upper bound on the share of not-relevant holes the model calls
        relevant."""
        irrelevant = self.neither + self.model_only
        return upper_rate(self.model_only, irrelevant) if irrelevant else None

    def trusted(self, min_kappa: float = MIN_KAPPA) -> str | None:
        """None when the model may move U; otherwise why not, in a few words."""
        if self.n < MIN_SAMPLED:
            return f"only {self.n} sampled holes judged by both (at least {MIN_SAMPLED} are needed)"
        kappa = self.kappa
        if kappa is None:
            return "kappa is undefined (the person and the model each gave one answer to every sampled hole)"
        if kappa < min_kappa - FLOAT_NOISE:
            return f"kappa {kappa:.3f} is below {min_kappa:g}"
        return None


def plausible_with_model(
    called_relevant: int, called_not: int, unjudged: int, agreement: Agreement
) -> int:
    """U of a run's holes when the model may move it (see the module docs): ``called_relevant``,
    ``called_not`` and ``unjudged`` are the run's holes now by the model's answer (unjudged: it gave
    none)."""
    rejected_sampled = agreement.person_only + agreement.neither
    return (
        called_relevant
        + unjudged
        + upper_relevant(called_not + rejected_sampled, rejected_sampled, agreement.person_only)
    )


@dataclass(frozen=True)
class ModelJudge:
    """What one model judge brings to a run's gates: its agreement with the person's sample the
    run's U uses, its grades of the run's holes now (``(case id, key) -> grade``, only those pinned
    to the row's judging text as it is now) and why it may not move U (None: it may)."""

    by: str
    agreement: Agreement
    grades: Mapping[tuple[str, str], float]
    untrusted: str | None
    cost: Mapping[str, float] | None = (
        None  # the record's usage of the judge: requests, tokens, refused...
    )

    @property
    def name(self) -> str:
        """The judge's name in the spec: ``model:NAME@IDENTITY``'s NAME."""
        return self.by.removeprefix("model:").split("@", 1)[0]

    def plausible(self, holes: Iterable[tuple[str, str]]) -> int:
        """U of ``holes`` (``(case id, key)`` pairs) by :func:`plausible_with_model`."""
        tally = [0, 0, 0]  # called relevant, called not relevant, not judged
        for pair in holes:
            grade = self.grades.get(pair)
            tally[2 if grade is None else 0 if grade > 0 else 1] += 1
        return plausible_with_model(tally[0], tally[1], tally[2], self.agreement)

    def entry(self, holes: Sequence[tuple[str, str]], without: int) -> JudgeAccount:
        """The report's account of this judge for a gate whose holes are ``holes`` and whose U is
        ``without`` when no model is used: its calibration, how many of the holes it graded, its U
        (None when it may not move U) and how far that moved U."""
        plausible = None if self.untrusted is not None else min(len(holes), self.plausible(holes))
        table = self.agreement
        tpr = interval(table.both, table.both + table.person_only)
        tnr = interval(table.neither, table.neither + table.model_only)
        return JudgeAccount(
            by=self.by,
            name=self.name,
            graded=sum(1 for pair in holes if pair in self.grades),
            both=table.both,
            model_only=table.model_only,
            person_only=table.person_only,
            neither=table.neither,
            sampled=table.n,
            kappa=table.kappa,
            tpr=table.tpr,
            tpr_interval=None if tpr is None else tuple(tpr),
            tnr=table.tnr,
            tnr_interval=None if tnr is None else tuple(tnr),
            fnr_upper=table.fnr_upper(),
            fpr_upper=table.fpr_upper(),
            used=self.untrusted is None,
            why_not=self.untrusted,
            plausible_relevant=plausible,
            moved=None if plausible is None else plausible - without,
            cost=None
            if self.cost is None
            else {name: int(count) for name, count in self.cost.items()},
        )
