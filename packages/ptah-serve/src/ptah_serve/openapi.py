"""The OpenAPI 3.1 document of ``ptah serve`` (``GET /openapi.json``): the routes written by hand,
the evaluation body made from the request options' declaration
(:data:`ptah_serve.evaluations.SERVED`)."""

from __future__ import annotations

from ptah import __version__
from ptah.core.registry import Option
from ptah_serve.evaluations import MAX_NAME_CHARS, MAX_NAMES, SERVED

_PROBLEM = {
    "description": "a problem (RFC 9457)",
    "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}},
}
_ERRORS = {code: _PROBLEM for code in ("401", "403", "404", "413", "422")}
_DIGEST = {"type": "string", "pattern": "^sha256:[0-9a-f]{64}$"}
_ID = {"type": "string", "pattern": "^ev_[0-9a-f]{24}$"}
_NAMES = {
    "type": "array",
    "maxItems": MAX_NAMES,
    "items": {"type": "string", "minLength": 1, "maxLength": MAX_NAME_CHARS},
}
_BINARY = {"schema": {"type": "string", "format": "binary"}}
_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string"}


def _json(schema: dict, description: str = "ok") -> dict:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def _operation(name: str, summary: str, scope: str | None, responses: dict, **extra) -> dict:
    operation = {
        "operationId": name,
        "summary": summary,
        "responses": {**responses, **(_ERRORS if scope else {})},
        **extra,
    }
    if scope:
        operation["security"] = [{"bearer": []}]
        operation["description"] = (
            f"Needs a token of scope {scope} (manage may do everything read may)."
        )
    return operation


def _path_parameter(name: str, schema: dict) -> list:
    return [{"name": name, "in": "path", "required": True, "schema": schema}]


def _option(option: Option) -> dict:
    """The JSON schema of a served request option, from its declaration."""
    if option.name == "baseline":  # on the server, an earlier evaluation's id
        return {
            "anyOf": [_ID, {"type": "null"}],
            "description": "A done evaluation of the same corpus to compare with.",
        }
    if option.kind is tuple:
        schema: dict = dict(_NAMES, default=list(option.default))
    elif option.kind is dict:
        schema = {
            "type": "object",
            "maxProperties": MAX_NAMES,
            "additionalProperties": {"type": "number"},
            "default": {},
        }
    else:
        schema = {
            "type": _TYPES[option.kind]
            if option.default is not None
            else [_TYPES[option.kind], "null"],
            "default": option.default,
        }
        schema.update(
            {
                key: value
                for key, value in (
                    ("enum", list(option.choices) or None),
                    ("minimum", option.low),
                    ("maximum", option.high),
                )
                if value is not None
            }
        )
    return {**schema, "description": option.help}


