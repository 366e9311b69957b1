"""How the SQLite store tells a damaged file from other failures, and checks a generation for
damage.

SQLite reports a damaged file as SQLITE_CORRUPT or SQLITE_NOTADB (and Python
as text that does not decode); its ``integrity_check`` finds pages and
indexes that disagree; neither sees a vector whose bytes changed in place,
which the CRC-32 written beside each vector does. Every finding is a
:class:`StoreDamaged` with one remedy that deletes nothing.
"""

from __future__ import annotations

import sqlite3
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from ptah.adapters.stores.vector_checks import misfiled, misfiled_text, non_finite, non_finite_text
from ptah.core.errors import StoreDamaged, StoreUnavailable

# SQLite's result codes for a damaged file (the low byte of an extended code): SQLITE_CORRUPT,
# SQLITE_NOTADB.
_DAMAGE_CODES = frozenset({11, 26})


def damaged(path: Path, what: str) -> StoreDamaged:
    """The one sentence for a damaged store file: what was found, and a remedy that deletes
    nothing."""
    return StoreDamaged(
        f"store {path} is damaged ({what}); move it aside and run `ptah inference build` again."
    )


def _damage(exc: sqlite3.Error) -> str | None:
    """What SQLite's error says is damaged, or None when it is not damage (locked, disk full)."""
    if str(exc).startswith(
        "Could not decode to UTF-8"
    ):  # ptah writes only UTF-8; the stored bytes are not shown
        return "SQLite: a stored text is not UTF-8"
    code = getattr(exc, "sqlite_errorcode", None) or 0
    return f"SQLite: {exc}" if (code & 0xFF) in _DAMAGE_CODES else None


@contextmanager
def guarded(path: Path) -> Iterator[None]:
    """Turn SQLite's operational failures into StoreDamaged (a corrupt file) or StoreUnavailable
    (locked, disk full)."""
    try:
        yield
    except (sqlite3.OperationalError, sqlite3.DatabaseError) as exc:
        if isinstance(
            exc, (sqlite3.IntegrityError, sqlite3.ProgrammingError, sqlite3.InterfaceError)
        ):
            raise
        damage = _damage(exc)
        if damage:
            raise damaged(path, damage) from exc
        raise StoreUnavailable(f"store {path} cannot be used: {exc}.") from exc


def integrity_problems(connection: sqlite3.Connection) -> str | None:
    """The first problems ``PRAGMA integrity_check`` finds, on one line; None when it says ok.

    ``integrity_check`` rather than ``quick_check``: only the former finds an
    index that disagrees with its table (verify and build read the index),
    and it costs about the same -- one read of the whole file, about 0.3 s
    per 100,000 vectors of dimension 384 when the file is in the page cache.
    """
    problems = [row[0] for row in connection.execute("PRAGMA integrity_check(3)")]
    if problems == ["ok"]:
        return None
    lines = [line.strip() for problem in problems for line in str(problem).splitlines()]
    return "; ".join([line for line in lines if line and not line.startswith("***")][:2])[:200]


def check_vectors(path: Path, name: str, blocks: Iterable[tuple[list[tuple], np.ndarray]]) -> None:
    """StoreDamaged when a vector of generation ``name`` is not finite, does not match its CRC-32 or
    is stored under another key than its row identity spells.

    ``blocks``: ``(rows, vectors)`` pairs, each row ``(key, row identity,
    vector bytes, CRC-32 or None)`` (None: written before ptah kept CRCs).
    """
    total = bad = changed = moved = 0
    first = first_changed = first_moved = None
    for rows, vectors in blocks:
        keys = [row[0] for row in rows]
        found, key = non_finite(vectors, keys)
        total += len(rows)
        bad += found
        first = key if first is None else first
        found, key = misfiled(keys, [row[1] for row in rows])
        moved += found
        first_moved = key if first_moved is None else first_moved
        for row in rows:
            if row[3] is not None and zlib.crc32(row[2]) != row[3]:
                changed += 1
                first_changed = row[0] if first_changed is None else first_changed
    if bad:
        raise damaged(path, non_finite_text(bad, total, name, first))
    if changed:
        raise damaged(
            path,
            f"{changed} of {total} vectors of generation {name} differ from what ptah wrote "
            f"(their CRC-32 does not match), the first for key {first_changed!r}",
        )
    if moved:
        raise damaged(path, misfiled_text(moved, total, name, first_moved))
