"""What every source reader shares: raw rows turned into :class:`SourceRow` values, key lookups, the
filter check and one read snapshot.

A reader selects the key columns, then the template's columns, in key order; :func:`source_rows`
renders each row's key (as the corpus spells it), its length-prefixed identity and its text the
same way whatever the database, and refuses what cannot be read as the specification says.
:func:`filter_problem` says whether a ``source.filter`` can stand inside ptah's ``WHERE (…)``;
:class:`OneSnapshot` is one read snapshot with key lookups.
"""

from __future__ import annotations

import difflib
import itertools
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Self

from ptah.core.corpus import COMPOSITE_KEY_SEPARATOR, join_key
from ptah.core.errors import SourceUnavailable
from ptah.core.provenance import RowDigest, identity_components, row_identity, text_digest
from ptah.core.spec import SourceRow, key_component, renderer

if TYPE_CHECKING:
    from ptah.core.spec import SourceSpec


_CANONICAL_INT = re.compile(r"(0|-?[1-9][0-9]{0,18})\Z")
Twin = Callable[
    [tuple[str, ...]], bool
]  # whether more than one row passing the filter renders to these components


def source_rows(
    records: Iterable[Sequence[object]],
    key_fields: tuple[str, ...],
    template: str,
    columns: tuple[str, ...],
    where: str,
    twin: Twin | None = None,
) -> Iterator[SourceRow]:
    """Each record (key values, then ``columns`` values), in key order, as a SourceRow.

    Raises :class:`SourceUnavailable` naming ``where`` at the first record whose
    key is not integers/text, whose key an earlier record had (see
    :func:`keyed_records`), or whose template column holds binary data.
    """
    fill = renderer(template, columns)
    for key, identity, values in keyed_records(records, key_fields, where, twin):
        try:
            text = fill(values)
        except TypeError as exc:
            raise _unrendered(where, key, exc) from None
        yield SourceRow(key, identity, text)


def _unrendered(where: str, key: str, exc: TypeError) -> SourceUnavailable:
    """The error for a row whose template column holds binary data."""
    return SourceUnavailable(
        f"{where}: in the row with key {key!r}, {exc}; cast it to text in a view"
    )


def keyed_texts(
    statements: Iterable[Iterable[Sequence[object]]],
    key_fields: tuple[str, ...],
    template: str,
    columns: tuple[str, ...],
    wanted: dict[tuple[str, ...], str],
    where: str,
) -> dict[str, str]:
    """The text of each record (key values, then ``columns`` values) whose key components are among
    ``wanted``'s, by the key ``wanted`` gives them; the records come from several statements, in any
    order, and one row may come again from another statement (SQLite finds row ``0`` for ``'-0'`` as
    for ``0``). A record whose key renders as none of ``wanted`` (a REAL, BLOB or NULL key; ``42``
    for ``0042``) is no row asked for.

    Raises :class:`SourceUnavailable` as :func:`source_rows` does for two rows with one key (``1``
    and ``'1'``, components that join alike, or one statement finding the key twice) or a template
    column holding binary data.
    """
    fill = renderer(template, columns)
    width = len(key_fields)
    texts: dict[str, str] = {}
    found: dict[
        str, tuple[tuple[str, ...], tuple]
    ] = {}  # each key's components and key values, types included
    for records in statements:
        this_statement: set[str] = set()
        for values in records:
            components = rendered_components(values[:width], key_fields)
            key = None if components is None else wanted.get(components)
            if components is None or key is None:
                continue
            stored = tuple((type(value), value) for value in values[:width])
            if key in found:
                if key not in this_statement and found[key][1] == stored:
                    continue  # the same row, found again
                _check_ambiguous(
                    {key: found[key][0]}, key, components, key_fields, where
                )  # components differ
                raise _two_rows(where, key, key_fields)
            found[key] = (components, stored)
            this_statement.add(key)
            try:
                texts[key] = fill(values[width:])
            except TypeError as exc:
                raise _unrendered(where, key, exc) from None
    return texts


