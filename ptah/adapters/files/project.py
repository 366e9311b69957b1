"""Several files written into one project folder, never through a link inside it.

The project folder itself is the user's to name (it may be a link). Every
folder and file below it is opened relative to its parent with
``O_NOFOLLOW``, so a link inside the project (``corpora/`` pointing
elsewhere) is refused (exit 2, :class:`OutputRefused`) and nothing is written
outside the project. Only regular files, or new paths, are replaced there, by
the rules of :mod:`ptah.adapters.files.writes` (atomically, through an
unpredictable temporary name, permission bits kept, a read-only file
refused); a FIFO, device or socket inside a project is refused too.
:func:`check_project_files` refuses before anything is written.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from pathlib import Path
from typing import Iterable

from ptah.adapters.files.reads import kind_of
from ptah.adapters.files.writes import decide, move_at, unwritable, write_at
from ptah.core.errors import OutputRefused

_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_INNER_FOLDER = _FOLDER | os.O_NOFOLLOW


def _not_a_folder(found: os.stat_result, label: str) -> OutputRefused:
    if stat.S_ISLNK(found.st_mode):
        decide(found, label, devices=False, followed=None, writable=None)  # raises the link refusal
    return OutputRefused(f"{label}: is {kind_of(found.st_mode)}, not a folder; remove it or choose another folder")


def check_project_files(root: str | os.PathLike, relatives: Iterable[str]) -> None:
    """Refuse (exit 2) before writing when a file or folder of ``relatives`` under ``root`` could not be written safely."""
    root = Path(root)
    for relative in relatives:
        path = root
        parts = Path(relative).parts
        for depth, part in enumerate(parts):
            path = path / part
            try:
                found = os.lstat(path)
            except OSError:
                break  # nothing there yet (or the write will say what is wrong)
            if depth < len(parts) - 1:
                if not stat.S_ISDIR(found.st_mode):
                    raise _not_a_folder(found, str(path))
            else:
                decide(found, str(path), devices=False, followed=None, writable=lambda: os.access(path, os.W_OK))


class ProjectFolder:
    """The open project folder; files are written into it by relative path (see the module docs).

    Use as a context manager: leaving it removes the private scratch folder
    (:meth:`scratch_path`) with whatever is left in it.
    """

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        try:
            self._fd = os.open(self.root, _FOLDER)
        except OSError as exc:
            raise unwritable(str(self.root), exc) from None
        self._scratch: str | None = None

    def __enter__(self) -> "ProjectFolder":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def write_text(self, relative: str, text: str) -> None:
        """Write ``text`` (UTF-8) at ``relative``, creating its folders, never through a link."""
        dir_fd, name, label = self._folder_of(relative)
        try:
            write_at(dir_fd, name, text.encode("utf-8"), label, devices=False)
        finally:
            self._release(dir_fd)

    def scratch_path(self, name: str) -> Path:
        """A path in a private folder (mode 0700, unpredictable name) inside the project, for :meth:`move_in`."""
        if self._scratch is None:
            scratch = f".ptah-{secrets.token_hex(16)}.d"
            try:
                os.mkdir(scratch, 0o700, dir_fd=self._fd)
            except OSError as exc:
                raise unwritable(str(self.root), exc) from None
            self._scratch = scratch
        return self.root / self._scratch / name

    def move_in(self, name: str, relative: str) -> None:
        """Move the file ``name`` of the scratch folder to ``relative``, by the same rules as :meth:`write_text`."""
        dir_fd, target, label = self._folder_of(relative)
        try:
            scratch_fd = os.open(self._scratch, _INNER_FOLDER, dir_fd=self._fd)
            try:
                move_at(scratch_fd, name, dir_fd, target, label)
            finally:
                os.close(scratch_fd)
        except OSError as exc:
            raise unwritable(label, exc) from None
        finally:
            self._release(dir_fd)

    def close(self) -> None:
        """Remove the scratch folder and what is left in it; close the project folder."""
        if self._scratch is not None:
            try:
                scratch_fd = os.open(self._scratch, _INNER_FOLDER, dir_fd=self._fd)
                try:
                    for leftover in os.listdir(scratch_fd):
                        os.unlink(leftover, dir_fd=scratch_fd)
                finally:
                    os.close(scratch_fd)
                os.rmdir(self._scratch, dir_fd=self._fd)
            except OSError:
                pass
            self._scratch = None
        os.close(self._fd)

    def _release(self, dir_fd: int) -> None:
        if dir_fd != self._fd:
            os.close(dir_fd)

    def _folder_of(self, relative: str) -> tuple[int, str, str]:
        """An open descriptor on the folder of ``relative`` (created, never through a link), its file name, its label."""
        *folders, name = Path(relative).parts
        fd, path = self._fd, self.root
        try:
            for part in folders:
                path = path / part
                try:
                    inner = os.open(part, _INNER_FOLDER, dir_fd=fd)
                except FileNotFoundError:
                    os.mkdir(part, dir_fd=fd)
                    inner = os.open(part, _INNER_FOLDER, dir_fd=fd)
                except OSError as exc:
                    if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                        raise
                    raise _not_a_folder(os.stat(part, dir_fd=fd, follow_symlinks=False), str(path)) from None
                self._release(fd)
                fd = inner
        except OSError as exc:
            self._release(fd)
            raise unwritable(str(path), exc) from None
        except OutputRefused:
            self._release(fd)
            raise
        return fd, name, str(path / name)
