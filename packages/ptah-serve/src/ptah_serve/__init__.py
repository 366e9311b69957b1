"""``ptah serve``: one project's registered corpora and evaluation jobs over HTTP, with scoped
tokens -- an add-on of ptah, loaded through its door (:mod:`ptah_serve.plugin`).

A client of the Python API (``import ptah``) and of the typed report: an
evaluation job calls ``Project.evaluate`` and keeps ``Report.to_json()``.
Starlette and uvicorn are imported only when the server starts, so no other
command pays for them. See :mod:`ptah_serve.app` for the endpoints,
:mod:`ptah_serve.jobs` for the jobs and :mod:`ptah_serve.limits` for what is
refused.
"""

from __future__ import annotations

import os
import signal

from ptah.core.errors import CapabilityUnavailable


def _need_server_libraries() -> None:
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise CapabilityUnavailable(
            f"the server needs starlette and uvicorn ({exc}); install them with: "
            "pip install ./packages/ptah-serve from a checkout of ptah."
        ) from None


def serve(
    spec: str | os.PathLike | None,
    *,
    host: str = "127.0.0.1",
    port: int = 8470,
    workers: int = 2,
    limits=None,
    announce=print,
) -> None:
    """Serve until interrupted (SIGINT, SIGTERM); ``announce`` gets the one line saying where.

    One server per store: the store's server lock is taken before anything
    else (StoreUnavailable, exit 3, while another server holds it), so only
    the server that holds it recovers and runs the store's jobs. A stop
    (Ctrl-C, SIGTERM) fails the running jobs at once (``SERVER_STOPPED``):
    uvicorn hands the signal back once it has shut down, and SIGTERM's
    handler here turns it into an exit that runs the clean-up, not the
    default's immediate death.
    """
    _need_server_libraries()
    import uvicorn

    import ptah
    from ptah_serve.app import create_app
    from ptah_serve.corpora import open_records
    from ptah_serve.limits import Limits

    with ptah.open_project(spec) as project:
        loaded = project.spec
    records = open_records(loaded)
    try:
        with records.server_lock():
            app = create_app(records, loaded, workers=workers, limits=limits or Limits())
            config = uvicorn.Config(
                app,
                host=host,
                port=port,
                log_level="warning",
                access_log=False,
                server_header=False,
                date_header=True,
                lifespan="off",
            )
            server = uvicorn.Server(config)
            announce(f"ptah serve: http://{host}:{port}/ ({workers} worker(s); stop with Ctrl-C)")
            previous = signal.signal(signal.SIGTERM, _stopped)
            try:
                server.run()
            finally:
                app.state.jobs.close()
                signal.signal(signal.SIGTERM, previous)
    finally:
        records.close()


def _stopped(signum, frame) -> None:
    raise SystemExit(0)  # a stop asked for: the clean-up in serve() runs, and the exit is a success
