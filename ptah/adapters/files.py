"""Writing files so that a reader (or a crash) sees the old content or the new, never half of either."""

from __future__ import annotations

import os
from pathlib import Path

from ptah.core.errors import OutputUnwritable


def temporary_path(path: Path) -> Path:
    """A hidden sibling of ``path`` for writing before the rename."""
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def replace_atomically(temporary: Path, path: Path) -> None:
    """Flush ``temporary`` to disk and rename it over ``path`` (one step: readers see old or new)."""
    with open(temporary, "rb+") as handle:
        os.fsync(handle.fileno())
    os.replace(temporary, path)


def write_text_atomically(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` through a temporary sibling and a rename.

    Raises :class:`OutputUnwritable` (exit 3) naming the path when the file
    cannot be written (a folder in the way, no permission, a full disk); an
    earlier file at ``path`` is then left as it was.
    """
    path = Path(path)
    temporary = temporary_path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir():
            raise IsADirectoryError(21, "is a folder")
        with open(temporary, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except OSError as exc:
        raise OutputUnwritable(f"{path}: cannot be written ({exc.strerror or exc}); nothing was written there") from None
    finally:
        if temporary.exists():
            temporary.unlink()
