"""The page at ``/``: every corpus, its evaluations over time with verdicts, a trend chart per mean
and generation, and each report's own HTML page.

Reading needs a read token, given once in the login form and kept in the
session cookie (:mod:`ptah_serve.auth`), never in a URL. Self-contained like
the report page: inline CSS and SVG, no script, a Content-Security-Policy
that forbids every network resource (forms post only to the server itself).

The trend charts: one per corpus and mean, in the measure registry's order,
x the time each evaluation on that corpus was asked for, on a time axis
(:mod:`ptah.render.timeaxis`), y the mean (0 to 1), one line per run
(generation and channel). Each point carries ``data-evaluation``,
``data-run``, ``data-measure`` and ``data-value`` (Python's ``repr`` of the
report's mean), so a test can hold the chart to the reports.
"""

from __future__ import annotations

import json
from datetime import datetime
from html import escape
from urllib.parse import parse_qs

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from ptah import Report
from ptah.core.measures import registry_order
from ptah.render.layout import number
from ptah.render.timeaxis import time_axis
from ptah_serve.auth import grant_of, page_grant, session_cookie
from ptah_serve.corpora import list_corpora
from ptah_serve.evaluations import EVALUATION_ID
from ptah_serve.limits import BodyTooLarge
from ptah_serve.problems import bounded_body

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; base-uri 'none'"
HEADERS = {
    "Content-Security-Policy": CSP + "; frame-ancestors 'none'",
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
}
COLOURS = ("#1f6fb4", "#d2691e", "#2f9a4f", "#8e44ad", "#c23b3b", "#4f6d7a", "#b8860b", "#17a2b8")
WIDTH, HEIGHT, LEFT, RIGHT, TOP, BOTTOM = 640, 236, 50, 170, 14, 46
MAX_LOGIN_BYTES = 4096
STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:1200px;padding:0 1rem;color:#1d2430}
h1{font-size:1.5rem}h2{font-size:1.15rem;margin:2rem 0 .5rem;border-bottom:1px solid #dde2ea}
.meta{color:#5b6578;font-size:.85rem}.mono{font-family:ui-monospace,Menlo,monospace}
table{border-collapse:collapse}th,td{padding:.2rem .6rem;border-bottom:1px solid #e6e9ef;text-align:left}
.pass{color:#1e7b34}.fail{color:#8c1d1d}.inconclusive{color:#8a6d00}svg text{font:11px system-ui,sans-serif}
svg{max-width:100%;height:auto}figure{margin:1rem 0}
"""


def _page(title: str, body: str, status: int = 200, headers: dict | None = None) -> HTMLResponse:
    html = (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}"><style>{STYLE}</style></head>'
        f"<body>{body}</body></html>"
    )
    return HTMLResponse(html, status_code=status, headers={**HEADERS, **(headers or {})})


def _login(message: str = "", status: int = 200) -> HTMLResponse:
    note = f'<p class="fail">{escape(message)}</p>' if message else ""
    return _page(
        "ptah: sign in",
        f'<h1>ptah</h1>{note}<form method="post" action="/login">'
        '<label>Token <input type="password" name="token" autocomplete="off" required></label> '
        '<button type="submit">Sign in</button></form>'
        '<p class="meta">A read token (<code>ptah token create --scope read</code>); it is kept in a '
        "session cookie, never in a URL.</p>",
        status,
    )


async def login(request: Request) -> Response:
    try:
        data = await bounded_body(request, MAX_LOGIN_BYTES)
        token = (parse_qs(data.decode("ascii"), max_num_fields=4).get("token") or [""])[0].strip()
    except (UnicodeDecodeError, ValueError, BodyTooLarge):  # refused as a failed sign-in
        token = ""
    grant, _ = grant_of(request, token or None)
    if grant is None or not grant.allows("read"):
        return _login("That token is not valid.", 401)
    return RedirectResponse(
        "/", status_code=303, headers={"Set-Cookie": session_cookie(request, token), **HEADERS}
    )


async def logout(request: Request) -> Response:
    return RedirectResponse(
        "/", status_code=303, headers={"Set-Cookie": session_cookie(request, None), **HEADERS}
    )


async def home(request: Request) -> Response:
    if page_grant(request) is None:
        return _login()
    state = request.app.state
    corpora, jobs = await run_in_threadpool(lambda: (list_corpora(state.records), state.jobs.all()))
    return _page("ptah: evaluations", render_home(corpora, jobs))


async def report_page(request: Request) -> Response:
    if page_grant(request) is None:
        return _login(status=401)
    job_id = request.path_params["id"]
    jobs = request.app.state.jobs
    text = (
        await run_in_threadpool(jobs.report_text, job_id) if EVALUATION_ID.match(job_id) else None
    )
    if text is None:
        return _page(
            "ptah: not found", '<h1>No such report</h1><p><a href="/">All evaluations</a></p>', 404
        )
    from ptah.render.html import render_html

    html = await run_in_threadpool(lambda: render_html(Report.from_dict(json.loads(text))))
    # the report page's own meta tag is its Content-Security-Policy (its script toggles what is
    # shown)
    return HTMLResponse(
        html,
        headers={
            name: value for name, value in HEADERS.items() if name != "Content-Security-Policy"
        },
    )


def routes() -> list[Route]:
    return [
        Route("/", home, methods=["GET"]),
        Route("/login", login, methods=["POST"]),
        Route("/logout", logout, methods=["POST"]),
        Route("/evaluations/{id}/report.html", report_page, methods=["GET"]),
    ]


# --- rendering ------------------------------------------------------------------------


def _value(value) -> str:
    return "null" if value is None else repr(value)


def render_home(corpora: list[dict], jobs: list[dict]) -> str:
    parts = [
        '<h1>ptah: evaluations</h1><form method="post" action="/logout"><button>Sign out</button></form>'
    ]
    if not corpora:
        parts.append("<p>No corpus is registered yet (POST /v1/corpora).</p>")
    for corpus in corpora:
        mine = [job for job in jobs if job["corpus"] == corpus["digest"]]
        parts.append(
            f'<section data-corpus="{escape(corpus["digest"])}"><h2>{escape(corpus["name"] or "corpus")}</h2>'
            f'<p class="meta mono">{escape(corpus["digest"])} · {corpus["cases"]:,} cases · split '
            f"{escape(corpus['split'] or 'none')} · registered {escape(corpus['registered_at'])}</p>"
        )
        parts.append(_charts(mine))
        parts.append(_table(mine))
        parts.append("</section>")
    return "".join(parts)


def _table(jobs: list[dict]) -> str:
    if not jobs:
        return "<p>No evaluation yet.</p>"
    rows = []
    for job in reversed(jobs):
        verdict = job["verdict"] or ""
        runs = "; ".join(
            f"{run['name']}: "
            + ", ".join(
                f"{name} {number(run['means'][name]['value'])}"
                for name in registry_order(run["means"])
            )
            for run in job["runs"] or ()
        )
        link = (
            f'<a href="/evaluations/{escape(job["id"])}/report.html">report</a>'
            if job["status"] == "done"
            else escape((job["error"] or {}).get("code", ""))
        )
        rows.append(
            f'<tr data-evaluation="{escape(job["id"])}"><td class="mono">{escape(job["created_at"])}</td>'
            f'<td class="mono">{escape(job["id"])}</td><td>{escape(job["status"])}</td>'
            f'<td class="{escape(verdict)}">{escape(verdict)}</td><td>{escape(runs)}</td><td>{link}</td></tr>'
        )
    return (
        "<table><thead><tr><th>created</th><th>evaluation</th><th>status</th><th>verdict</th><th>means</th>"
        f"<th></th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _charts(jobs: list[dict]) -> str:
    done = [job for job in jobs if job["status"] == "done" and job["runs"]]
    if not done:
        return ""
    measures: list[str] = []
    for job in done:
        for run in job["runs"]:
            measures.extend(name for name in run["means"] if name not in measures)
    return (
        '<div class="charts">'
        + "".join(_chart(done, measure) for measure in registry_order(measures))
        + "</div>"
    )


def _chart(done: list[dict], measure: str) -> str:
    series: dict[str, list[tuple[datetime, str, float | None]]] = {}
    for job in done:
        for run in job["runs"]:
            if measure in run["means"]:
                series.setdefault(run["name"], []).append(
                    (
                        datetime.fromisoformat(job["created_at"]),
                        job["id"],
                        run["means"][measure]["value"],
                    )
                )
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    axis = time_axis([when for points in series.values() for when, _, _ in points], LEFT, plot_w)
    x = axis.x

    def y(value: float) -> float:
        return TOP + plot_h * (1 - value)

    parts = [
        f'<figure data-chart-measure="{escape(measure)}"><figcaption>{escape(measure)}</figcaption>'
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="{escape(measure)} over time">'
    ]
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts.append(
            f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" stroke="#e6e9ef"/>'
            f'<text x="{LEFT - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick:.2f}</text>'
        )
    parts.append(axis.svg(HEIGHT - BOTTOM + 18))
    for index, (name, points) in enumerate(series.items()):
        colour = COLOURS[index % len(COLOURS)]
        defined = [(when, value) for when, _, value in points if value is not None]
        if len(defined) > 1:
            path = " ".join(f"{x(when):.1f},{y(value):.1f}" for when, value in defined)
            parts.append(
                f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{path}"/>'
            )
        for when, job_id, value in points:
            shown = 0.0 if value is None else value
            parts.append(
                f'<circle cx="{x(when):.1f}" cy="{y(shown):.1f}" r="3.5" fill="{colour}" '
                f'data-evaluation="{escape(job_id)}" data-run="{escape(name)}" data-measure="{escape(measure)}" '
                f'data-value="{_value(value)}"><title>{escape(name)} {escape(measure)} '
                f"{number(value)} ({escape(job_id)})</title></circle>"
            )
        parts.append(
            f'<text x="{WIDTH - RIGHT + 10}" y="{TOP + 14 * (index + 1)}" fill="{colour}">{escape(name)}</text>'
        )
    parts.append("</svg></figure>")
    return "".join(parts)
