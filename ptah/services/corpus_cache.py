"""A corpus parsed once per content: the project's store remembers each parse by the file's SHA-256.

Reading a corpus is the largest single cost of a warm evaluate after the
interpreter's start: ruamel.yaml composes YAML in pure Python (about 0.08 s
for SciFact's 300 cases, benchmarks/RESULTS.md), every time, for a file that
rarely changes between runs. The result of a parse is a pure function of two
things, so it is kept under a key made of both:

* the file's bytes (read bounded, as the loader reads them), and
* the loader's own code -- the source of :mod:`ptah.adapters.corpus_yaml`,
  :mod:`ptah.adapters.yaml_nodes` and :mod:`ptah.core.corpus` -- so that any
  change to how a corpus is read or validated makes a new key, never a stale
  parse.

Only a corpus that passed validation is kept; a file with problems is parsed
(and refused) every time, with the loader's messages. The record holds the
validated cases as JSON and is trusted exactly as much as the store that holds
it, like the cached query vectors beside it. A record that cannot be read back
is ignored and replaced. Nothing is cached when the project has no store yet
(reading a corpus never creates one) or its kind keeps no records.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from ptah.core.corpus import MAX_FILE_BYTES, Case, Corpus
from ptah.core.errors import InputError, PtahError

if TYPE_CHECKING:
    from ptah.services.project import Project

KIND = "corpus-parse"
_LOADER_MODULES = ("ptah.adapters.corpus_yaml", "ptah.adapters.yaml_nodes", "ptah.core.corpus")
_loader_digest: str | None = None


def load_corpus_cached(project: Project, path: str | os.PathLike) -> Corpus:
    """The corpus at ``path``, as :func:`ptah.services.documents.load_corpus` reads it, parsed at most once per
    content and loader (see the module's docs); its judgement record is read every time."""
    from ptah.adapters.files import read_bounded
    from ptah.adapters.judgements_yaml import read_record
    from ptah.services.documents import load_corpus

    try:
        data = read_bounded(path, limit=MAX_FILE_BYTES, what="corpus", hint="split it")
        records = _records(project)
    except InputError:
        return load_corpus(path)  # the loader refuses it, in its own words
    if records is None:
        return load_corpus(path)
    try:
        key = hashlib.sha256(_loader().encode() + b"\0" + data).hexdigest()
        corpus = _from_record(_get(records, key), path)
        if corpus is None:
            from ptah.adapters.corpus_yaml import parse_corpus

            corpus = parse_corpus(data, name=os.fspath(path))
            try:
                records.put(KIND, key, _to_record(corpus))
            except PtahError:  # a read-only or busy store: the parse is simply not kept
                pass
    finally:
        records.close()
    record = read_record(path)
    return corpus.with_judgements(record) if len(record) else corpus


def _records(project: Project):
    if not project.store_capabilities.records or project.store() is None:
        return None
    from ptah.adapters.stores.registry import open_records

    try:
        return open_records(project.spec.store)
    except PtahError:
        return None


def _get(records, key: str) -> str | None:
    try:
        return records.get(KIND, key)
    except PtahError:  # the store's own trouble is reported by what reads it next, not by the corpus
        return None


def _loader() -> str:
    """The SHA-256 of the loader's source files, read once per process."""
    global _loader_digest
    if _loader_digest is None:
        import importlib

        digest = hashlib.sha256()
        for name in _LOADER_MODULES:
            digest.update(Path(importlib.import_module(name).__file__).read_bytes())
        _loader_digest = digest.hexdigest()
    return _loader_digest


def _to_record(corpus: Corpus) -> str:
    cases = [
        {"id": case.id, "query": case.query, "k": case.k, "required": list(case.required),
         "relevant": [[key, grade] for key, grade in case.relevant.items()], "forbidden": list(case.forbidden),
         "line": case.line}
        for case in corpus.cases
    ]
    document = {"name": corpus.name, "description": corpus.description, "default_k": corpus.default_k,
                "cases": cases}
    return json.dumps(document, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def _from_record(body: str | None, path: str | os.PathLike) -> Corpus | None:
    """The corpus a record holds, or None when there is none or it does not read back as one."""
    if body is None:
        return None
    try:
        document = json.loads(body)
        cases = tuple(
            Case(id=case["id"], query=case["query"], k=case["k"], required=tuple(case["required"]),
                 relevant={key: grade for key, grade in case["relevant"]}, forbidden=tuple(case["forbidden"]),
                 line=case["line"])
            for case in document["cases"]
        )
        return Corpus(cases=cases, name=document["name"], description=document["description"],
                      default_k=document["default_k"], path=os.fspath(path))
    except (ValueError, TypeError, KeyError):
        return None
