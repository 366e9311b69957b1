"""Installed distributions read without importlib.metadata say what importlib.metadata says (its answers are the
oracle): every installed distribution's version, absent ones, odd METADATA files, and who may declare a group."""

from __future__ import annotations

import sys
from importlib import metadata

import pytest

from ptah.adapters.embedders import distributions
from ptah.adapters.embedders.distributions import may_declare, versions
from ptah.adapters.embedders.registry import GROUP
from tests.adapters.test_embedder_registry import install, on_path  # noqa: F401 (the fixture)


def oracle(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def test_every_installed_distribution_has_the_version_importlib_metadata_gives():
    names = {dist.metadata["Name"] for dist in metadata.distributions()}
    spelled = {variant for name in names for variant in (name, name.upper(), name.replace("-", "_"),
                                                         name.replace("-", "."))}
    asked = sorted(spelled | {"no-such-distribution-ptah", "torch", "sentence_transformers", "Transformers"})
    assert len(names) > 20
    assert versions(*asked) == {name: oracle(name) for name in asked}


def test_without_importlib_metadata_for_plain_metadata(monkeypatch):
    """The common case is read from the files: importlib.metadata is not asked."""
    monkeypatch.setattr(distributions, "_metadata_version", lambda name: pytest.fail(f"asked about {name}"))
    assert versions("numpy", "no-such-distribution-ptah") == {"numpy": oracle("numpy"), "no-such-distribution-ptah": None}


METADATA = {
    "plain": "Metadata-Version: 2.1\nName: odd\nVersion: 1.2.3\n\nbody\nVersion: 9\n",
    "lower-case header, spaces kept at the end": "Metadata-Version: 2.1\nname: odd\nversion:\t1.0  \n",
    "folded": "Metadata-Version: 2.1\nName: odd\nVersion: 1.0\n  .post1\n",
    "carriage returns": "Metadata-Version: 2.1\r\nName: odd\r\nVersion: 2.0\r\n",
    "no version": "Metadata-Version: 2.1\nName: odd\n\nVersion: 3\n",
    "a line that ends the headers": "Metadata-Version: 2.1\nnot a header\nVersion: 3\n",
    "a byte order mark": "\ufeffMetadata-Version: 2.1\nName: odd\nVersion: 4\n",
    "non-ASCII": "Metadata-Version: 2.1\nName: odd\nVersion: 5\u00e9\n",
    "empty": "",
    "headers longer than what is read here": "Metadata-Version: 2.1\n" + "X-Pad: " + "p" * 70_000 + "\nVersion: 6\n",
    "a version line cut where the read stops": "Metadata-Version: 2.1\nX-Pad: " + "p" * 65_495 + "\nVersion: 7.123456\n",
}


@pytest.mark.parametrize("text", METADATA.values(), ids=METADATA.keys())
def test_odd_metadata_reads_as_importlib_metadata_reads_it(on_path, text):  # noqa: F811
    info = on_path / "odd-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_bytes(text.encode())
    metadata.FastPath.__new__.cache_clear()  # importlib.metadata keeps each folder's listing by its mtime
    assert versions("odd") == {"odd": oracle("odd")}


def test_an_egg_info_without_metadata_is_read_by_importlib_metadata(on_path):  # noqa: F811
    (on_path / "legacy-0.9.egg-info").mkdir()
    (on_path / "legacy-0.9.egg-info" / "PKG-INFO").write_text("Metadata-Version: 1.0\nName: legacy\nVersion: 0.9\n")
    (on_path / "flat-0.8.egg-info").write_text("Metadata-Version: 1.0\nName: flat\nVersion: 0.8\n")
    metadata.FastPath.__new__.cache_clear()
    assert versions("legacy", "flat") == {"legacy": "0.9", "flat": "0.8"}


def test_what_may_declare_the_group_is_read_by_importlib_metadata(on_path, monkeypatch, tmp_path):  # noqa: F811
    assert may_declare(GROUP) is False
    other = on_path / "other-1.0.dist-info"
    other.mkdir()
    (other / "entry_points.txt").write_text("[console_scripts]\nother = other:main\n")
    (on_path / "old.egg-info").write_text("Metadata-Version: 1.0\n")  # an egg-info file, not a folder
    assert may_declare(GROUP) is False
    (other / "entry_points.txt").write_text("[console_scripts]\n" + "# padding\n" * 7_000)  # too long to read here
    assert may_declare(GROUP) is True
    (other / "entry_points.txt").write_text("[console_scripts]\nother = other:main\n")
    install(on_path, "toy-embedder", "toy = toy_embedder:register", {})
    assert may_declare(GROUP) is True
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(on_path)])
    assert may_declare(GROUP) is False
    archive = tmp_path / "plugins.zip"
    archive.write_bytes(b"PK\x05\x06" + bytes(18))  # an empty zip: a path entry only importlib.metadata reads
    monkeypatch.setattr(sys, "path", [*sys.path, str(archive)])
    assert may_declare(GROUP) is True
    assert distributions.info_folders() is None
    monkeypatch.setattr(sys, "path", sys.path[:-1])

    class Finder:
        def find_distributions(self, context=None):
            return iter(())

    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, Finder()])
    assert may_declare(GROUP) is True
    assert distributions.info_folders() is None
