"""``ptah inference prune``: remove superseded generations from the store.

A stored generation is *superseded* when no generation the specification
declares has its identity any more (its settings or model changed, or it was
removed from the spec): ``inference list`` shows it as ``superseded``. Prune
removes each one -- its vectors, its cached query vectors and its record --
holding its build lock, one generation per transaction, and keeps:

* every generation the specification declares (its current identity);
* every stored generation named by ``keep``: a display name as ``inference
  list`` shows it (every identity stored under that name is kept) or an
  identity, whole or its first 19 characters or more (``sha256:`` and 12 hex
  digits, what ``list`` prints).

A ``keep`` that names nothing stored or declared is refused (exit 2) before
anything is removed: a misspelt name must never let prune remove what it was
meant to keep. So is a specification whose generations' identities cannot be
computed (a model that is unavailable, exit 3): prune cannot tell which stored
generation is still current. ``dry_run`` says what would go and removes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from ptah.core.errors import InputError, ModelUnavailable, Said
from ptah.services.project import Opened

_SHORT_IDENTITY = len("sha256:") + 12


@dataclass(frozen=True)
class PrunedGeneration:
    """A stored generation and what prune did with it (``why`` it was kept, or None when
    removed)."""

    identity: str
    name: str
    model: str
    vectors: int
    created_at: str
    updated_at: str
    kept_because: str | None

    def as_dict(self) -> dict:
        return dict(vars(self))


@dataclass(frozen=True)
class PruneResult:
    dry_run: bool
    removed: tuple[PrunedGeneration, ...]
    kept: tuple[PrunedGeneration, ...]

    @property
    def vectors_removed(self) -> int:
        return sum(generation.vectors for generation in self.removed)

    def as_dict(self) -> dict:
        return {
            "dry_run": self.dry_run,
            "removed": [generation.as_dict() for generation in self.removed],
            "kept": [generation.as_dict() for generation in self.kept],
            "vectors_removed": self.vectors_removed,
        }


def prune(project: Opened, keep: Sequence[str] = (), *, dry_run: bool = False) -> PruneResult:
    """Remove every stored generation that is neither declared nor kept (see the module)."""
    declared = _declared(project)
    store = project.store()
    if store is None:  # nothing was ever built: nothing to prune, and no store is created for it
        _check_keep(keep, [], declared)
        return PruneResult(dry_run, (), ())
    with store.snapshot() as snapshot:
        stored = [
            (record, snapshot.vector_count(record.identity)) for record in snapshot.generations()
        ]
    _check_keep(keep, [record for record, _ in stored], declared)
    removed: list[PrunedGeneration] = []
    kept: list[PrunedGeneration] = []
    for record, vectors in stored:
        why = _kept_because(record, declared, keep)
        entry = PrunedGeneration(
            record.identity,
            record.name,
            record.model,
            vectors,
            record.created_at,
            record.updated_at,
            why,
        )
        if why is not None:
            kept.append(entry)
            continue
        if not dry_run:
            with store.build_lock(record.identity, record.name):
                entry = replace(entry, vectors=store.drop_generation(record.identity))
        removed.append(entry)
    return PruneResult(dry_run, tuple(removed), tuple(kept))


def _declared(project: Opened) -> dict[str, str]:
    """``identity -> name`` of every declared generation; ModelUnavailable (exit 3) when one cannot
    be known."""
    declared: dict[str, str] = {}
    for name in project.spec.generations:
        try:
            declared[project.generation(name).identity.identity] = name
        except ModelUnavailable as exc:
            raise ModelUnavailable(
                f"cannot tell which stored generations are current: the identity of generation {name} needs its "
                f"model ({exc.message}); nothing was removed."
            ) from None
    return declared


def _matches(record, wanted: str) -> bool:
    if wanted.startswith("sha256:") and len(wanted) >= _SHORT_IDENTITY:
        return record.identity.startswith(wanted)
    return record.name == wanted


def _check_keep(keep: Sequence[str], records: list, declared: dict[str, str]) -> None:
    for wanted in keep:
        if wanted.startswith("sha256:") and len(wanted) < _SHORT_IDENTITY:
            raise _refused_keep(
                wanted,
                lambda words: (
                    f"an identity needs at least its first {_SHORT_IDENTITY} characters (as "
                    f"{words.listing()} shows them)."
                ),
            )
        if wanted not in declared.values() and not any(
            _matches(record, wanted) for record in records
        ):
            raise _refused_keep(
                wanted,
                lambda words: (
                    "no stored or declared generation has that name or identity (see "
                    f"{words.listing()}); nothing was removed."
                ),
            )


def _refused_keep(wanted: str, why: Said) -> InputError:
    """``keep``'s ``wanted`` refused (exit 2): ``why``, after the option as an interface names it."""
    return InputError(lambda words: f"{words.option('keep', wanted)}: {why(words)}")


def _kept_because(record, declared: dict[str, str], keep: Sequence[str]) -> str | None:
    if record.identity in declared:
        return f"declared as {declared[record.identity]}"
    named = [wanted for wanted in keep if _matches(record, wanted)]
    return f"--keep {named[0]}" if named else None
