"""The files a run reads (:func:`run_inputs`), so that a command can refuse an output that names
one of them (:func:`ptah.adapters.files.check_apart`)."""

from __future__ import annotations

import os

from ptah.adapters.judgements_yaml import record_path
from ptah.adapters.stores.registry import DEFAULT as SQLITE_STORE
from ptah.adapters.stores.registry import store_kind
from ptah.core.spec import Spec, sqlite_database_path


def run_inputs(
    spec: Spec | None = None,
    corpus: str | os.PathLike | None = None,
    reports: tuple[tuple[str, str | os.PathLike | None], ...] = (),
) -> list[tuple[str, str]]:
    """The files a run reads, as ``(what, path)`` for :func:`check_apart`: the specification, its
    SQLite source database and store, the corpus and its judgement record (``NAME.judged.yaml``,
    there or not), and ``reports`` (``(what, path)``: the baseline report, the reports a command
    re-reads; a None path left out)."""
    found: list[tuple[str, str]] = []
    if spec is not None:
        found.append(("the specification", spec.path))
        database = sqlite_database_path(spec.source.database, spec.root)
        if database is not None:
            found.append(("the source database", database))
        if store_kind(spec.store) == SQLITE_STORE:
            found.append(("the store", spec.store))
    if corpus is not None:
        found += [
            ("the corpus", os.fspath(corpus)),
            ("the corpus's judgement record", str(record_path(corpus))),
        ]
    found += [(what, os.fspath(report)) for what, report in reports if report is not None]
    return found