def text_digests(rows: Iterable[SourceRow]) -> Iterator[RowDigest]:
    """Each row's key, identity and :func:`text_digest` of its text (a source's digests, read from
    the text)."""
    for row in rows:
        yield RowDigest(row.key, row.identity, text_digest(row.text))


def keyed_records(
    records: Iterable[Sequence[object]],
    key_fields: tuple[str, ...],
    where: str,
    twin: Twin | None = None,
) -> Iterator[tuple[str, str, Sequence[object]]]:
    """Each record as ``(key, row identity, the values after the key columns)``.

    The records come ordered by the key columns (integers numerically, text by
    code point), so two rows with one key are neighbours -- except a value
    stored once as an integer and once as text (SQLite keeps ``1`` and ``'1'``
    apart, and orders every integer before any text): a text component spelled
    like an integer, where an integer was read before, is asked of ``twin``
    (whether another row renders to the same components). Memory stays one row
    whatever the table's size.

    Raises :class:`SourceUnavailable` naming ``where`` at the first record whose
    key is not integers/text, or whose key an earlier record had -- including a
    composite key that reads like an earlier one because a component holds
    U+001F, the separator (components ``a`` and ``b␟c``, and ``a␟b`` and ``c``,
    both read ``a␟b␟c``, ␟ being U+001F).
    """
    previous: str | None = None
    # Keys of composite rows with U+001F inside a component: only these can read like another row's
    # key (a row without one has exactly width - 1 separators in its key, which such a row's key
    # exceeds).
    ambiguous: dict[str, tuple[str, ...]] = {}
    width = len(key_fields)
    integers = [False] * width  # whether an integer was read in each key column
    for values in records:
        first = values[0]
        if width == 1 and type(first) in (
            int,
            str,
        ):  # the common case, without the general path's tuples
            if type(first) is str:
                key, twins = first, integers[0] and is_int64(first)
            else:
                key, twins, integers[0] = str(first), False, True
            identity = f"{len(key)}:{key}"  # row_identity((key,)), inlined
        else:
            components = key_components(values[:width], key_fields, where)
            identity = row_identity(components)
            key = join_key(components)
            if width > 1 and any(COMPOSITE_KEY_SEPARATOR in c for c in components):
                _check_ambiguous(ambiguous, key, components, key_fields, where)
            twins = any(
                [_twin_possible(integers, values, i) for i in range(width)]
            )  # a list: every column noted
        if identity == previous or (
            twins and twin is not None and twin(key_components(values[:width], key_fields, where))
        ):
            raise _two_rows(where, key, key_fields)
        previous = identity
        yield key, identity, values[width:]


def _two_rows(where: str, key: str, key_fields: tuple[str, ...]) -> SourceUnavailable:
    return SourceUnavailable(
        f"{where}: two rows have the key {key!r} ({', '.join(key_fields)}); key_fields must identify exactly one row"
    )


def _twin_possible(integers: list[bool], values: Sequence[object], index: int) -> bool:
    """Note an integer in key column ``index``; True for text spelled like an integer read after one
    there."""
    value = values[index]
    if type(value) is int:
        integers[index] = True
        return False
    return integers[index] and type(value) is str and is_int64(value)


def record_identities(
    records: Iterable[Sequence[object]], key_fields: tuple[str, ...], where: str
) -> Iterator[str]:
    """Each record's (its key values') row identity, rendered here whatever order the database
    computed."""
    for values in records:
        first = values[0]
        if len(values) == 1 and type(first) in (int, str):  # the common case, as in keyed_records
            key = first if type(first) is str else str(first)
            yield f"{len(key)}:{key}"
        else:
            yield row_identity(key_components(values, key_fields, where))


def rendered_components(
    values: Sequence[object], key_fields: tuple[str, ...]
) -> tuple[str, ...] | None:
    """The key components ``values`` render to; None for a value no key can hold (a REAL matching
    ``= 1``)."""
    try:
        return tuple(key_component(v, c) for v, c in zip(values, key_fields))
    except TypeError:
        return None


