"""GitHub Actions workflow annotations: an ``::error`` on the corpus line of each failed case.

``evaluate`` prints them (to stderr, so that ``--json`` on stdout stays one
document) when ``GITHUB_ACTIONS`` is ``true``; GitHub shows each on the
pull request's diff at ``file`` and ``line``. A failed gate that no case
explains (a drop gate) gets one annotation on the corpus file without a line;
an inconclusive one (the holes in the judgements decide it) a ``::warning``.

Escaping follows GitHub's rules for workflow commands: in the message, ``%``,
``\\r`` and ``\\n`` are written ``%25``, ``%0D`` and ``%0A``; in a property
(``file``, ``title``), ``:`` and ``,`` too (``%3A``, ``%2C``). Every other
control character is then made visible (:func:`ptah.core.visible.visible`),
so a hostile case id, query or key can never start a line of its own, and so
never a second command. At most :data:`MAX_ANNOTATIONS` are printed (GitHub
shows ten errors a step and fifty a job), then one line saying how many more.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from ptah.core.report import Report
from ptah.core.visible import abbreviated, visible
from ptah.render.cases import failed_cases, problems

MAX_ANNOTATIONS = 50
MAX_MESSAGE = 1000


def escape_data(text: str) -> str:
    """A workflow command's message: ``%``, CR and LF percent-encoded, other controls made
    visible."""
    return visible(text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def escape_property(text: str) -> str:
    """A workflow command's property value: :func:`escape_data`, and ``:`` and ``,``
    percent-encoded."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(kind: str, message: str, **properties: object) -> str:
    """One workflow command line: ``::KIND name=value,…::message`` (properties with a None value
    left out)."""
    given = ",".join(
        f"{name}={escape_property(str(value))}"
        for name, value in properties.items()
        if value is not None
    )
    return (
        f"::{kind}{' ' + given if given else ''}::{escape_data(abbreviated(message, MAX_MESSAGE))}"
    )


def failure_annotations(
    report: Report, corpus_file: str, lines: Mapping[str, int]
) -> Iterator[str]:
    """The ``::error`` lines of a report's failed cases and of its failed gates no case explains
    (module docs)."""
    found = []
    for run, case in failed_cases(report):
        title = f"ptah: case {case.id} failed ({run.name}, {run.channel})"
        message = f"{'; '.join(problems(case))}. Query: {case.query}"
        found.append(
            command("error", message, file=corpus_file, line=lines.get(case.id), title=title)
        )
    for gate in report.gates:
        if not gate.passed and gate.is_drop_gate:
            kind, what = (
                ("warning", "is inconclusive") if gate.inconclusive else ("error", "failed")
            )
            found.append(
                command(
                    kind,
                    gate.detail,
                    file=corpus_file,
                    title=f"ptah: gate {gate.name} {what} ({gate.generation})",
                )
            )
    yield from found[:MAX_ANNOTATIONS]
    if len(found) > MAX_ANNOTATIONS:
        yield command(
            "warning",
            f"{len(found) - MAX_ANNOTATIONS} more failures are not annotated; see the report",
            file=corpus_file,
        )
