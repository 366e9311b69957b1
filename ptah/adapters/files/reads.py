"""Reading an input file with a byte bound that holds for pipes and devices too.

Every file ptah reads as input -- a corpus, the specification, a baseline
report, the BEIR files of an import, the model-files cache -- goes through
:func:`read_bounded` or :func:`open_lines`:

* only a **regular file** is read, after following the path given once. A
  folder, FIFO, character or block device or socket is refused (exit 2) from
  its ``stat``, before it is opened, so a pipe with no writer cannot hang and
  ``/dev/zero`` cannot fill memory. (A file swapped in between the ``stat``
  and the ``open`` is opened with ``O_NONBLOCK`` and checked again.)
* at most a **limit** of bytes: at most LIMIT + 1 bytes are ever read, whatever
  ``st_size`` says, and a file past its limit is refused (exit 2) naming the
  file and the limit. Line-by-line reads bound each line too.
"""

from __future__ import annotations

import fcntl
import os
import stat
from typing import Iterator

from ptah.core.errors import InputError, Problem

_CHUNK = 1 << 20
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
    for test, words in _KINDS:
        if test(mode):
            return words
    return "a regular file" if stat.S_ISREG(mode) else "not a file"


def _refused(message: str, name: str, line: int | None = None) -> InputError:
    problem = Problem(message, path=name, line=line)
    return InputError(str(problem), problems=(problem,))


def _not_regular(mode: int, what: str) -> str:
    return f"is {kind_of(mode)}, not a regular file; give the path of a {what} file"


def _open_regular(path: str | os.PathLike, what: str) -> tuple[int, int]:
    """A descriptor on the regular file at ``path`` and its size; :class:`InputError` (exit 2) otherwise."""
    name = os.fspath(path)
    try:
        before = os.stat(name)
        if stat.S_ISDIR(before.st_mode):
            raise _refused(f"is a directory, not a {what} file", name)
        if not stat.S_ISREG(before.st_mode):
            raise _refused(_not_regular(before.st_mode, what), name)
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise _refused("no such file", name) from None
    except OSError as exc:
        raise _refused(f"cannot be read: {exc.strerror or exc}", name) from None
    opened = os.fstat(fd)
    if not stat.S_ISREG(opened.st_mode):
        os.close(fd)
        raise _refused(_not_regular(opened.st_mode, what), name)
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    return fd, opened.st_size


def _too_big(name: str, what: str, limit: int, size: int | None, hint: str) -> InputError:
    said = f"is {size:,} bytes, more than the {what} limit of {limit:,}" if size is not None else \
        f"holds more than the {what} limit of {limit:,} bytes"
    return _refused(f"the file {said}" + (f"; {hint}" if hint else ""), name)


def read_bounded(path: str | os.PathLike, *, limit: int, what: str, hint: str = "") -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them, else :class:`InputError` (exit 2).

    ``what`` names the kind of file in messages (``corpus``, ``baseline
    report``); ``hint`` is appended to the over-limit message (``split it``).
    """
    name = os.fspath(path)
    fd, size = _open_regular(name, what)
    chunks: list[bytes] = []
    done = 0
    try:
        if size > limit:
            raise _too_big(name, what, limit, size, hint)
        while done <= limit:  # st_size is a hint for the first read, never the bound
            chunk = os.read(fd, min(max(size - done, 0) + _CHUNK, limit + 1 - done))
            if not chunk:
                break
            chunks.append(chunk)
            done += len(chunk)
    except OSError as exc:
        raise _refused(f"cannot be read: {exc.strerror or exc}", name) from None
    finally:
        os.close(fd)
    if done > limit:
        raise _too_big(name, what, limit, None, hint)
    return b"".join(chunks)


class LineFile:
    """The lines of a regular file, each at most ``line_limit`` bytes and all at most ``limit``.

    Open it with :func:`open_lines`; iterate for ``(line number, raw bytes
    with their ending)``; ``size`` is the file's size when opened (for progress).
    """

    def __init__(self, path: str | os.PathLike, *, limit: int, line_limit: int, what: str):
        self.name = os.fspath(path)
        self.limit, self.line_limit, self.what = limit, line_limit, what
        fd, self.size = _open_regular(self.name, what)
        self._handle = os.fdopen(fd, "rb")
        if self.size > limit:
            self.close()
            raise _too_big(self.name, what, limit, self.size, "")

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        done = 0
        number = 0
        while True:
            try:
                raw = self._handle.readline(self.line_limit + 1)
            except OSError as exc:
                raise _refused(f"cannot be read: {exc.strerror or exc}", self.name) from None
            if not raw:
                return
            number += 1
            done += len(raw)
            if len(raw) > self.line_limit:
                raise _refused(f"the line is longer than the {self.what} limit of {self.line_limit:,} bytes for one line",
                               self.name, number)
            if done > self.limit:
                raise _too_big(self.name, self.what, self.limit, None, "")
            yield number, raw

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> "LineFile":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def open_lines(path: str | os.PathLike, *, limit: int, line_limit: int, what: str) -> LineFile:
    """Open the regular file ``path`` for bounded line-by-line reading; :class:`InputError` (exit 2) if it is not one."""
    return LineFile(path, limit=limit, line_limit=line_limit, what=what)