def key_components(
    values: Sequence[object], key_fields: tuple[str, ...], where: str
) -> tuple[str, ...]:
    """The key columns' values as the corpus spells them; SourceUnavailable for a float, BLOB or
    NULL."""
    try:
        return tuple(key_component(v, c) for v, c in zip(values, key_fields))
    except TypeError as exc:
        raise SourceUnavailable(
            f"{where}: in the row where {_shown(values, key_fields)}, {exc}"
        ) from None


def _check_ambiguous(
    seen: dict[str, tuple[str, ...]],
    key: str,
    components: tuple[str, ...],
    key_fields: tuple[str, ...],
    where: str,
) -> None:
    """SourceUnavailable when another row's components, holding U+001F elsewhere, join to the same
    key."""
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


def no_such_column(where: str, name: str, field: str, columns: list[str]) -> SourceUnavailable:
    """The error for a column ``name`` (named in ``field``) the table lacks, with the closest it
    has."""
    close = difflib.get_close_matches(name, columns, n=1, cutoff=0.6)
    hint = f'did you mean "{close[0]}"?' if close else "its columns are " + ", ".join(columns)
    return SourceUnavailable(f"{where}: has no column {name} (named in {field}); {hint}")


def is_int64(component: str) -> bool:
    """Whether a key component is the exact spelling of a 64-bit integer (``0042``, ``+1`` and
    ``1.0`` are not)."""
    return _CANONICAL_INT.match(component) is not None and -(2**63) <= int(component) < 2**63


def lookup_keys(
    keys: Iterable[str], width: int
) -> tuple[dict[str, str], dict[tuple[str, ...], str]]:
    """Each key ``missing`` until found, and the keys that split into ``width`` components, by
    components."""
    result: dict[str, str] = {}
    wanted: dict[tuple[str, ...], str] = {}
    for key in keys:
        result[key] = "missing"
        components = (key,) if width == 1 else tuple(key.split(COMPOSITE_KEY_SEPARATOR))
        if len(components) == width:
            wanted[components] = key
    return result, wanted


def key_splits(keys: Iterable[str], width: int) -> dict[tuple[str, ...], str]:
    """Each key by every way it reads as ``width`` components: split at ``width - 1`` of its U+001F,
    since a component may hold one (:func:`source_rows` names tenant ``a␟b`` with id ``c``
    ``a␟b␟c``, ␟ being U+001F); a key with fewer separators reads as none."""
    wanted: dict[tuple[str, ...], str] = {}
    for key in keys:
        if width == 1:
            wanted[(key,)] = key
            continue
        parts = key.split(COMPOSITE_KEY_SEPARATOR)
        for cuts in itertools.combinations(range(1, len(parts)), width - 1):
            bounds = zip((0, *cuts), (*cuts, len(parts)))
            wanted[tuple(COMPOSITE_KEY_SEPARATOR.join(parts[low:high]) for low, high in bounds)] = (
                key
            )
    return wanted


def lookup_identities(
    identities: Iterable[str], width: int
) -> tuple[dict[str, str], dict[tuple[str, ...], str]]:
    """As :func:`lookup_keys`, for row identities: read back into their components exactly (U+001F
    and all)."""
    result: dict[str, str] = {}
    wanted: dict[tuple[str, ...], str] = {}
    for identity in identities:
        result[identity] = "missing"
        components = identity_components(identity)
        if components is not None and len(components) == width:
            wanted[components] = identity
    return result, wanted


def mark_found(
    found: Iterable[Sequence[object]],
    key_fields: tuple[str, ...],
    wanted: dict[tuple[str, ...], str],
    result: dict[str, str],
) -> None:
    """Each row found (key values, then 1 when it passes the filter) marks its key ``ok`` or
    ``filtered``; a row whose key renders as none of ``wanted`` (a REAL, BLOB or NULL key; ``42``
    for ``0042``) marks nothing."""
    width = len(key_fields)
    for values in found:
        components = rendered_components(values[:width], key_fields)
        key = None if components is None else wanted.get(components)
        if key is not None and result[key] != "ok":
            result[key] = "ok" if values[width] else "filtered"


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
