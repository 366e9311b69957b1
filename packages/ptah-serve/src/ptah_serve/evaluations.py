"""``POST /v1/evaluations``: the JSON body, checked field by field, and the EvaluationRequest it
asks for.

The body holds the corpus and the options of
:class:`~ptah.core.request.EvaluationRequest` its declaration marks served,
by their names, with the corpus and the baseline named by what the server
registered (a corpus digest, an evaluation id), never by a path::

    {"corpus": "sha256:…", "generations": ["title-body"], "channels": ["vector"], "variants": ["reranked"],
     "measures": ["MAP@10"], "search": "exact", "ef_search": null, "rrf_k": 60, "rrf_depth": 1000,
     "bootstrap": 10000, "seed": 0, "baseline": "ev_…", "max_drop": {"recall": 0.02}, "allow_stale": false}

Only ``corpus`` is required. An unknown field, a list or mapping past the
server's bounds, or a value the option's declaration refuses is a 422 naming
the field.
"""

from __future__ import annotations

import copy
import re

from ptah import EvaluationRequest, InputError
from ptah.core.registry import declared
from ptah.core.visible import abbreviated

MAX_NAMES = 16  # generations, channels or measures in one evaluation; drop gates
MAX_NAME_CHARS = 256
DIGEST = re.compile(r"sha256:[0-9a-f]{64}\Z")
EVALUATION_ID = re.compile(r"ev_[0-9a-f]{24}\Z")

SERVED = tuple(option for option in declared(EvaluationRequest) if option.served)
FIELDS = ("corpus", *(option.name for option in SERVED))


def _names(values: object, name: str) -> None:
    """The server's bounds on a list of names or a mapping's keys (what is not one is the option's
    to refuse)."""
    names = values if isinstance(values, (list, dict)) else ()
    if len(names) > MAX_NAMES:
        raise InputError(f"{name}: at most {MAX_NAMES} names are expected.")
    for item in names:
        if not isinstance(item, str) or not item or len(item) > MAX_NAME_CHARS or "\x00" in item:
            raise InputError(
                f"{name}: each name must be a non-empty text of at most {MAX_NAME_CHARS} characters."
            )


def checked_body(body: object) -> dict:
    """The evaluation body with every field present (defaults filled in) and within the server's
    bounds on names; :func:`evaluation_request` checks the options' values."""
    if not isinstance(body, dict):
        raise InputError("the body must be a JSON object.")
    unknown = sorted(set(body) - set(FIELDS))
    if unknown:
        raise InputError(
            f"{abbreviated(repr(unknown[0]))}: unknown field (known: {', '.join(FIELDS)})."
        )
    corpus = body.get("corpus")
    if not isinstance(corpus, str) or not DIGEST.match(corpus):
        raise InputError(
            "corpus: a registered corpus digest (sha256: and 64 hex digits) is expected."
        )
    baseline = body.get("baseline")
    if baseline is not None and (
        not isinstance(baseline, str) or not EVALUATION_ID.match(baseline)
    ):
        raise InputError("baseline: an evaluation id (ev_ and 24 hex digits) is expected.")
    checked = {"corpus": corpus}
    for option in SERVED:
        default = (
            list(option.default) if option.kind is tuple else copy.copy(option.default)
        )  # as JSON holds it
        checked[option.name] = body.get(option.name, default)
        if option.kind in (tuple, dict):
            _names(checked[option.name], option.name)
    return checked


def evaluation_request(checked: dict) -> EvaluationRequest:
    """The EvaluationRequest a checked body asks for (an OptionError names the field)."""
    options = {option.name: checked[option.name] for option in SERVED if option.name in checked}
    options["excerpts"] = True  # the server's report pages show each ranked row's first words
    if checked.get("baseline") is not None:
        options["baseline"] = f"evaluation {checked['baseline']}"
    return EvaluationRequest.of(**options)
