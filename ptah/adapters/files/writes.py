"""Writing one output file: replaced atomically, written through, or refused -- by what is at the path.

What is at the path decides, looked at without following a link (``lstat``):

* **nothing, or a regular file**: replaced atomically. The text goes to a
  temporary file in the target's folder, named ``.ptah-<32 random hex>.tmp``
  and created with ``O_CREAT | O_EXCL | O_NOFOLLOW`` (a planted file or link
  at that name is never opened), flushed to disk, given the replaced file's
  permission bits (and owner, where allowed), then renamed over the path: a
  reader or a crash sees the old content or the new, never half. A missing
  parent folder is created.
* **a read-only regular file** (no write permission bit, or not writable by
  this user): refused (exit 2, :class:`OutputRefused`); its protection holds.
* **a character device or a FIFO** (``/dev/null``, a terminal, a named pipe):
  written through, never replaced. A FIFO that no process is reading is
  refused (exit 2) instead of waiting; a device that fails the write
  (``/dev/full``: no space) is exit 3, :class:`OutputUnwritable`.
* **a symbolic link**: never replaced. A link to a character device or a FIFO
  (``/dev/stdout`` is a link to ``/proc/self/fd/1``) is followed and written
  through as above; a link to anything else (a regular file, a folder,
  nothing) is refused (exit 2): give the path of the file itself.
* **a folder, a block device, a socket, an empty path**: refused (exit 2).

Failures the user cannot fix by choosing another path (a full disk, no
permission on the folder) are :class:`OutputUnwritable` (exit 3); an earlier
file at the path is then left as it was.
"""

from __future__ import annotations

import errno
import fcntl
import os
import secrets
import stat
from typing import Iterable

from ptah.adapters.files.reads import kind_of
from ptah.core.errors import OutputRefused, OutputUnwritable

_OPEN_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_NOTHING_WRITTEN = "; nothing was written there"
_WRITE_SIZE = 1 << 18  # pieces of text are gathered into writes of about this many bytes


def _label(path: str, option: str | None) -> str:
    shown = path if path else '""'
    return f"{option} {shown}" if option else shown


def unwritable(label: str, exc: OSError, tail: str = _NOTHING_WRITTEN) -> OutputUnwritable:
    return OutputUnwritable(f"{label}: cannot be written ({exc.strerror or exc}){tail}")


def _split(raw: str, label: str) -> tuple[str, str]:
    """``(folder, name)`` of an output path; :class:`OutputRefused` for an empty path or one naming a folder."""
    if raw == "":
        raise OutputRefused(f"{label}: is an empty path; give the path of a file to write")
    folder, name = os.path.split(raw)
    if name in ("", ".", ".."):
        raise OutputRefused(f"{label}: names a folder; give the path of a file to write")
    return folder, name


def lstat_at(dir_fd: int, name: str, *, follow: bool = False) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=follow)
    except FileNotFoundError:
        return None


def _through(mode: int) -> bool:
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)


def decide(found: os.stat_result | None, label: str, *, followed, writable, devices: bool) -> str:
    """``"replace"`` or ``"through"`` for what ``lstat`` found at an output path; :class:`OutputRefused` otherwise."""
    if found is None:
        return "replace"
    mode = found.st_mode
    if stat.S_ISREG(mode):
        if not mode & 0o222 or not writable():
            raise OutputRefused(
                f"{label}: is read-only (mode {stat.S_IMODE(mode):04o}); ptah does not replace a file protected "
                "against writing: make it writable or give another path"
            )
        return "replace"
    if devices and _through(mode):
        return "through"
    if stat.S_ISLNK(mode) and devices:
        target = followed()
        if target is not None and _through(target.st_mode):
            return "through"
        raise OutputRefused(
            f"{label}: is a symbolic link to {kind_of(target.st_mode) if target else 'nothing'}; ptah never replaces "
            "a link nor writes through one to a file: give the path of the file itself"
        )
    if stat.S_ISLNK(mode):
        raise OutputRefused(
            f"{label}: is a symbolic link; ptah writes a project's files only inside the project folder, never "
            "through a link: remove the link or choose another folder"
        )
    if stat.S_ISDIR(mode):
        raise OutputRefused(f"{label}: is a folder; give the path of a file to write")
    raise OutputRefused(f"{label}: is {kind_of(mode)}, which ptah neither replaces nor writes to here; give the path of a regular file")


