"""``POST /v1/evaluations``: the JSON body, checked field by field, and the EvaluationRequest it asks for.

The body says what ``ptah inference evaluate`` takes on its command line,
with the corpus and the baseline named by what the server registered (a
corpus digest, an evaluation id), never by a path::

    {"corpus": "sha256:…", "generations": ["title-body"], "channels": ["vector"],
     "measures": ["MAP@10"], "search": "exact", "ef_search": null, "rrf_k": 60, "rrf_depth": 1000,
     "bootstrap": 10000, "seed": 0, "baseline": "ev_…", "max_drop": {"recall": 0.02}, "allow_stale": false}

Only ``corpus`` is required. An unknown field, a value of the wrong type or
out of range is a 422 naming the field; the rest is checked by
:class:`~ptah.core.request.EvaluationRequest` itself, as the CLI's options are.
"""

from __future__ import annotations

import math
import re

from ptah.core.comparison import StatisticsSettings
from ptah.core.errors import InputError
from ptah.core.request import EvaluationRequest, Fusion, SearchOptions
from ptah.core.visible import abbreviated

MAX_NAMES = 16  # generations, channels or measures in one evaluation
MAX_NAME_CHARS = 256
MAX_SEED = 2**63 - 1
DIGEST = re.compile(r"sha256:[0-9a-f]{64}\Z")
EVALUATION_ID = re.compile(r"ev_[0-9a-f]{24}\Z")

_LISTS = ("generations", "channels", "measures")
_FIELDS = ("corpus", *_LISTS, "search", "ef_search", "rrf_k", "rrf_depth", "bootstrap", "seed", "baseline",
           "max_drop", "allow_stale")


def _whole(body: dict, name: str, default, low: int, high: int):
    value = body.get(name, default)
    if value is None and default is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InputError(f"{name}: a whole number from {low:,} to {high:,} is expected.")
    return value


def _text(value, name: str) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_NAME_CHARS or "\x00" in value:
        raise InputError(f"{name}: a non-empty text of at most {MAX_NAME_CHARS} characters is expected.")
    return value


def checked_body(body: object) -> dict:
    """The evaluation body with every field present and of its type (defaults filled in); InputError otherwise."""
    if not isinstance(body, dict):
        raise InputError("the body must be a JSON object.")
    unknown = sorted(set(body) - set(_FIELDS))
    if unknown:
        raise InputError(f"{abbreviated(repr(unknown[0]))}: unknown field (known: {', '.join(_FIELDS)}).")
    corpus = body.get("corpus")
    if not isinstance(corpus, str) or not DIGEST.match(corpus):
        raise InputError("corpus: a registered corpus digest (sha256: and 64 hex digits) is expected.")
    checked: dict = {"corpus": corpus}
    for name in _LISTS:
        value = body.get(name, [])
        if not isinstance(value, list) or len(value) > MAX_NAMES:
            raise InputError(f"{name}: a list of at most {MAX_NAMES} names is expected.")
        checked[name] = [_text(item, name) for item in value]
    search = body.get("search", "exact")
    checked["search"] = _text(search, "search")
    checked["ef_search"] = _whole(body, "ef_search", None, 1, 1000)
    rrf_k = body.get("rrf_k", 60)
    if isinstance(rrf_k, bool) or not isinstance(rrf_k, (int, float)) or not math.isfinite(rrf_k):
        raise InputError("rrf_k: a finite number is expected.")
    checked["rrf_k"] = float(rrf_k)
    checked["rrf_depth"] = _whole(body, "rrf_depth", 1000, 1, 1_000_000)
    checked["bootstrap"] = _whole(body, "bootstrap", 10_000, 1, 1_000_000)
    checked["seed"] = _whole(body, "seed", 0, 0, MAX_SEED)
    baseline = body.get("baseline")
    if baseline is not None and (not isinstance(baseline, str) or not EVALUATION_ID.match(baseline)):
        raise InputError("baseline: an evaluation id (ev_ and 24 hex digits) is expected.")
    checked["baseline"] = baseline
    drops = body.get("max_drop", {})
    if not isinstance(drops, dict) or len(drops) > MAX_NAMES:
        raise InputError(f"max_drop: an object of at most {MAX_NAMES} measure names and numbers is expected.")
    for name, value in drops.items():
        _text(name, "max_drop")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise InputError("max_drop: each threshold must be a finite number from 0 to 1.")
    checked["max_drop"] = {name: float(value) for name, value in drops.items()}
    allow_stale = body.get("allow_stale", False)
    if not isinstance(allow_stale, bool):
        raise InputError("allow_stale: true or false is expected.")
    checked["allow_stale"] = allow_stale
    return checked


def evaluation_request(checked: dict) -> EvaluationRequest:
    """The EvaluationRequest a checked body asks for (InputError as the CLI's options would give)."""
    return EvaluationRequest(
        generations=tuple(checked["generations"]),
        channels=tuple(checked["channels"]),
        measures=tuple(checked["measures"]),
        max_drop=checked["max_drop"],
        baseline=None if checked["baseline"] is None else f"evaluation {checked['baseline']}",
        allow_stale=checked["allow_stale"],
        search=SearchOptions(checked["search"], checked["ef_search"]),
        fusion=Fusion(k=checked["rrf_k"], depth=checked["rrf_depth"]),
        statistics=StatisticsSettings(resamples=checked["bootstrap"], seed=checked["seed"]),
    )

