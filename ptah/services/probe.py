"""The probe against a silent change of a service's model, and what a service was asked.

A model served behind a name can change without its name changing. At build,
an embedder that offers a probe (:func:`ptah.adapters.embedders.base.probe_of`:
the ``openai`` kind) embeds a fixed text; the vector, its SHA-256 and the model
name the server answered with are kept with the generation's record, in its
settings under ``"probe"`` (so no store migration: the reports' ``settings``
leave it out, see :func:`report_settings`). A later build that embeds checks
the kept probe first and refuses (exit 3, no override) when it fails, so one
generation never holds two models' vectors; it keeps the first probe.
``ptah inference search`` on a query the cache lacks checks it too
(:func:`checked_embedder`).

A cold evaluation (one that must embed queries, so asks the server anyway)
embeds the probe again and refuses (:class:`ProbeMismatch`, exit 3;
``--allow-stale`` measures anyway, the report saying the probe failed) when
the server names another model than at build or the cosine of the two probe
vectors is below :data:`TOLERANCE`. A warm evaluation asks nothing: its report
says the probe was not checked.

:data:`TOLERANCE` is 0.999. Measured: MiniLM through the test server
(sentence-transformers, float32, CPU) gives the probe a cosine of exactly 1.0
with itself, alone or batched with longer texts (padding moves no value by
more than 1e-7). Hosted services do not promise bit-identical vectors from one
request to the next (batching and hardware differ), so exact equality would
refuse a model that did not change; 0.999 leaves that numeric noise room
while a different model, or a retrained one, moves the vector far more.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

import numpy as np

from ptah.adapters.embedders.base import probe_of
from ptah.core.errors import Said, StaleGeneration, Words, capital
from ptah.core.visible import visible

TOLERANCE = 0.999
_KEY = "probe"


class ProbeMismatch(StaleGeneration):
    """The service's model no longer answers the probe as it did at build (exit 3; ``--allow-stale``
    measures)."""


def stored_probe(settings: Mapping) -> dict | None:
    """The probe kept with a generation's record settings, or None."""
    probe = settings.get(_KEY)
    return probe if isinstance(probe, dict) else None  # settings are read from JSON


def report_settings(settings: Mapping) -> dict:
    """A record's settings as reports show them: without the probe's vector."""
    return {name: value for name, value in settings.items() if name != _KEY}


def probe_for_build(embedder, previous: Mapping, name: str = "") -> dict | None:
    """The probe to keep with the record: the one kept already, else the embedder's now (None when
    it has none).

    A build that embeds into a generation holding a probe checks it first:
    vectors of two models in one generation would rank nonsense, so a failed
    check is :class:`ProbeMismatch` (exit 3) before anything is written, with
    no override.
    """
    kept = stored_probe(previous)
    if kept is not None:
        check(name, previous, embedder, allow_stale=False, advice=build_advice)
        return dict(kept)
    probe = probe_of(embedder)
    if probe is None:
        return None
    vector = np.asarray(probe["vector"], dtype=np.float32)
    return {
        "model": probe["model"],
        "sha256": hashlib.sha256(vector.tobytes()).hexdigest(),
        "vector": [float(value) for value in vector],
    }


def from_empty(words: Words) -> str:
    """What makes a generation whose probe failed whole again."""
    return f"build it again from empty (undeclare it, {words.prune()}, declare it again)"


def measure_advice(words: Words) -> str:
    return (
        f"To measure it as it is now, {from_empty(words)}; or pass "
        f"{words.option('allow_stale', True)} to measure it anyway."
    )


def search_advice(words: Words) -> str:
    return f"Nothing was searched; {from_empty(words)}."


def build_advice(words: Words) -> str:
    return (
        "Embedding more rows now would mix two models' vectors in one generation, so nothing was "
        f"embedded; {from_empty(words)}."
    )


def checked_embedder(project, generation, store):
    """``generation``'s embedder, its probe checked first against the one ``store`` keeps (exit 3 on
    a failure).

    For ``ptah inference search`` on a query the cache lacks: the query would
    otherwise be embedded by a model that may not be the one that made the rows.
    """
    embedder = project.embedder(generation.settings)
    record = store.generation(generation.identity.identity) if store is not None else None
    if record is not None:
        check(generation.name, record.settings, embedder, allow_stale=False, advice=search_advice)
    return embedder


def check(
    name: str, settings: Mapping, embedder, *, allow_stale: bool, advice: Said = measure_advice
) -> dict | None:
    """Embed the probe again and hold it against the stored one; the report's record of the check.

    None for an embedder that offers no probe (local models: their reports
    stay as they were). Raises :class:`ProbeMismatch` on a failed check
    unless ``allow_stale``.
    """
    kept = stored_probe(settings)
    probe = probe_of(embedder) if kept is not None else None
    if kept is None or probe is None:
        return None
    stored_vector = np.asarray(kept["vector"], dtype=np.float64)
    vector = np.asarray(probe["vector"], dtype=np.float64)
    norms = float(np.linalg.norm(stored_vector) * np.linalg.norm(vector))
    cosine = (
        float(stored_vector @ vector / norms)
        if vector.shape == stored_vector.shape and norms > 0
        else 0.0
    )
    same_model = probe["model"] == kept["model"]
    passed = same_model and cosine >= TOLERANCE
    result = {
        "checked": True,
        "passed": passed,
        "cosine": round(cosine, 6),
        "tolerance": TOLERANCE,
        "model_at_build": kept["model"],
        "model_now": probe["model"],
    }
    if not passed and not allow_stale:
        if not same_model:
            what = f"the server now answers as model {_named(probe['model'])}, at build as {_named(kept['model'])}"
        else:
            what = f"its probe vector's cosine with the one stored at build is {cosine:.6f}, below {TOLERANCE}"
        said = (
            f'generation "{name}": {what}, so the model behind the name may have changed and the '
            "stored vectors may not match new queries."
        )
        raise ProbeMismatch(
            lambda words: f"{said} {advice(words)}",
            what=said,
            remedy=lambda words: capital(from_empty(words)),
        )
    return result


def _named(model: str | None) -> str:
    return "(no model named)" if model is None else f'"{visible(model)}"'


NOT_CHECKED = {"checked": False, "reason": "every query came from the cache: no request was made"}