def check_output(path: str | os.PathLike, option: str | None = None) -> None:
    """Refuse (exit 2) an output path that :func:`write_text_atomically` would refuse, before any work is done.

    Creates and writes nothing; ``option`` (``--output``) prefixes messages.
    A FIFO is not opened here (that would signal end-of-file to its reader).
    """
    raw = os.fspath(path)
    label = _label(raw, option)
    _split(raw, label)
    try:
        found = os.lstat(raw)
    except OSError:
        return  # nothing there yet, or a parent the write will report on
    decide(found, label, followed=lambda: _stat_or_none(raw), writable=lambda: os.access(raw, os.W_OK), devices=True)


def _stat_or_none(raw: str) -> os.stat_result | None:
    try:
        return os.stat(raw)
    except OSError:
        return None


def write_text_atomically(path: str | os.PathLike, text: str, *, option: str | None = None) -> None:
    """Write ``text`` (UTF-8) to ``path`` by the rules of the module docs.

    Raises :class:`OutputRefused` (exit 2) for a path ptah must not write
    (a folder, a read-only file, a link to a file, a FIFO without a reader…)
    and :class:`OutputUnwritable` (exit 3) when the write itself fails (no
    permission on the folder, a full disk); ``option`` prefixes messages.
    """
    write_pieces_atomically(path, (text,), option=option)


def write_pieces_atomically(path: str | os.PathLike, pieces: Iterable[str], *, option: str | None = None) -> None:
    """:func:`write_text_atomically` of ``"".join(pieces)``, with never more than about 256 KiB of it in memory:
    the pieces are encoded and written as they come. The same rules and errors; an exception raised by
    ``pieces`` itself propagates, and a replaced file then keeps its earlier content."""
    raw = os.fspath(path)
    label = _label(raw, option)
    folder, name = _split(raw, label)
    try:
        if folder:
            os.makedirs(folder, exist_ok=True)
        dir_fd = os.open(folder or ".", _OPEN_FOLDER)
    except OSError as exc:
        raise unwritable(label, exc) from None
    try:
        write_at(dir_fd, name, _encoded(pieces), label, devices=True)
    finally:
        os.close(dir_fd)


def replace_regular_file(path: str | os.PathLike, text: str) -> None:
    """Replace the regular file at ``path`` (or create it) with ``text``, atomically -- never writing through
    a device, a FIFO or a link: for files ptah reads back itself (a corpus it edits, a judgement record)."""
    raw = os.fspath(path)
    folder, name = _split(raw, raw)
    try:
        dir_fd = os.open(folder or ".", _OPEN_FOLDER)
    except OSError as exc:
        raise unwritable(raw, exc) from None
    try:
        write_at(dir_fd, name, text.encode("utf-8"), raw, devices=False)
    finally:
        os.close(dir_fd)


def _encoded(pieces: Iterable[str]) -> Iterable[bytes]:
    """``pieces`` as UTF-8, gathered into runs of about :data:`_WRITE_SIZE` bytes."""
    gathered, size = [], 0
    for piece in pieces:
        gathered.append(piece)
        size += len(piece)
        if size >= _WRITE_SIZE:
            yield "".join(gathered).encode("utf-8")
            gathered, size = [], 0
    if gathered:
        yield "".join(gathered).encode("utf-8")


