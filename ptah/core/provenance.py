"""Where a baseline came from, against the run compared with it:
``baseline.comparisons[i].provenance``.

A baseline gates a run honestly only when the difference it measures is the
one you mean. Two differences are said in words, never silently:

* **another generation identity** -- the baseline's reference run measured
  other vectors (another model, settings, template or generation): expected
  when a new generation is held against the shipped one, a warning sign when
  the same generation's settings changed unnoticed;
* **another source snapshot** -- the same generation identity measured over
  other rows or texts (rows added, removed or edited since the baseline): the
  run's ``verification.fingerprint`` (SHA-256 over each row's identity and text
  digest, :func:`ptah.services.verify.verify_in`) differs from the
  baseline's. Judged only for the same identity (another template renders
  other texts) and when both reports record a fingerprint (older reports and
  external generations do not): ``same_source`` is null otherwise.

``provenance`` is ``{"same_identity", "same_source", "notes"}``; each note is a
sentence the terminal prints as ``note: …``.
"""

from __future__ import annotations

from ptah.core.compared import Provenance
from ptah.core.report import Run
from ptah.core.run_parts import RunGeneration


def provenance(run: Run, baseline_run: Run) -> Provenance:
    """How ``baseline_run`` (the baseline's reference run) differs in origin from ``run`` (see the
    module docs)."""
    ours, theirs = run.generation, baseline_run.generation
    same_identity = ours.identity == theirs.identity
    now, then = _fingerprint(ours), _fingerprint(theirs)
    same_source = now == then if same_identity and now is not None and then is not None else None
    notes = []
    if not same_identity:
        notes.append(
            f"the baseline measured generation {theirs.name} ({_short(theirs.identity)}), another "
            f"generation identity than {ours.name} ({_short(ours.identity)}): its deltas compare "
            "other vectors (another model, settings or text)"
        )
    if same_source is False:
        notes.append(
            f"the baseline measured generation {ours.name} on another snapshot of the source "
            f"({theirs.rows} rows then, {ours.rows} now; rows were added, removed or edited since)"
        )
    return Provenance(same_identity, same_source, tuple(notes))


def _fingerprint(generation: RunGeneration) -> str | None:
    """The text fingerprint the generation was verified with (None: not recorded)."""
    verification = generation.verification
    return None if verification is None else verification.fingerprint


def _short(identity: object) -> str:
    return f"{identity[:19]}…" if isinstance(identity, str) else "unknown identity"