def document() -> dict:
    corpus = {
        "type": "object",
        "required": ["digest", "name", "cases", "split", "bytes", "registered_at"],
        "properties": {
            "digest": _DIGEST,
            "name": {"type": ["string", "null"]},
            "cases": {"type": "integer"},
            "split": {"enum": ["development", "test", None]},
            "bytes": {"type": "integer"},
            "registered_at": {"type": "string"},
        },
    }
    request = {
        "type": "object",
        "additionalProperties": False,
        "required": ["corpus"],
        "properties": {"corpus": _DIGEST, **{option.name: _option(option) for option in SERVED}},
    }
    mean = {
        "type": "object",
        "required": ["value", "numerator", "denominator"],
        "properties": {
            "value": {"type": ["number", "null"]},
            "numerator": {"type": "number"},
            "denominator": {"type": "integer"},
        },
    }
    run = {
        "type": "object",
        "required": ["name", "generation", "channel", "means"],
        "properties": {
            "name": {"type": "string"},
            "generation": {"type": "string"},
            "channel": {"type": "string"},
            "means": {"type": "object", "additionalProperties": _ref("Mean")},
        },
    }
    evaluation = {
        "type": "object",
        "required": ["id", "status", "corpus", "request", "created_at"],
        "properties": {
            "id": _ID,
            "status": {"enum": ["queued", "running", "done", "failed", "cancelled"]},
            "corpus": _DIGEST,
            "request": _ref("EvaluationRequest"),
            "created_at": {"type": "string"},
            "started_at": {"type": ["string", "null"]},
            "finished_at": {"type": ["string", "null"]},
            "verdict": {"enum": ["pass", "fail", "inconclusive", None]},
            "runs": {
                "type": ["array", "null"],
                "items": _ref("RunSummary"),
                "description": "each run's name, generation, channel and means",
            },
            "error": {"type": ["object", "null"], "description": "code and detail of a failed job"},
            "report": {
                "type": ["object", "null"],
                "description": "the report exactly as --output writes it",
            },
        },
    }
    problem = {
        "type": "object",
        "required": ["type", "title", "status", "detail", "code"],
        "properties": {
            "type": {"type": "string"},
            "title": {"type": "string"},
            "status": {"type": "integer"},
            "detail": {"type": "string"},
            "code": {"type": "string"},
            "problems": {"type": "array", "items": {"type": "object"}},
        },
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "ptah",
            "version": __version__,
            "description": "Registered immutable corpora and evaluation jobs of one ptah project.",
        },
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Corpus": corpus,
                "EvaluationRequest": request,
                "Evaluation": evaluation,
                "RunSummary": run,
                "Mean": mean,
                "Problem": problem,
            },
        },
        "paths": {
            "/v1/corpora": {
                "post": _operation(
                    "register_corpus",
                    "Register a corpus (its YAML text as the body)",
                    "manage",
                    {
                        "201": _json(_ref("Corpus"), "registered"),
                        "200": _json(_ref("Corpus"), "registered already"),
                        "409": _PROBLEM,
                    },
                    parameters=[
                        {
                            "name": "split",
                            "in": "query",
                            "required": False,
                            "schema": {"enum": ["development", "test"]},
                        }
                    ],
                    requestBody={
                        "required": True,
                        "content": {
                            "application/yaml": {"schema": {"type": "string"}},
                            "application/octet-stream": _BINARY,
                        },
                    },
                ),
                "get": _operation(
                    "list_corpora",
                    "List the registered corpora",
                    "read",
                    {
                        "200": _json(
                            {
                                "type": "object",
                                "properties": {"items": {"type": "array", "items": _ref("Corpus")}},
                            }
                        )
                    },
                ),
            },
            "/v1/corpora/{digest}": {
                "get": _operation(
                    "get_corpus",
                    "A registered corpus",
                    "read",
                    {"200": _json(_ref("Corpus"))},
                    parameters=_path_parameter("digest", {"type": "string"}),
                ),
            },
            "/v1/evaluations": {
                "post": _operation(
                    "start_evaluation",
                    "Start an evaluation",
                    "manage",
                    {
                        "202": _json(
                            {
                                "type": "object",
                                "properties": {"id": _ID, "status": {"const": "queued"}},
                            },
                            "queued",
                        ),
                        "429": {
                            **_PROBLEM,
                            "headers": {"Retry-After": {"schema": {"type": "string"}}},
                        },
                    },
                    requestBody={
                        "required": True,
                        "content": {"application/json": {"schema": _ref("EvaluationRequest")}},
                    },
                ),
                "get": _operation(
                    "list_evaluations",
                    "List evaluations, oldest first, a page at a time",
                    "read",
                    {
                        "200": _json(
                            {
                                "type": "object",
                                "properties": {
                                    "items": {"type": "array", "items": _ref("Evaluation")},
                                    "next": {"anyOf": [_ID, {"type": "null"}]},
                                },
                            }
                        )
                    },
                    parameters=[
                        {"name": "corpus", "in": "query", "schema": {"type": "string"}},
                        {"name": "generation", "in": "query", "schema": {"type": "string"}},
                        {"name": "status", "in": "query", "schema": {"type": "string"}},
                        {
                            "name": "limit",
                            "in": "query",
                            "schema": {"type": "integer", "minimum": 1, "maximum": 200},
                        },
                        {
                            "name": "after",
                            "in": "query",
                            "schema": {"type": "string"},
                            "description": "the previous page's next",
                        },
                    ],
                ),
            },
            "/v1/evaluations/{id}": {
                "get": _operation(
                    "get_evaluation",
                    "An evaluation, with its report once done",
                    "read",
                    {"200": _json(_ref("Evaluation"))},
                    parameters=_path_parameter("id", {"type": "string"}),
                ),
                "delete": _operation(
                    "cancel_evaluation",
                    "Cancel a queued or running evaluation",
                    "manage",
                    {"200": _json(_ref("Evaluation"))},
                    parameters=_path_parameter("id", {"type": "string"}),
                ),
            },
        },
    }
