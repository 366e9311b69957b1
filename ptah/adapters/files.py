"""Writing files so that a reader (or a crash) sees the old content or the new, never half of either."""

from __future__ import annotations

import os
from pathlib import Path


def temporary_path(path: Path) -> Path:
    """A hidden sibling of ``path`` for writing before the rename."""
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def replace_atomically(temporary: Path, path: Path) -> None:
    """Flush ``temporary`` to disk and rename it over ``path`` (one step: readers see old or new)."""
    with open(temporary, "rb+") as handle:
        os.fsync(handle.fileno())
    os.replace(temporary, path)


def write_text_atomically(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` through a temporary sibling and a rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = temporary_path(path)
    try:
        with open(temporary, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    finally:
        if temporary.exists():
            temporary.unlink()
