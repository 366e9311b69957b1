"""The report section ``retriever``: an outside retriever that answered otherwise than the
baseline's run of the same name.

A live service can change between two evaluations (a re-index, a new
model, a deploy) while ptah's own table did not; the verdict is then the
service's new answers, and the report says so -- never silently: the
section lists each run whose rankings' digest differs from the baseline's,
with the cases whose top k changed, and a gate that passes (the answers
are not a failure in themselves) tells it on the terminal, in JUnit and in
Markdown.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ptah import Gate

RETRIEVER = "retriever"


@dataclass(frozen=True)
class Changed:
    """One run the retriever answered otherwise: its name, both digests, the cases changed."""

    run: str
    before: str
    now: str
    cases: tuple[str, ...]

    def sentence(self) -> str:
        shown = ", ".join(self.cases[:3]) + (" …" if len(self.cases) > 3 else "")
        return (
            f"the retriever answered otherwise than the baseline's run ({self.before[:19]}… then, "
            f"{self.now[:19]}… now): {len(self.cases)} cases ranked otherwise in their top k"
            + (f" ({shown})" if self.cases else "")
        )


@dataclass(frozen=True)
class Answers:
    changed: tuple[Changed, ...]

    def to_dict(self) -> dict:
        return {
            "changed": [
                {"run": c.run, "before": c.before, "now": c.now, "cases": list(c.cases)}
                for c in self.changed
            ]
        }


class AnswersSection:
    name = RETRIEVER

    def compute(self, context) -> Answers | None:
        if context.baseline is None:
            return None
        before = {run.name: run for run in context.baseline.runs}
        changed = []
        for run in context.runs:
            old = before.get(run.name)
            if run.search.channel != RETRIEVER or old is None:
                continue
            if old.search.channel != RETRIEVER:
                continue
            if old.generation.identity == run.generation.identity:
                continue
            top = {case.id: case.keys for case in old.cases}
            cases = tuple(case.id for case in run.cases if top.get(case.id) != case.keys)
            changed.append(
                Changed(run.name, old.generation.identity, run.generation.identity, cases)
            )
        return Answers(tuple(changed)) if changed else None

    def gates(self, context) -> Sequence[Gate]:
        found = context.results.get(RETRIEVER)
        if found is None:
            return ()
        return tuple(Gate("retriever-answers", c.run, True, c.sentence()) for c in found.changed)
