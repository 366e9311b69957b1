"""The HTTP API of ``ptah serve`` (Starlette): corpora, evaluations, the OpenAPI document, the page.

| method and path | scope | answers |
|---|---|---|
| ``GET /openapi.json`` | none | the OpenAPI 3.1 document |
| ``POST /v1/corpora[?split=development\\|test]`` | manage | 201 registered, 200 registered already; 409 leakage |
| ``GET /v1/corpora``, ``GET /v1/corpora/{digest}`` | read | the registered corpora |
| ``POST /v1/evaluations`` | manage | 202 ``{"id": …, "status": "queued"}``; 429 past the token's queue bound |
| ``GET /v1/evaluations[?corpus=&generation=&status=&limit=&after=]`` | read | a page of jobs, oldest first (50, at most 200) |
| ``GET /v1/evaluations/{id}`` | read | the job; its ``report`` exactly as ``--output`` writes it once done |
| ``DELETE /v1/evaluations/{id}`` | manage | the job, cancelled when it was queued or running |

Everything slow (the store's lists and reports) runs in a thread; evaluations run in
the job pool (:mod:`ptah_serve.jobs`). No endpoint takes a server path.
"""

from __future__ import annotations

import json
import logging

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ptah import InputError, PtahError
from ptah.services.channels import plan_runs
from ptah_serve import corpora, page
from ptah_serve.auth import refuse_cross_site, require
from ptah_serve.evaluations import DIGEST, EVALUATION_ID, checked_body, evaluation_request
from ptah_serve.jobs import Jobs
from ptah_serve.limits import Limits, admit
from ptah_serve.openapi import document
from ptah_serve.problems import HttpProblem, bounded_body, from_error, json_body, problem

log = logging.getLogger("ptah_serve")
MAX_PAGE = 200


def _not_found(what: str) -> HttpProblem:
    return HttpProblem(404, "NOT_FOUND", f"there is no {what}.")


# --- corpora --------------------------------------------------------------------------


async def register_corpus(request: Request) -> Response:
    require(request, "manage")
    split = request.query_params.get("split")
    data = await bounded_body(request, request.app.state.limits.max_corpus_bytes)
    records = request.app.state.records
    created, info = await run_in_threadpool(corpora.register_corpus, records, data, split)
    return JSONResponse(info, status_code=201 if created else 200)


async def list_corpora(request: Request) -> Response:
    require(request, "read")
    return JSONResponse(
        {"items": await run_in_threadpool(corpora.list_corpora, request.app.state.records)}
    )


async def get_corpus(request: Request) -> Response:
    require(request, "read")
    digest = request.path_params["digest"]
    info = (
        await run_in_threadpool(corpora.corpus_info, request.app.state.records, digest)
        if DIGEST.match(digest)
        else None
    )
    if info is None:
        raise _not_found("corpus with this digest")
    return JSONResponse(info)


# --- evaluations ----------------------------------------------------------------------


def _admit(state, checked: dict, owner: str) -> dict:
    """Check an evaluation against what is registered and the limits, then queue it (in a
    thread)."""
    request = evaluation_request(checked)
    corpus = state.jobs.corpus(checked["corpus"])
    if corpus is None:
        raise InputError(f"corpus: {checked['corpus']} is not registered (POST /v1/corpora first).")
    if checked["baseline"] is not None:
        baseline = state.jobs.get(checked["baseline"])
        if baseline is None or baseline["status"] != "done":
            raise InputError(
                f"baseline: evaluation {checked['baseline']} does not exist or is not done."
            )
        if baseline["corpus"] != checked["corpus"]:
            raise InputError(
                f"baseline: evaluation {checked['baseline']} measured corpus {baseline['corpus']}, "
                f"not {checked['corpus']}: they are not comparable."
            )
    plans = plan_runs(
        state.jobs.spec, request.generations or None, request.channels, request.variants
    )  # names that exist
    admit(state.limits, corpus, len(plans), len(request.all_measures))
    return state.jobs.submit(checked, owner)


async def start_evaluation(request: Request) -> Response:
    grant = require(request, "manage")
    checked = checked_body(await json_body(request, request.app.state.limits.max_json_bytes))
    job = await run_in_threadpool(_admit, request.app.state, checked, grant.name)
    return JSONResponse(
        {"id": job["id"], "status": job["status"]},
        status_code=202,
        headers={"Location": f"/v1/evaluations/{job['id']}"},
    )


def _matches(job: dict, corpus: str | None, generation: str | None, status: str | None) -> bool:
    if corpus is not None and job["corpus"] != corpus:
        return False
    if status is not None and job["status"] != status:
        return False
    if generation is not None:
        asked = job["request"]["generations"]
        ran = [run["generation"] for run in job["runs"] or ()]
        return generation in asked or generation in ran
    return True


