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

from collections.abc import Mapping

from ptah.core.baseline_comparison import Provenance
from ptah.core.report import Run


def provenance(run: Run, baseline_run: Run) -> Provenance:
    """How ``baseline_run`` (the baseline's reference run) differs in origin from ``run`` (see the
    module docs)."""
    ours, theirs = run.generation, baseline_run.generation
    same_identity = ours.get("identity") == theirs.get("identity")
    now, then = _fingerprint(ours), _fingerprint(theirs)
    same_source = now == then if same_identity and now is not None and then is not None else None
    notes = []
    if not same_identity:
        notes.append(
            f"the baseline measured generation {theirs.get('name')} ({_short(theirs.get('identity'))}), another "
            f"generation identity than {ours.get('name')} ({_short(ours.get('identity'))}): its deltas compare "
            "other vectors (another model, settings or text)"
        )
    if same_source is False:
        notes.append(
            f"the baseline measured generation {ours.get('name')} on another snapshot of the source "
            f"({theirs.get('rows')} rows then, {ours.get('rows')} now; rows were added, removed or edited since)"
        )
    return Provenance(same_identity, same_source, tuple(notes))


def _fingerprint(generation: Mapping) -> str | None:
    verification = generation.get("verification") or {}
    found = verification.get("fingerprint")
    return found if isinstance(found, str) else None


def _short(identity: object) -> str:
    return f"{identity[:19]}…" if isinstance(identity, str) else "unknown identity"