def write_at(dir_fd: int, name: str, data: bytes | Iterable[bytes], label: str, *, devices: bool) -> None:
    """Write ``data`` (bytes, or pieces of it) at ``name`` in the open folder ``dir_fd``; ``devices`` allows
    writing through (module docs)."""
    pieces = (data,) if isinstance(data, bytes) else data
    try:
        found = lstat_at(dir_fd, name)
        how = decide(found, label, devices=devices, followed=lambda: lstat_at(dir_fd, name, follow=True),
                      writable=lambda: os.access(name, os.W_OK, dir_fd=dir_fd))
    except OSError as exc:
        raise unwritable(label, exc) from None
    if how == "through":
        _write_through(dir_fd, name, pieces, label)
        return
    temporary, fd = _create_temporary(dir_fd, label)
    try:
        with os.fdopen(fd, "wb") as handle:
            for piece in pieces:
                handle.write(piece)
            handle.flush()
            _keep_mode(handle.fileno(), found)
            os.fsync(handle.fileno())
        _rename(dir_fd, temporary, dir_fd, name, label)
        temporary = None
    except OSError as exc:
        raise unwritable(label, exc) from None
    finally:
        if temporary is not None:
            _unlink(dir_fd, temporary)


def move_at(src_fd: int, source: str, dir_fd: int, name: str, label: str) -> None:
    """Move the finished file ``source`` over the regular file (or nothing) at ``name``; the rules of :func:`write_at`."""
    try:
        found = lstat_at(dir_fd, name)
        decide(found, label, devices=False, followed=None, writable=lambda: os.access(name, os.W_OK, dir_fd=dir_fd))
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=src_fd)
        try:
            _keep_mode(fd, found)
            os.fsync(fd)
        finally:
            os.close(fd)
        _rename(src_fd, source, dir_fd, name, label)
    except OSError as exc:
        raise unwritable(label, exc) from None


def _write_through(dir_fd: int, name: str, pieces: Iterable[bytes], label: str) -> None:
    """Write ``pieces`` into the character device or FIFO at ``name`` (a link to one followed), never replacing it."""
    try:
        fd = os.open(name, os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise OutputRefused(f"{label}: is a FIFO that no process is reading; start its reader first, "
                                "or give the path of a file") from None
        raise unwritable(label, exc) from None
    try:
        if not _through(os.fstat(fd).st_mode):
            raise OutputUnwritable(f"{label}: changed while it was being opened{_NOTHING_WRITTEN}")
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        for piece in pieces:
            view = memoryview(piece)
            while view:
                view = view[os.write(fd, view):]
    except OSError as exc:
        raise unwritable(label, exc, tail="") from None
    finally:
        os.close(fd)


def _create_temporary(dir_fd: int, label: str) -> tuple[str, int]:
    """A new file with an unpredictable name in the folder, created exclusively, never through a link."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(8):
        name = f".ptah-{secrets.token_hex(16)}.tmp"
        try:
            return name, os.open(name, flags, 0o666, dir_fd=dir_fd)
        except FileExistsError:
            continue
        except OSError as exc:
            raise unwritable(label, exc) from None
    raise OutputUnwritable(f"{label}: cannot be written (no unused temporary name in its folder){_NOTHING_WRITTEN}")


def _keep_mode(fd: int, replaced: os.stat_result | None) -> None:
    """Give the new file the permission bits (and, where allowed, the owner) of the file it replaces."""
    if replaced is None:
        return
    if (replaced.st_uid, replaced.st_gid) != (os.geteuid(), os.getegid()):
        try:
            os.fchown(fd, replaced.st_uid, replaced.st_gid)
        except PermissionError:
            pass
    os.fchmod(fd, stat.S_IMODE(replaced.st_mode) & 0o777)


def _rename(src_fd: int, source: str, dir_fd: int, name: str, label: str) -> None:
    """Rename ``source`` over ``name`` unless something other than a regular file appeared there meanwhile."""
    now = lstat_at(dir_fd, name)
    if now is not None and not stat.S_ISREG(now.st_mode):
        raise OutputUnwritable(f"{label}: became {kind_of(now.st_mode)} while it was being written{_NOTHING_WRITTEN}")
    os.replace(source, name, src_dir_fd=src_fd, dst_dir_fd=dir_fd)
    try:
        os.fsync(dir_fd)  # the rename itself survives a crash
    except OSError:
        pass


def _unlink(dir_fd: int, name: str) -> None:
    try:
        os.unlink(name, dir_fd=dir_fd)
    except OSError:
        pass