async def list_evaluations(request: Request) -> Response:
    require(request, "read")
    params = request.query_params
    limit_text = params.get("limit", "50")
    if not limit_text.isdigit() or not 1 <= int(limit_text) <= MAX_PAGE:
        raise InputError(f"limit: a whole number from 1 to {MAX_PAGE} is expected.")
    after = params.get("after")
    jobs: Jobs = request.app.state.jobs

    def read() -> tuple[list[dict], str | None]:
        if after is not None and (not EVALUATION_ID.match(after) or jobs.get(after) is None):
            raise InputError(
                "after: not an evaluation of this listing (use the previous page's next)."
            )
        return jobs.page(
            after,
            int(limit_text),
            lambda job: _matches(
                job, params.get("corpus"), params.get("generation"), params.get("status")
            ),
        )

    items, following = await run_in_threadpool(read)
    return JSONResponse({"items": items, "next": following})


def _job_or_404(jobs: Jobs, job_id: str) -> dict:
    job = jobs.get(job_id) if EVALUATION_ID.match(job_id) else None
    if job is None:
        raise _not_found("evaluation with this id")
    return job


async def get_evaluation(request: Request) -> Response:
    require(request, "read")
    jobs: Jobs = request.app.state.jobs

    def read() -> bytes:
        job = _job_or_404(jobs, request.path_params["id"])
        text = jobs.report_text(job["id"]) if job["status"] == "done" else None
        head = json.dumps(job, ensure_ascii=False)
        return (head[:-1] + ', "report": ' + (text or "null") + "}").encode("utf-8")

    return Response(await run_in_threadpool(read), media_type="application/json")


async def cancel_evaluation(request: Request) -> Response:
    require(request, "manage")
    jobs: Jobs = request.app.state.jobs

    def cancel() -> dict:
        _job_or_404(jobs, request.path_params["id"])
        job = jobs.cancel(request.path_params["id"])
        assert job is not None, "jobs are never deleted: one found a moment ago is still there"
        return job

    return JSONResponse(await run_in_threadpool(cancel))


async def openapi(request: Request) -> Response:
    return JSONResponse(document())


# --- errors ---------------------------------------------------------------------------


async def _problem(request: Request, exc: Exception) -> Response:
    if isinstance(exc, HTTPException):
        code = {404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED"}.get(exc.status_code, "HTTP")
        return problem(exc.status_code, code, str(exc.detail), headers=dict(exc.headers or {}))
    if not isinstance(exc, (HttpProblem, PtahError)):
        log.error("unexpected %s on %s %s", type(exc).__name__, request.method, request.url.path)
    return from_error(exc, request.app.state.jobs.spec.root)


async def _client_left(request: Request, exc: Exception) -> Response:
    """A client that left before sending its whole body: one quiet line, no traceback (nobody reads
    the answer)."""
    log.warning(
        "client left before sending the whole body of %s %s", request.method, request.url.path
    )
    return Response(status_code=400)


def _same_site_only(route: Route) -> Route:
    """A page's form route that first refuses a post from another site
    (:func:`~ptah_serve.auth.refuse_cross_site`)."""
    endpoint = route.endpoint

    async def checked(request: Request) -> Response:
        refuse_cross_site(request)
        return await endpoint(request)

    return Route(route.path, checked, methods=list(route.methods or ()))


def create_app(records, spec, *, workers: int = 2, limits: Limits = Limits()) -> Starlette:
    """The application over a project's record store; its jobs recovered and ready."""
    routes = [
        Route("/openapi.json", openapi, methods=["GET"]),
        Route("/v1/corpora", register_corpus, methods=["POST"]),
        Route("/v1/corpora", list_corpora, methods=["GET"]),
        Route("/v1/corpora/{digest}", get_corpus, methods=["GET"]),
        Route("/v1/evaluations", start_evaluation, methods=["POST"]),
        Route("/v1/evaluations", list_evaluations, methods=["GET"]),
        Route("/v1/evaluations/{id}", get_evaluation, methods=["GET"]),
        Route("/v1/evaluations/{id}", cancel_evaluation, methods=["DELETE"]),
        *(
            _same_site_only(route) if "POST" in (route.methods or ()) else route
            for route in page.routes()
        ),
    ]
    app = Starlette(
        routes=routes,
        exception_handlers={
            Exception: _problem,
            HTTPException: _problem,
            HttpProblem: _problem,
            PtahError: _problem,
            ClientDisconnect: _client_left,
        },
    )
    app.state.records = records
    app.state.limits = limits
    app.state.jobs = Jobs(records, spec, workers, limits)
    app.state.jobs.recover()
    return app
