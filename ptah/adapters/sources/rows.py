"""Turning a source's raw rows into :class:`SourceRow` values: the part every source reader shares.

A source reader selects the key columns, then the template's columns, in key
order; :func:`source_rows` renders each row's key (as the corpus spells it),
its length-prefixed identity and its text, exactly the same way whatever the
database, and refuses what cannot be read as the specification says.
"""

from __future__ import annotations

from typing import Iterable, Iterator, Sequence

from ptah.core.corpus import COMPOSITE_KEY_SEPARATOR, join_key
from ptah.core.errors import SourceUnavailable
from ptah.core.identity import row_identity
from ptah.core.spec import SourceRow, key_component, renderer


def source_rows(
    records: Iterable[Sequence[object]],
    key_fields: tuple[str, ...],
    template: str,
    columns: tuple[str, ...],
    where: str,
) -> Iterator[SourceRow]:
    """Each record (key values, then ``columns`` values) as a SourceRow.

    Raises :class:`SourceUnavailable` naming ``where`` at the first record whose
    key is not integers/text, whose key an earlier record had -- including a
    composite key that reads like an earlier one because a component holds
    U+001F, the separator (components ``a`` and ``b␟c``, and ``a␟b`` and ``c``,
    both read ``a␟b␟c``, ␟ being U+001F) -- or whose template column holds
    binary data.
    """
    seen: set[str] = set()  # identities: a key two rows share is an error, not a silent overwrite
    # Keys of composite rows with U+001F inside a component: only these can read like another row's key
    # (a row without one has exactly width - 1 separators in its key, which such a row's key exceeds).
    ambiguous: dict[str, tuple[str, ...]] = {}
    width = len(key_fields)
    fill = renderer(template, columns)
    for values in records:
        first = values[0]
        if width == 1 and type(first) in (int, str):  # the common case, without the general path's tuples
            key = first if type(first) is str else str(first)
            identity = f"{len(key)}:{key}"  # row_identity((key,)), inlined
        else:
            components = key_components(values[:width], key_fields, where)
            identity = row_identity(components)
            key = join_key(components)
            if width > 1 and any(COMPOSITE_KEY_SEPARATOR in c for c in components):
                _check_ambiguous(ambiguous, key, components, key_fields, where)
        if identity in seen:
            raise SourceUnavailable(
                f"{where}: two rows have the key {key!r} ({', '.join(key_fields)}); key_fields must identify exactly one row"
            )
        seen.add(identity)
        try:
            text = fill(values[width:])
        except TypeError as exc:
            raise SourceUnavailable(f"{where}: in the row with key {key!r}, {exc}; cast it to text in a view") from None
        yield SourceRow(key, identity, text)


def key_components(values: Sequence[object], key_fields: tuple[str, ...], where: str) -> tuple[str, ...]:
    """The key columns' values as the corpus spells them; SourceUnavailable for a float, BLOB or NULL."""
    try:
        return tuple(key_component(v, c) for v, c in zip(values, key_fields))
    except TypeError as exc:
        raise SourceUnavailable(f"{where}: in the row where {_shown(values, key_fields)}, {exc}") from None


def _check_ambiguous(seen: dict[str, tuple[str, ...]], key: str, components: tuple[str, ...],
                     key_fields: tuple[str, ...], where: str) -> None:
    """SourceUnavailable when another row's components, holding U+001F elsewhere, join to the same key."""
    other = seen.setdefault(key, components)
    if other != components:
        raise SourceUnavailable(
            f"{where}: two rows have the key {key!r} ({', '.join(key_fields)}): the row where "
            f"{_shown(other, key_fields)} and the row where {_shown(components, key_fields)}, because a key column "
            "holds U+001F, the separator of composite keys; key_fields must identify exactly one row"
        )


def _shown(values: Sequence[object], key_fields: tuple[str, ...]) -> str:
    """The row's key columns as ``column = value`` pairs, for a message."""
    return ", ".join(f"{c} = {v!r}" for c, v in zip(key_fields, values))
