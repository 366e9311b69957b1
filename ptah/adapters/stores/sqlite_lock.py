"""The SQLite store's locks: an ``fcntl.flock`` on a file beside the store, one per generation
identity being built (and one for whatever else must run once per store: :func:`exclusive_lock`)."""

from __future__ import annotations

import errno
import fcntl
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ptah.core.errors import StoreUnavailable


def build_lock(path: Path, name: str):
    """Hold the exclusive build lock of a generation (``<store>.build-<identity prefix>.lock``), or
    refuse at once."""
    return exclusive_lock(
        path,
        "build lock",
        lambda holder: (
            f"another build of generation {name} is running "
            f"(pid {holder}); wait for it to finish, then run the "
            "build again."
        ),
    )


@contextmanager
def exclusive_lock(path: Path, what: str, refusal: Callable[[str], str]) -> Iterator[None]:
    """Hold an exclusive lock (``what``: its name in messages) on the file ``path``, or refuse at
    once: ``StoreUnavailable(refusal(the holder's pid))``.

    An ``fcntl.flock``: the OS drops it when the holder exits, however it
    exits, so a killed build or server never leaves a stale lock. The holder
    writes its pid into the file for the refusal message. The file itself is
    never removed (removing a locked file would let a third process lock a
    different inode).
    """
    try:
        # O_NOFOLLOW: a link planted at the lock's name must not make ptah create or truncate its
        # target.
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError as exc:
        raise StoreUnavailable(f"cannot open the {what} {path}: {exc.strerror}.") from exc
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "unknown"
            raise StoreUnavailable(refusal(holder)) from None
        except OSError as exc:
            raise StoreUnavailable(f"cannot take the {what} {path}: {exc.strerror}.") from exc
        # A failed write (disk full, read-only) is refused here; the lock is released when fd
        # closes, and the next holder truncates whatever was half written, so nothing is left that
        # blocks a later holder.
        try:
            os.ftruncate(fd, 0)
            pid = f"{os.getpid()}\n".encode("ascii")
            if os.pwrite(fd, pid, 0) != len(pid):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        except OSError as exc:
            raise StoreUnavailable(f"cannot write the {what} {path}: {exc.strerror}.") from exc
        try:
            yield
        finally:
            try:
                os.ftruncate(fd, 0)
            except OSError:
                pass  # the pid stays behind; it names no one once the lock is released
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
