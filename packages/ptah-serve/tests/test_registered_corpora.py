"""A corpus registered with the server whose stored text no longer has its digest is damage, never
evaluated; a registered corpus has no file, so no command names one."""

from __future__ import annotations

import pytest

from ptah.core.errors import StoreDamaged
from ptah_serve.corpora import parse_corpus, register_corpus, registered_corpus
from ptah_serve.records import open_records

CORPUS = """\
version: 1
name: support
default_k: 3
cases:
  - {id: cancel, query: cancel a subscription, relevant: {"1": 1}}
  - {id: invoices, query: export invoices as PDF, relevant: {"3": 1}}
"""


@pytest.mark.parametrize(
    "tampered",
    [CORPUS.replace('"1": 1', '"8": 1'), "cases: [unclosed"],
    ids=["another-relevant-row", "not-yaml"],
)
def test_a_registered_corpus_whose_stored_text_was_changed_is_never_evaluated(tmp_path, tampered):
    """The server keeps each registered corpus's text under its digest; text that no longer has it
    is damage."""
    records = open_records(str(tmp_path / "ptah.db"))
    try:
        created, info = register_corpus(records, CORPUS.encode())
        assert created and registered_corpus(records, info["digest"]).digest == info["digest"]
        records.put("corpus_text", info["digest"], tampered)
        with pytest.raises(StoreDamaged) as raised:
            registered_corpus(records, info["digest"])
    finally:
        records.close()
    found = "no corpus" if tampered.startswith("cases") else parse_corpus(tampered.encode()).digest
    assert str(raised.value) == (
        f"the store is damaged: the corpus registered as {info['digest']} now reads as "
        f"{found}, so its record was changed outside ptah; register the corpus again as a "
        "new one."
    )


def test_a_registered_corpus_is_named_by_its_label_and_has_no_file(tmp_path):
    records = open_records(str(tmp_path / "ptah.db"))
    try:
        _, info = register_corpus(records, CORPUS.encode())
        corpus = registered_corpus(records, info["digest"])
    finally:
        records.close()
    assert (corpus.path, corpus.has_file) == (f"support ({info['digest'][:19]}\u2026)", False)
