"""Corpora registered with ``ptah serve``: kept in the store by digest, immutable, split
development/test.

Registering reads the uploaded YAML with the same loader and limits as a
corpus file (:func:`ptah.adapters.corpus_yaml.parse_corpus`; its problems
carry their line numbers). A corpus is kept under its digest: the exact
bytes first registered (``corpus_text/DIGEST``), what the listings show
(``corpus/DIGEST``) and its query texts (``corpus_queries/DIGEST``, for the
leakage check). Content with a digest already registered is not stored
again; nothing registered is ever changed or deleted.

Splits. A corpus may be registered as ``development`` or ``test``. A test
corpus that shares a query text with a development corpus of the project
(or the reverse) is refused: tuning on the development corpus would leak
into the test verdict. Queries are compared normalised (:func:`query_form`:
default-ignorable code points such as U+200B dropped, Unicode NFKC,
case-folded, whitespace collapsed and stripped), so a trailing space, a
no-break space, a zero-width space or soft hyphen, another case or another
Unicode form of the same query does not get it past the check.
"""

from __future__ import annotations

import json
import re
import threading
import unicodedata
from dataclasses import replace
from datetime import UTC, datetime

from ptah import Corpus, InputError, Spec
from ptah.core.errors import StoreDamaged
from ptah.core.visible import abbreviated

SPLITS = ("development", "test")
UPLOAD_NAME = "corpus"  # how problems name the uploaded text: corpus:LINE: …
_REGISTERING = threading.Lock()  # the leakage check and the write are one step in a server


class CorpusConflict(InputError):
    """Registering would break a rule of registered corpora (leakage across splits, a split
    changed)."""


# Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt, Unicode 15.1): characters shown
# as nothing -- zero-width space and joiners, soft hyphen, word joiner, U+FEFF, bidi controls,
# variation selectors, tags -- so a query holding one reads the same as one without it.
DEFAULT_IGNORABLE = (
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)
_IGNORABLE = re.compile(
    "[" + "".join(f"{chr(low)}-{chr(high)}" for low, high in DEFAULT_IGNORABLE) + "]"
)


def query_form(query: str) -> str:
    """A query as the leakage check compares it: default-ignorable code points dropped (before NFKC,
    so that what they separated composes as it would have), NFKC, case-folded, runs of whitespace
    one space, stripped."""
    return " ".join(unicodedata.normalize("NFKC", _IGNORABLE.sub("", query)).casefold().split())


def open_records(spec: Spec):
    """The record store beside the project's store (created when absent): tokens, corpora,
    evaluations; refused (exit 2) in the source's database unless the store names a schema of its
    own, as the servers tell."""
    from ptah.adapters.spec_yaml import refuse_store_in_source
    from ptah_serve.records import open_records as open_store_records

    refuse_store_in_source(spec)
    return open_store_records(spec.store)


def parse_corpus(data: bytes) -> Corpus:
    """Uploaded YAML read as a corpus file is; CorpusError (exit 2) lists every problem with its
    line."""
    from ptah.adapters.corpus_yaml import parse_corpus as parse

    return parse(data, name=UPLOAD_NAME)


def register_corpus(records, data: bytes, split: str | None = None) -> tuple[bool, dict]:
    """Register uploaded corpus bytes: ``(created, description)``; ``created`` is False when its
    digest was registered already (nothing stored). CorpusError for an invalid corpus,
    CorpusConflict as the module says."""
    if split is not None and split not in SPLITS:
        raise InputError(f"split must be development or test, not {abbreviated(repr(split))}.")
    corpus = parse_corpus(data)
    with _REGISTERING:
        return _register(records, corpus, data, split)


def _register(records, corpus: Corpus, data: bytes, split: str | None) -> tuple[bool, dict]:
    existing = corpus_info(records, corpus.digest)
    if existing is not None:
        if split is not None and existing["split"] != split:
            raise CorpusConflict(
                f"corpus {corpus.digest} is registered already with split "
                f"{existing['split'] or 'none'}; a registered corpus never changes."
            )
        return False, existing
    queries = sorted({query_form(case.query) for case in corpus.cases})
    if split is not None:
        _check_leakage(records, split, set(queries))
    info = {
        "digest": corpus.digest,
        "name": corpus.name,
        "cases": len(corpus.cases),
        "split": split,
        "bytes": len(data),
        "registered_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    records.put("corpus_text", corpus.digest, data.decode("utf-8"))
    records.put("corpus_queries", corpus.digest, json.dumps(queries, ensure_ascii=False))
    if not records.add("corpus", corpus.digest, json.dumps(info, ensure_ascii=False)):
        found = corpus_info(records, corpus.digest)  # registered meanwhile by another request
        assert found is not None, "corpora are never unregistered"
        return False, found
    return True, info


def _check_leakage(records, split: str, queries: set[str]) -> None:
    other = "development" if split == "test" else "test"
    for info in list_corpora(records):
        if info["split"] != other:
            continue
        registered = json.loads(records.get("corpus_queries", info["digest"]) or "[]")
        shared = queries.intersection(
            query_form(query) for query in registered
        )  # kept raw by an earlier ptah
        if shared:
            first = min(shared)
            raise CorpusConflict(
                f"this {split} corpus shares {len(shared):,} query text(s) with the {other} corpus "
                f"{info['digest']}, such as {abbreviated(repr(first))}: a query may not cross splits."
            )


def corpus_info(records, digest: str) -> dict | None:
    """What the listings show of a registered corpus, or None."""
    body = records.get("corpus", digest)
    return None if body is None else json.loads(body)


def list_corpora(records) -> list[dict]:
    """Every registered corpus, in the order registered."""
    return [json.loads(body) for _, body in records.items("corpus")]


def registered_corpus(records, digest: str) -> Corpus | None:
    """The registered corpus with this digest, read back from its stored bytes; None when
    unregistered, and StoreDamaged when those bytes no longer have that digest (the record was
    changed outside ptah). Its ``path`` (what reports and messages name it by) is
    :func:`registered_label`, and it has no file (``has_file``): no command can be given one."""
    text = records.get("corpus_text", digest)
    if text is None:
        return None
    try:
        corpus: Corpus | None = parse_corpus(text.encode("utf-8"))
    except InputError:
        corpus = None
    if (
        corpus is None or corpus.digest != digest
    ):  # a record is kept under the digest of what it holds
        raise StoreDamaged(
            f"the store is damaged: the corpus registered as {digest} now reads as "
            f"{'no corpus' if corpus is None else corpus.digest}, so its record was changed outside "
            "ptah; register the corpus again as a new one."
        )
    return replace(corpus, path=registered_label(corpus.name, corpus.digest), has_file=False)


def registered_label(name: str | None, digest: str) -> str:
    """How a registered corpus is named where a file's path would be: ``support
    (sha256:0123456789ab…)``."""
    return f"{name or 'unnamed'} ({digest[:19]}…)"
