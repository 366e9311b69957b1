"""The files ptah reads and writes, by what is at the path (a link followed).

Reading (:func:`read_bounded`, :func:`open_lines`): only a regular file, and
at most ``limit`` bytes of it whatever ``st_size`` says; a folder, FIFO,
device or socket is refused (exit 2) before it is opened, so a pipe with no
writer cannot hang ptah and ``/dev/zero`` cannot fill memory.

Writing (:func:`write_text_atomically`, :func:`write_pieces_atomically`):

* nothing, or a regular file: replaced atomically -- written to a temporary
  file beside it, flushed, given the old file's permission bits, renamed over
  it (a link to it stays a link); a read-only file is refused (exit 2);
* anything else but a folder or a socket (``/dev/null``, ``/dev/stdout``, a
  FIFO): written through, never replaced; a FIFO nobody reads is refused
  (exit 2) instead of waiting;
* a folder, a socket, an empty path: refused (exit 2).

A write that fails (a full disk, a folder without write permission) is
:class:`OutputUnwritable` (exit 3), and a replaced file keeps its content.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress

from ptah.core.errors import InputError, OutputRefused, OutputUnwritable, Problem
from ptah.core.formats import FILE, Writer
from ptah.core.plugins import hookimpl

STEP_SUMMARY_LIMIT = 1024 * 1024
_BUFFER = (
    1 << 20
)  # bytes written at once: a report of many small pieces goes out as fast as one string
_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISLNK, "a symbolic link"),
)


def kind_of(mode: int) -> str:
    """What a ``st_mode`` is, in words: ``a FIFO (named pipe)``, ``a regular file``…"""
    otherwise = "a regular file" if stat.S_ISREG(mode) else "not a file"
    return next((words for test, words in _KINDS if test(mode)), otherwise)


# -- reading -----------------------------------------------------------------------


def refused(
    message: str, path: str, line: int | None = None, field: str | None = None
) -> InputError:
    """The exit-2 error of one problem of an input file (``FILE:LINE: field: message``)."""
    problem = Problem(message, path=path, line=line, field=field)
    return InputError(str(problem), problems=(problem,))


def _too_big(
    name: str, what: str, limit: int, size: int | None = None, hint: str = ""
) -> InputError:
    said = f"is {size:,} bytes, more than" if size is not None else "holds more than"
    return refused(
        f"the file {said} the {what} limit of {limit:,}"
        + (" bytes" if size is None else "")
        + (f"; {hint}" if hint else ""),
        name,
    )


def _open_regular(name: str, what: str, limit: int, hint: str = ""):
    """A binary handle on the regular file ``name`` at most ``limit`` bytes long;
    :class:`InputError` otherwise."""
    try:
        found = os.stat(name)
        if stat.S_ISDIR(found.st_mode):
            raise refused(f"is a directory, not a {what} file", name)
        if not stat.S_ISREG(found.st_mode):
            raise refused(
                f"is {kind_of(found.st_mode)}, not a regular file; give the path of a {what} file",
                name,
            )
        if found.st_size > limit:
            raise _too_big(name, what, limit, found.st_size, hint)
        return open(name, "rb"), found.st_size
    except FileNotFoundError:
        raise refused("no such file", name) from None
    except OSError as exc:
        raise refused(f"cannot be read: {exc.strerror or exc}", name) from None


def read_bounded(path: str | os.PathLike, *, limit: int, what: str, hint: str = "") -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them, else :class:`InputError`
    (exit 2).

    ``what`` names the kind of file in messages (``corpus``, ``baseline report``); ``hint`` is
    appended to the over-limit message (``split it``). At most ``limit + 1`` bytes are read,
    whatever ``st_size`` says.
    """
    name = os.fspath(path)
    handle, size = _open_regular(name, what, limit, hint)
    with handle:
        try:
            data = handle.read(size + 1)  # st_size sizes the first read only (a /proc file says 0)
            if len(data) > size:
                data += handle.read(limit + 1 - len(data))
        except OSError as exc:
            raise refused(f"cannot be read: {exc.strerror or exc}", name) from None
    if len(data) > limit:
        raise _too_big(name, what, limit, hint=hint)
    return data


@contextmanager
def open_lines(
    path: str | os.PathLike, *, limit: int, line_limit: int, what: str
) -> Iterator[tuple[int, Iterator]]:
    """``(size, lines)`` of the regular file ``path`` (:class:`InputError`, exit 2, if it is not
    one): its size when opened (for progress), and its ``(number, raw bytes with their ending)``,
    each at most ``line_limit`` bytes and all at most ``limit``."""
    name = os.fspath(path)
    handle, size = _open_regular(name, what, limit)
    with handle:
        yield size, _lines(handle, name, limit, line_limit, what)


