"""The lexical channel: BM25 (:mod:`ptah.adapters.lexical`) over the text a generation's template
renders.

It needs no model and never imports torch: only the template is read from the
generation, which need not have been built. Its index is kept in the store
(a store whose ``capabilities.lexical_index`` is true) and rebuilt only when
the text fingerprint -- SHA-256 over the sorted (row identity, text SHA-256)
pairs -- or the tokenizer, BM25 parameters or bm25s version change. A row the
query does not match at all (a BM25 score of 0) is not a result.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, cast

from ptah.core.errors import CapabilityUnavailable
from ptah.core.parts import RunGeneration, Search, Verification, read_only
from ptah.core.provenance import text_digest
from ptah.core.ranking import key_columns, query_blocks
from ptah.core.report import CaseResult, Run, make_run
from ptah.core.request import LEXICAL
from ptah.services.channels.base import RunPlan, Sides, measure_scores

if TYPE_CHECKING:
    from ptah.adapters import lexical
    from ptah.adapters.stores.base import LexicalIndexStore


@dataclass
class LexicalSide:
    """A template's lexical index, loaded or built once per evaluation: what describes it (a run's
    ``generation``, but for its name), its keys and the index."""

    generation: RunGeneration
    keys: list[str]
    index: lexical.LexicalIndex


class LexicalChannel:
    name = LEXICAL
    needs_vectors = False

    def measure(self, plan: RunPlan, sides: Sides) -> Run:
        template = sides.project.spec.generation(plan.generation).template(
            sides.project.spec.source
        )
        side = lexical_side(sides, plan.generation)
        results = sides.once(("lexical results", template), lambda: _results(sides, side))
        generation = replace(side.generation, name=plan.name, text_of=plan.generation)
        search = Search(LEXICAL, "exact", "bm25")
        return make_run(generation, search, results, sides.measures)


def lexical_side(sides: Sides, name: str) -> LexicalSide:
    """The lexical side of generation ``name``'s template, made the first time any run asks for
    it."""
    settings = sides.project.spec.generation(name)
    template = settings.template(sides.project.spec.source)
    return sides.once(("lexical", template), lambda: _index(sides, template))


def _results(sides: Sides, side: LexicalSide) -> list[CaseResult]:
    clock = time.perf_counter()
    cases = sides.corpus.cases
    queries = [case.query for case in cases]
    columns = key_columns(side.keys)
    results = [
        result
        for start, stop in query_blocks(len(queries), len(side.keys))
        for result in measure_scores(
            cases[start:stop],
            side.keys,
            columns,
            side.index.scores(queries[start:stop]),
            sides.measures,
            matched_only=True,
        )
    ]
    sides.charge("lexical_search", clock)
    return results


def _index(sides: Sides, template: str) -> LexicalSide:
    """The lexical index of the template's text (loaded from the store or built and kept there)."""
    from ptah.adapters import (
        lexical,
    )  # here, not at import: a vector-only evaluate never needs it (zipfile, metadata)

    project = sides.project
    clock = time.perf_counter()
    rows = sorted(project.source.rows(template), key=lambda row: row.identity)
    fingerprint = lexical.text_fingerprint((row.identity, text_digest(row.text)) for row in rows)
    values = lexical.settings()
    key = lexical.settings_key(values)
    if not project.store_capabilities.lexical_index:
        raise CapabilityUnavailable("this store cannot keep a lexical index; use a SQLite store")
    store = cast("LexicalIndexStore", project.store(create=True))  # the capability, checked above
    blob = store.lexical_index(fingerprint, key)
    reused = blob is not None
    if blob is not None:
        index = lexical.LexicalIndex.from_bytes(
            blob,
            store.where,
            lexical.unpacked_limit([row.key for row in rows], [row.text for row in rows]),
        )
    else:
        index = lexical.build_index(
            [row.key for row in rows], [row.text for row in rows], fingerprint
        )
        template_sha256 = hashlib.sha256(template.encode("utf-8")).hexdigest()
        store.save_lexical_index(
            fingerprint, key, template_sha256, len(rows), index.vocabulary, index.to_bytes()
        )
    sides.charge("lexical_index", clock)
    sides.check_keys(set(index.keys))
    identity = (
        "sha256:"
        + hashlib.sha256(
            json.dumps(
                {"fingerprint": fingerprint, "settings": values},
                sort_keys=True,
                separators=(",", ":"),
            ).encode()
        ).hexdigest()
    )
    generation = RunGeneration(
        name="",  # the run's, set by each run that reads this side
        identity=identity,
        model=f"bm25 ({values['method']}, k1={values['k1']}, b={values['b']})",
        settings=read_only({"text": template, **values}),
        dimension=index.vocabulary,
        rows=len(index.keys),
        model_digest=None,
        versions=read_only({"bm25s": values["version"]}),
        verification=Verification(read_only({}), True, False, fingerprint),
        index=read_only({"fingerprint": fingerprint, "reused": reused}),
    )
    return LexicalSide(generation, index.keys, index)
