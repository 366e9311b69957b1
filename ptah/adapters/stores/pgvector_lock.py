"""The pgvector store's locks: a PostgreSQL session-level advisory lock per generation identity
being built (and one for whatever else must run once per store: :func:`advisory_lock`).

Keys: ptah's namespace (:data:`pgvector_schema.LOCK_NAMESPACE`) and 31 bits
of a hash of the identity. The lock is held on a connection of its own whose
``application_name`` is ``ptah build pid N on HOST``, so a refused build can
say who holds it. The server releases a session's advisory locks when the
session ends, however it ends (a SIGKILL'd client's socket closes), so a
killed build never leaves a stale lock -- and builds running on different
machines against one database exclude each other, which a file lock cannot do.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ptah.adapters.postgres import client_label, connect, guarded
from ptah.adapters.stores.pgvector_schema import LOCK_NAMESPACE, generation_lock_key
from ptah.core.errors import StoreUnavailable

_BUILD = "ptah build "


def build_lock(url: str, identity: str, name: str):
    """Hold the exclusive build lock of generation ``identity`` (shown as ``name``), or refuse at
    once.

    Raises :class:`StoreUnavailable` (exit 3): ``another build of generation
    NAME is running (pid N); wait for it to finish, then run the build again.``
    """
    return advisory_lock(
        url,
        _BUILD,
        lambda connection: generation_lock_key(identity),
        lambda holder: (
            f"another build of generation {name} is running ({holder}); "
            "wait for it to finish, then run the build again."
        ),
    )


@contextmanager
def advisory_lock(
    url: str, label: str, key_of: Callable[[Any], int], refusal: Callable[[str], str]
) -> Iterator[None]:
    """Hold an advisory lock on a connection of its own named ``label`` + pid and host, or refuse at
    once: ``StoreUnavailable(refusal(who holds it))``."""
    connection = connect(
        url, StoreUnavailable, "store", autocommit=True, application_name=label + client_label()
    )
    try:
        with guarded(url, StoreUnavailable, "store"):
            key = key_of(connection)
            locked = connection.execute(
                "SELECT pg_try_advisory_lock(%s, %s)", (LOCK_NAMESPACE, key)
            ).fetchall()[0][0]
            if not locked:
                raise StoreUnavailable(refusal(_holder(connection, key, label)))
        yield
    finally:
        connection.close()  # ends the session, and so releases its advisory locks


def _holder(connection, key: int, label: str) -> str:
    """``pid N`` of the holding ptah process (``pid N on HOST`` when it runs elsewhere), else the
    server backend's."""
    row = connection.execute(
        "SELECT a.application_name, l.pid FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid "
        "WHERE l.locktype = 'advisory' AND l.classid = %s::bigint::oid AND l.objid = %s::bigint::oid "
        "AND l.objsubid = 2 AND l.granted LIMIT 1",
        (LOCK_NAMESPACE, key),
    ).fetchone()
    if row is None:
        return "a process that has just finished"
    application, backend = row
    if application and application.startswith(label + "pid "):
        pid, _, host = application[len(label + "pid ") :].partition(" on ")
        return f"pid {pid}" if host == os.uname().nodename else f"pid {pid} on {host}"
    return f"server backend pid {backend}"
