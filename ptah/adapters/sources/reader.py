"""What ptah's own SQL readers (:mod:`~ptah.adapters.sources.sqlite`,
:mod:`~ptah.adapters.sources.postgres`) share: the check that a ``source.filter`` can stand inside
ptah's ``WHERE (…)`` (:func:`filter_problem`), and one read snapshot with key lookups
(:class:`OneSnapshot`)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Self

from ptah.adapters.sources.rows import lookup_identities, lookup_keys

if TYPE_CHECKING:
    from ptah.core.spec import SourceSpec

_NOT_IN_A_FILTER = re.compile("\x00|;|--|/\\*")


def filter_problem(text: str) -> str | None:
    """Why ``source.filter`` cannot be placed in ptah's ``WHERE (…)``, or None.

    A ``;`` could end ptah's statement and ``--`` or ``/*`` comment out the rest of it, so they are
    refused wherever they stand, quotes included. What holds the filter to reading is the reader:
    one statement per execute, in a read-only transaction (:mod:`ptah.adapters.sources.sqlite`,
    :mod:`~ptah.adapters.sources.postgres`).
    """
    found = _NOT_IN_A_FILTER.search(text)
    if found is None:
        return None
    shown = "the NUL character" if found.group() == "\x00" else f"the {found.group()}"
    return (
        f"{shown} at character {found.start() + 1} is not allowed in a filter, even inside quotes: it could end "
        "ptah's statement or comment out the rest of it; a filter is one boolean expression, such as "
        "status = 'published'"
    )


class OneSnapshot:
    """What both readers share: a connection (``_db``) holding one read transaction until
    :meth:`close`, and key lookups through the reader's ``_find(wanted, result)``, which marks each
    of ``wanted``'s components (by the key or identity asking) that a row has."""

    _db: Any = None
    source: SourceSpec

    def _find(self, wanted: dict[tuple[str, ...], str], result: dict[str, str]) -> None:
        raise NotImplementedError

    def lookup(self, keys: Iterable[str]) -> dict[str, str]:
        """For each key as the corpus spells it: ``"ok"``, ``"filtered"`` or ``"missing"``.

        ``ok``: a row has exactly this key and passes the filter; ``filtered``:
        rows have it and none passes; ``missing``: no row has it, or (with
        several key fields) the key does not split on U+001F into one component
        per key field, or a component cannot be stored in its column (in
        PostgreSQL, ``"0042"`` or ``"x"`` for an integer column). Matching is
        exact against the rendered key: ``"0042"`` does not match integer 42.
        """
        result, wanted = lookup_keys(keys, len(self.source.key_fields))
        self._find(wanted, result)
        return result

    def lookup_identities(self, identities: Iterable[str]) -> dict[str, str]:
        """:meth:`lookup` for row identities (each read back into its key components exactly)."""
        result, wanted = lookup_identities(identities, len(self.source.key_fields))
        self._find(wanted, result)
        return result

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        """End the read transaction and close the connection."""
        if self._db is not None:
            self._db.close()
            self._db = None
