"""Where a baseline came from, against the run compared with it
(``baseline.comparisons[i].provenance``), and the two identities the store keeps for each row.

:func:`provenance` says two differences in words (``{"same_identity", "same_source", "notes"}``,
each note a sentence the terminal prints as ``note: …``): **another generation identity** (the
baseline's reference run measured other vectors) and **another source snapshot** (the same
identity over other rows or texts: the runs' ``verification.fingerprint``, SHA-256 over each row's
identity and text digest, differ). ``same_source`` is null for another identity or when either
report lacks a fingerprint (older reports, external generations).

A row's identities are stored, compared by verify and build, and shown only as opaque strings, so
their formats must not drift: :func:`row_identity` (length-prefixed key components, so no
character can make two keys read alike) and :func:`text_digest` (of the exact text embedded). A
source streams each row's :class:`RowDigest` for verification; :func:`identity_components` reads
an identity back.
"""

from __future__ import annotations

import hashlib
from typing import NamedTuple

from ptah.core.compared import Provenance
from ptah.core.parts import RunGeneration
from ptah.core.report import Run


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


class RowDigest(NamedTuple):
    """One source row as verification reads it: its key, its row identity and its text's
    :func:`text_digest`."""

    key: str
    identity: str
    digest: str


def row_identity(components: list[str] | tuple[str, ...]) -> str:
    """``len(c):c`` for each key component ``c``, concatenated: ``("acme1", "2")`` reads
    ``5:acme11:2``.

    Lengths count Unicode code points, written in decimal without padding.
    """
    return "".join(f"{len(c)}:{c}" for c in components)


def text_digest(text: str) -> str:
    """The lowercase hex SHA-256 (64 characters, no prefix) of ``text`` encoded as UTF-8."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def identity_components(identity: str) -> tuple[str, ...] | None:
    """The key components :func:`row_identity` wrote into ``identity``; None when it is not one's
    spelling."""
    components: list[str] = []
    start = 0
    while start < len(identity):
        colon = identity.find(":", start)
        length = identity[start:colon]
        if colon < 0 or not length.isascii() or not length.isdigit():
            return None
        end = colon + 1 + int(length)
        if end > len(identity):
            return None
        components.append(identity[colon + 1 : end])
        start = end
    return tuple(components)