def _lines(
    handle, name: str, limit: int, line_limit: int, what: str
) -> Iterator[tuple[int, bytes]]:
    done = 0
    try:
        for number, raw in enumerate(iter(lambda: handle.readline(line_limit + 1), b""), 1):
            done += len(raw)
            if len(raw) > line_limit:
                raise refused(
                    f"the line is longer than the {what} limit of {line_limit:,} bytes for one line",
                    name,
                    number,
                )
            if done > limit:
                raise _too_big(name, what, limit)
            yield number, raw
    except OSError as exc:
        raise refused(f"cannot be read: {exc.strerror or exc}", name) from None


# -- writing -----------------------------------------------------------------------


def _unwritable(
    label: str, exc: OSError, tail: str = "; nothing was written there"
) -> OutputUnwritable:
    return OutputUnwritable(f"{label}: cannot be written ({exc.strerror or exc}){tail}")


def _label(raw: str, option: str | None) -> str:
    shown = raw or '""'
    return f"{option} {shown}" if option else shown


def _looked_at(raw: str, label: str) -> os.stat_result | None:
    """What is at the output path ``raw`` (a link followed); :class:`OutputRefused` where ptah
    writes nothing."""
    if raw == "":
        raise OutputRefused(f"{label}: is an empty path; give the path of a file to write")
    if os.path.basename(raw) in ("", ".", ".."):
        raise OutputRefused(f"{label}: names a folder; give the path of a file to write")
    try:
        found = os.stat(raw)
    except OSError:
        return None  # nothing there yet, or a folder the write will report on
    mode = found.st_mode
    if stat.S_ISDIR(mode):
        raise OutputRefused(f"{label}: is a folder; give the path of a file to write")
    if stat.S_ISSOCK(mode):
        raise OutputRefused(f"{label}: is a socket; give the path of a file to write")
    if stat.S_ISREG(mode) and (not mode & 0o222 or not os.access(raw, os.W_OK)):
        raise OutputRefused(
            f"{label}: is read-only (mode {stat.S_IMODE(mode):04o}); ptah does not replace a file "
            "protected against writing: make it writable or give another path"
        )
    return found


def check_output(path: str | os.PathLike, option: str | None = None) -> None:
    """Refuse (exit 2) before any work an output path the write would refuse; ``option`` prefixes
    messages."""
    raw = os.fspath(path)
    _looked_at(raw, _label(raw, option))


def _names(path: str) -> set:
    """What makes two paths one file: the resolved path, and the device and inode of what is
    there."""
    names: set = {os.path.realpath(path)}
    with suppress(OSError):
        found = os.stat(path)
        names.add((found.st_dev, found.st_ino))
    return names


def _written_through(path: str) -> bool:
    """A device or FIFO is written through and nothing there is replaced: two outputs may share
    one."""
    with suppress(OSError):
        return not stat.S_ISREG(os.stat(path).st_mode)
    return False


def check_apart(
    outputs: Sequence[tuple[str, str | os.PathLike]],
    inputs: Sequence[tuple[str, str | os.PathLike]],
) -> None:
    """Refuse (:class:`OutputRefused`, exit 2), before any work, an output ``(option, path)`` that
    is one of the run's ``inputs`` (``(what, path)``: ``the corpus``…) or that an earlier output
    names too: the same file by device and inode (a link, a hard link), or the same path
    resolved."""
    read = [(what, os.fspath(path), _names(os.fspath(path))) for what, path in inputs]
    written: list[tuple[str, set]] = []
    for option, given in outputs:
        path = os.fspath(given)
        names = _names(path)
        for what, source, known in read:
            if names & known:
                raise OutputRefused(
                    f"{option} {path}: is {what} this run reads ({source}); ptah never writes over "
                    "an input, so give another path"
                )
        for other, known in written:
            if names & known:
                raise OutputRefused(
                    f"{option} {path}: {other} writes there too; give each output a path of its own"
                )
        if not _written_through(path):
            written.append((f"{option} {path}", names))


