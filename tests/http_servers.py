"""The local HTTP servers the service tests talk to: threaded, on a free port, serving from a daemon
thread."""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        """A client that hung up (a timeout, a cancelled build) is what several tests do on purpose:
        not an error worth a traceback in the suite's output; anything else still prints one."""
        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            return
        super().handle_error(request, client_address)


def serve(handler: type[BaseHTTPRequestHandler]) -> tuple[ThreadingHTTPServer, threading.Thread]:
    """A server of ``handler`` on 127.0.0.1 (a free port), already serving, and its thread."""
    server = _Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server, thread


class FakeService:
    """What the fake services share: the requests they were sent (``requests``), the fault modes the
    next requests take, one each (``faults``), or every request takes (``always``), and their server
    at ``base_url`` (``/v1``). ``handler(service)`` makes the request handler class (a
    :class:`JsonHandler`); ``retry_after`` is the ``Retry-After`` a ``429`` mode sends, and ``sent``
    counts the bytes of a trickled body the client took before it hung up."""

    def __init__(self, handler):
        self.requests: list = []
        self.faults: list[str] = []
        self.always: str | None = None
        self.retry_after = "0"
        self.sent = 0
        self._lock = threading.Lock()
        self.httpd, self.thread = serve(handler(self))
        self.httpd.service = self  # type: ignore[attr-defined]
        self.port = self.httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self.faults.clear()
            self.always = None
            self.retry_after = "0"
            self.sent = 0

    def next_mode(self) -> str | None:
        with self._lock:
            return self.faults.pop(0) if self.faults else self.always

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class JsonHandler(BaseHTTPRequestHandler):
    """A quiet HTTP/1.1 handler that reads a JSON body and answers JSON (or the bytes it is
    given)."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet
        pass

    def setup(self):
        super().setup()
        # headers and body are two writes: without this, Nagle holds the body for the client's
        # delayed ACK (40 ms a request on a kept-alive connection), as no production server would
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def body(self):
        return json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))

    def record(self, body, mode: str | None) -> None:
        """Keep the request in the service's ``requests``: its path, ``Authorization`` header, body
        and mode."""
        service = self.server.service  # type: ignore[attr-defined]
        with service._lock:
            service.requests.append(
                {
                    "path": self.path,
                    "authorization": self.headers.get("Authorization"),
                    "body": body,
                    "mode": mode,
                }
            )

    def trickle(self, seconds: int) -> None:
        """A 200 announcing 100,000 bytes, then one byte a second until the client hangs up
        (``seconds`` at most)."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "100000")
        self.end_headers()
        self.close_connection = True
        try:
            for _ in range(seconds):
                self.wfile.write(b" ")
                self.wfile.flush()
                self.server.service.sent += 1  # type: ignore[attr-defined]
                time.sleep(1.0)
        except OSError:
            pass  # the client hung up

    def answer(self, status: int, document, headers: dict | None = None):
        payload = document if isinstance(document, bytes) else json.dumps(document).encode()
        headers = dict(headers or {})
        self.send_response(status)
        self.send_header("Content-Type", headers.pop("Content-Type", "application/json"))
        self.send_header("Content-Length", str(len(payload)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)
