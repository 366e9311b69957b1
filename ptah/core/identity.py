"""The two identities the store keeps for each row: which row it is, and which text was embedded.

Both are stored, compared by verify and build, and never shown to a reader
as anything but opaque strings, so their formats must not drift:

* :func:`row_identity` -- each key component prefixed by its length in
  Unicode code points and ``:``, concatenated without a separator: the key
  ``("acme1", "2")`` reads ``5:acme11:2`` and the key ``("42",)`` reads
  ``2:42``. No character inside a component can make two keys read alike.
* :func:`text_digest` -- the lowercase hex SHA-256 (64 characters, no
  ``sha256:`` prefix) of the exact text embedded, encoded as UTF-8.

A source streams each row's :class:`RowDigest` (its key, identity and text
digest) for verification; :func:`identity_components` reads a stored row
identity back into its key components.
"""

from __future__ import annotations

import hashlib
from typing import NamedTuple


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
