"""Shared by every test: the test embedders (``model: test/NAME``), the CLI run in-process, the
spec builder, and a cache folder of the test run's own."""

from __future__ import annotations

import functools
import json
from typing import NamedTuple

import pytest

from tests.embedders import EMBEDDERS

DETERMINISTIC = {"docs": {"model": "ptah/deterministic", "dimension": 16}}


@pytest.fixture(scope="session", autouse=True)
def own_cache_folder(tmp_path_factory):
    """``PTAH_CACHE_DIR`` in a folder of this run's: the user's cache is neither read nor written,
    and a run beside another cannot drop its records."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PTAH_CACHE_DIR", str(tmp_path_factory.mktemp("ptah-cache")))
        yield


@pytest.fixture
def embedders():
    """``embedders["test/NAME"] = embedder`` makes generations with ``model: test/NAME`` embed with
    it."""
    EMBEDDERS.clear()
    yield EMBEDDERS
    EMBEDDERS.clear()


class Result(NamedTuple):
    """What ``ptah ARGV`` did: its exit code, its stdout and its stderr."""

    code: int
    out: str
    err: str


def run_cli(capsys, *argv) -> Result:
    """``ptah ARGV`` in this process; ``capsys`` None where nothing captures per test (a module's
    fixture)."""
    from ptah.cli import main

    with pytest.raises(SystemExit) as info:
        main([str(a) for a in argv])
    out, err = capsys.readouterr() if capsys is not None else ("", "")
    return Result(info.value.code, out, err)


@pytest.fixture
def cli(capsys):
    """``cli(*argv)``: ``ptah ARGV`` in this process, a :class:`Result` (code, out, err)."""
    return functools.partial(run_cli, capsys)


def spec_yaml(
    *,
    database="sqlite:///source.db",
    table="articles",
    key_fields=("id",),
    text="{title}\n\n{body}",
    filter=None,
    store=None,
    active="docs",
    generations=None,
) -> str:
    """A ptah.yaml: version 1 (line 1), the source (lines 2-6, then the filter), the store, active,
    generations.

    ``generations`` maps a name to its fields (a dict) or to its YAML body as
    written under the name (a string, later lines indented four spaces);
    values are written as JSON, which YAML reads as they are.
    """
    lines = [
        "version: 1",
        "source:",
        f"  database: {json.dumps(database)}",
        f"  table: {table}",
        f"  key_fields: {json.dumps(list(key_fields))}",
        f"  text: {json.dumps(text)}",
    ]
    if filter is not None:
        lines.append(f"  filter: {json.dumps(filter)}")
    if store is not None:
        lines.append(f"store: {json.dumps(store)}")
    lines += [f"active: {active}", "generations:"]
    for name, fields in (generations or DETERMINISTIC).items():
        lines.append(f"  {name}:")
        if isinstance(fields, str):
            lines.append(f"    {fields}")
        else:
            lines += [f"    {field}: {json.dumps(value)}" for field, value in fields.items()]
    return "\n".join(lines) + "\n"
