"""Installed distributions as ``importlib.metadata`` finds them, read without importing it where that is exact.

A warm evaluate asks two things of the installed packages: whether one
declares a ``ptah.embedders`` entry point (:func:`may_declare`) and the
versions of the embedder's libraries for the report's environment
(:func:`versions`). ``importlib.metadata`` answers both by importing itself,
``email`` and friends and reading every distribution: 20-30 ms, a twentieth
of the whole command. Both answers come from the same files -- the
``*.dist-info`` and ``*.egg-info`` folders directly in each ``sys.path``
folder, in path order, then in ``os.listdir`` order -- and are read here with
the same rules; anything those rules do not cover (a zip or an ``.egg`` on
the path, a distribution finder of another kind, a ``METADATA`` that is
missing or whose ``Version`` is not one plain header line) is asked of
``importlib.metadata`` itself. ``tests/adapters/test_distributions.py``
compares both for every installed distribution and for odd ones.
"""

from __future__ import annotations

import os
import re
import sys

_INFO = (".dist-info", ".egg-info")
_READ = 1 << 16  # bytes read of an entry_points.txt or METADATA: more is left to importlib.metadata to judge
_HEADER = re.compile(r"[\041-\071\073-\176]+:")  # a header line as the email parser reads one: NAME:


def _normalized(name: str) -> str:
    """A distribution name as importlib.metadata compares them (PEP 503, dashes as underscores)."""
    return re.sub(r"[-_.]+", "-", name).lower().replace("-", "_")


def info_folders() -> list[tuple[str, str]] | None:
    """``(folder, child)`` for each ``*.dist-info`` or ``*.egg-info`` child of each ``sys.path`` folder, in
    importlib.metadata's search order; None where it also finds distributions elsewhere."""
    from importlib.machinery import PathFinder

    if any(getattr(finder, "find_distributions", None) is not None and finder is not PathFinder
           for finder in sys.meta_path):
        return None
    found = []
    for entry in sys.path:
        if not isinstance(entry, str) or entry.lower().endswith(".egg"):
            return None
        folder = entry or "."
        try:
            children = os.listdir(folder)
        except NotADirectoryError:
            return None  # a zip file: importlib.metadata reads the dist-info folders in it
        except OSError:
            continue  # not there: nothing to find
        found += [(folder, child) for child in children if child.lower().endswith(_INFO)]
    return found


def may_declare(group: str) -> bool:
    """False only where no installed distribution declares an entry point in ``group`` (a distribution whose
    ``entry_points.txt`` merely names it counts as declaring it)."""
    folders = info_folders()
    if folders is None:
        return True
    needle = group.encode()
    for folder, child in folders:
        try:
            with open(os.path.join(folder, child, "entry_points.txt"), "rb") as handle:
                text = handle.read(_READ + 1)
            if needle in text or len(text) > _READ:  # named, or too long to read here: importlib.metadata looks
                return True
        except (FileNotFoundError, NotADirectoryError):  # none, or an egg-info file: no entry points
            continue
        except OSError:
            return True
    return False


def versions(*names: str) -> dict[str, str | None]:
    """``{name: version}`` of installed distributions (``None`` when absent), as ``importlib.metadata.version``
    gives them; imports none of them."""
    folders = info_folders()
    result: dict[str, str | None] = {}
    for name in names:
        version = _version(name, folders) if folders is not None and name else ...
        result[name] = _metadata_version(name) if version is ... else version
    return result


def _version(name: str, folders: list[tuple[str, str]]):
    """The distribution's version, None when it is not installed, ``...`` where importlib.metadata must say."""
    wanted = _normalized(name)
    for folder, child in folders:
        if _normalized(child.lower().rpartition(".")[0].partition("-")[0]) == wanted:
            try:
                with open(os.path.join(folder, child, "METADATA"), encoding="utf-8") as handle:
                    text = handle.read(_READ + 1)
                if len(text) > _READ:  # the headers come first: keep the whole lines read
                    text = text[: text.rfind("\n") + 1]
                return _version_header(text)
            except (OSError, UnicodeDecodeError):  # no METADATA (PKG-INFO, an egg-info file), or unreadable
                return ...
    return None


def _version_header(text: str):
    """The ``Version`` header of a METADATA text where it is one plain line among plain header lines."""
    if "\r" in text:
        return ...
    lines = text.split("\n")
    for index, line in enumerate(lines):
        if not _HEADER.match(line):
            return ...  # the end of the headers (or a line the email parser reads its own way), no Version yet
        name, _, value = line.partition(":")
        if name.lower() == "version":
            following = lines[index + 1] if index + 1 < len(lines) else ""
            if following[:1] in (" ", "\t") or not value.isascii():
                return ...
            return value.lstrip(" \t")
    return ...


def _metadata_version(name: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None
