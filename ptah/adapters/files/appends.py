"""Appending text to a file another program owns: GitHub's step summary (``$GITHUB_STEP_SUMMARY``).

What is at the path decides, looked at without following a link:

* **a regular file**: opened with ``O_APPEND | O_NOFOLLOW`` and checked to be
  the very file that was looked at (same device and inode), then the text is
  appended in one write;
* **nothing**: created (``O_CREAT | O_EXCL | O_NOFOLLOW``, so a file or link
  planted at the name meanwhile is never opened), then written;
* **anything else** -- a symbolic link, a folder, a device, a FIFO: refused
  (:class:`~ptah.core.errors.OutputRefused`); ptah never appends through a
  link, since the step summary GitHub makes is a plain file.

Bounded: the text is refused when the file would then exceed ``limit`` bytes
(GitHub shows at most 1 MiB of a step's summary). A failed write is
:class:`~ptah.core.errors.OutputUnwritable`.
"""

from __future__ import annotations

import os
import stat

from ptah.adapters.files.reads import kind_of
from ptah.core.errors import OutputRefused, OutputUnwritable

STEP_SUMMARY_LIMIT = 1024 * 1024


def append_text(path: str | os.PathLike, text: str, *, limit: int = STEP_SUMMARY_LIMIT, label: str | None = None) -> None:
    """Append ``text`` (UTF-8) to ``path`` by the rules of the module docs."""
    raw = os.fspath(path)
    label = label or raw or '""'
    folder, name = os.path.split(raw)
    if name in ("", ".", ".."):
        raise OutputRefused(f"{label}: names no file to append to")
    data = text.encode("utf-8")
    try:
        dir_fd = os.open(folder or ".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise OutputUnwritable(f"{label}: cannot be opened ({exc.strerror or exc})") from None
    try:
        fd = _open(dir_fd, name, label)
        try:
            size = os.fstat(fd).st_size
            if size + len(data) > limit:
                raise OutputRefused(f"{label}: holds {size:,} bytes; {len(data):,} more would pass its limit of {limit:,}")
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        except OSError as exc:
            raise OutputUnwritable(f"{label}: cannot be written ({exc.strerror or exc})") from None
        finally:
            os.close(fd)
    finally:
        os.close(dir_fd)


def _open(dir_fd: int, name: str, label: str) -> int:
    flags = os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY | os.O_NONBLOCK
    try:
        found = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        found = None
    except OSError as exc:
        raise OutputUnwritable(f"{label}: cannot be looked at ({exc.strerror or exc})") from None
    if found is not None and not stat.S_ISREG(found.st_mode):
        raise OutputRefused(f"{label}: is {kind_of(found.st_mode)}; ptah appends only to a regular file, never through a link")
    try:
        fd = os.open(name, flags | (os.O_CREAT | os.O_EXCL if found is None else 0), 0o644, dir_fd=dir_fd)
    except OSError as exc:
        raise OutputUnwritable(f"{label}: cannot be opened ({exc.strerror or exc})") from None
    now = os.fstat(fd)
    if found is not None and (now.st_dev, now.st_ino) != (found.st_dev, found.st_ino) or not stat.S_ISREG(now.st_mode):
        os.close(fd)
        raise OutputRefused(f"{label}: changed while it was being opened; nothing was appended")
    return fd