@contextmanager
def replacing_entry(path: str | os.PathLike) -> Iterator[str]:
    """A temporary file made in ``path``'s own folder (never through a link: ``O_EXCL``) that
    replaces the folder's entry ``path`` when the block ends -- a link, FIFO or device there is
    replaced, never written through; removed if the block raises. For files ptah makes for itself
    (its caches), where no link of the user's is kept."""
    folder = os.path.dirname(os.fspath(path)) or "."
    fd, temporary = tempfile.mkstemp(prefix=".ptah-", suffix=".tmp", dir=folder)
    os.close(fd)
    try:
        yield temporary
        os.replace(temporary, path)
    finally:
        if os.path.lexists(temporary):
            os.unlink(temporary)


@contextmanager
def replacing(path: str | os.PathLike, label: str | None = None) -> Iterator[str]:
    """A temporary path beside ``path`` (a link followed) whose file replaces ``path`` atomically,
    with the permission bits of the file it replaces, when the block ends; removed if the block
    raises."""
    raw = os.fspath(path)
    label = label or _label(raw, None)
    found = _looked_at(raw, label)
    target = os.path.realpath(raw)
    try:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        fd, temporary = tempfile.mkstemp(
            prefix=".ptah-", suffix=".tmp", dir=os.path.dirname(target)
        )
        os.close(fd)
    except OSError as exc:
        raise _unwritable(label, exc) from None
    try:
        yield temporary
        os.chmod(temporary, stat.S_IMODE(found.st_mode) if found else 0o666 & ~_umask())
        os.replace(temporary, target)
    except OSError as exc:
        raise _unwritable(label, exc) from None
    finally:
        if os.path.lexists(temporary):
            os.unlink(temporary)


def _umask() -> int:
    mask = os.umask(0o022)  # the umask can only be read by setting it; restored at once
    os.umask(mask)
    return mask


def write_text_atomically(path: str | os.PathLike, text: str, *, option: str | None = None) -> None:
    """Write ``text`` (UTF-8) to ``path`` by the rules of the module docs; ``option`` prefixes
    messages."""
    write_pieces_atomically(path, (text,), option=option)


def write_pieces_atomically(
    path: str | os.PathLike, pieces: Iterable[str], *, option: str | None = None
) -> None:
    """:func:`write_text_atomically` of ``"".join(pieces)``, encoded and written as the pieces come.
    An exception raised by ``pieces`` propagates, and a replaced file then keeps its earlier
    content."""
    raw = os.fspath(path)
    label = _label(raw, option)
    found = _looked_at(raw, label)
    if found is not None and not stat.S_ISREG(found.st_mode):
        return _write_through(raw, pieces, label)
    with (
        replacing(raw, label) as temporary,
        open(temporary, "w", encoding="utf-8", newline="", buffering=_BUFFER) as handle,
    ):
        handle.writelines(pieces)
        handle.flush()
        os.fsync(handle.fileno())


@hookimpl
def register_writers(register: Callable) -> None:
    """The writer ``Report.save`` writes a file with (:mod:`ptah.core.formats`)."""
    register(Writer(FILE, write_pieces_atomically))


def _write_through(raw: str, pieces: Iterable[str], label: str) -> None:
    """Write into the device or FIFO at ``raw``, never replacing it; a FIFO without a reader is
    refused."""
    try:
        fd = os.open(raw, os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise OutputRefused(
                f"{label}: is a FIFO that no process is reading; start its reader first, "
                "or give the path of a file"
            ) from None
        raise _unwritable(label, exc) from None
    os.set_blocking(fd, True)
    try:
        with open(fd, "w", encoding="utf-8", newline="") as handle:
            handle.writelines(pieces)
    except OSError as exc:
        raise _unwritable(label, exc, tail="") from None


def append_text(
    path: str | os.PathLike, text: str, *, limit: int = STEP_SUMMARY_LIMIT, label: str | None = None
) -> None:
    """Append ``text`` (UTF-8) to the regular file ``path`` (created if missing; GitHub's step
    summary), refused (exit 2) for anything else or when the file would pass ``limit`` bytes."""
    raw = os.fspath(path)
    label = label or _label(raw, None)
    data = text.encode("utf-8")
    try:
        found = os.stat(raw)
        if not stat.S_ISREG(found.st_mode):
            raise OutputRefused(
                f"{label}: is {kind_of(found.st_mode)}; ptah appends only to a regular file"
            )
    except OSError:
        pass  # nothing there yet: created below, or the open says what is wrong
    try:
        with open(raw, "ab") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size + len(data) > limit:
                raise OutputRefused(
                    f"{label}: holds {size:,} bytes; {len(data):,} more would pass its limit "
                    f"of {limit:,}"
                )
            handle.write(data)
    except OSError as exc:
        raise _unwritable(label, exc, tail="") from None
