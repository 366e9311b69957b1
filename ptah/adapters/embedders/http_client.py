"""Clients of HTTP services on one pooled ``httpx.Client``: :class:`ServiceClient`, the transport
and its policy, and :class:`EmbeddingsClient`, the OpenAI embeddings API (``POST
{base_url}/embeddings``); the rerank service's client
(:mod:`ptah.adapters.rerankers.rerank_client`) is the other.

* Transport: JSON requests, ``max_concurrency`` in flight on kept-alive connections, each with a
  whole-request deadline of ``timeout_s`` (the body is read in pieces with the deadline checked
  between them, so a trickling server fails at it). A timeout, a lost connection, 429 or 5xx is
  retried with jittered exponential backoff (``Retry-After`` honoured), at most
  :attr:`Policy.attempts` times, each wait at most :attr:`Policy.max_delay_s`; then, or at once
  for another status or a redirect, :class:`ServiceUnavailable` (exit 3) names the endpoint, the
  status and the provider's message (bounded, controls escaped, the key masked).
* An answer is refused unless labelled JSON when labelled at all (a ``text/html`` 200 is a proxy's
  page); a bound of it is read, uncompressed. Redirects are not followed and the key goes into the
  ``Authorization`` header only, so it never reaches another host.
* Embeddings: at most ``batch_size`` inputs and :attr:`Policy.max_request_chars` characters a
  request; an answer must hold one finite vector per input, in order, of one dimension (the one
  asked for, if asked), from the model asked for, within :meth:`Policy.response_limit` bytes.
"""

from __future__ import annotations

import email.utils
import json
import random
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, NoReturn, TypeVar

import httpx
import numpy as np

from ptah.adapters.embedders.json_answers import DuplicateKey, loads_unique
from ptah.core.errors import ServiceUnavailable
from ptah.core.report import all_of

MESSAGE_LIMIT = 200  # characters of a provider's message told to the user
ERROR_BODY_LIMIT = 64 * 1024
T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class Policy:
    """Retries and request sizes; tests lower them (``openai_compatible.POLICY``)."""

    attempts: int = 6
    backoff_s: float = 0.5
    max_delay_s: float = 30.0
    max_request_chars: int = 400_000
    bytes_per_value: int = (
        32  # a float written in JSON, with its separator, is at most 25 characters
    )

    def response_limit(self, inputs: int, dimension: int | None) -> int:
        """The most bytes read of an answer to ``inputs`` texts."""
        return 1024 * 1024 + inputs * (dimension or 8192) * self.bytes_per_value


@dataclass(frozen=True)
class Connection:
    """How a client talks to its server: the key (never shown), texts per request, requests in
    flight, the retry policy and the seconds a whole request may take."""

    key: str | None = field(repr=False)
    batch_size: int
    max_concurrency: int
    policy: Policy
    timeout_s: float


@dataclass
class Usage:
    """What embedding cost: requests sent (retries included), retries, the texts and characters
    answered (ptah's count), the prompt tokens the server said it counted (its own measure: some
    servers count characters), and seconds -- waits summed over the requests, so with several in
    flight they add up to more than the time taken."""

    requests: int = 0
    retries: int = 0
    texts: int = 0
    characters: int = 0
    prompt_tokens: int | None = None
    server_s: float = 0.0
    backoff_s: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(
        self,
        *,
        requests: int = 0,
        retries: int = 0,
        texts: int = 0,
        characters: int = 0,
        tokens: int | None = None,
        server_s: float = 0.0,
        backoff_s: float = 0.0,
    ) -> None:
        with self._lock:
            self.requests += requests
            self.retries += retries
            self.texts += texts
            self.characters += characters
            if tokens is not None:
                self.prompt_tokens = (self.prompt_tokens or 0) + tokens
            self.server_s += server_s
            self.backoff_s += backoff_s

    def as_dict(self, max_concurrency: int = 1) -> dict:
        return {
            "requests": self.requests,
            "retries": self.retries,
            "texts": self.texts,
            "characters": self.characters,
            "server_prompt_tokens": self.prompt_tokens,
            "server_seconds": round(self.server_s, 3),
            "backoff_seconds": round(self.backoff_s, 3),
            "max_concurrency": max_concurrency,
        }


class _Retry(Exception):
    def __init__(
        self, what: str, retry_after: float | None = None, remedy: str = "try again later"
    ):
        super().__init__(what)
        self.what, self.retry_after, self.remedy = what, retry_after, remedy


class ServiceClient:
    """POSTs JSON to one endpoint of a service under the module's policy (retries, whole-request
    deadline, bounded reads, no redirects, the key in the ``Authorization`` header only) and counts
    :attr:`usage`.

    A subclass says what it sends and checks what comes back; ``service`` names it in messages
    (``the embedding service URL ...``), ``refused`` ends the sentence that refuses an answer.
    """

    service = "service"
    refused = "the answer was refused"

    def __init__(self, endpoint: str, connection: Connection):
        key = connection.key
        self.endpoint = endpoint
        self.batch_size = connection.batch_size
        self.max_concurrency = connection.max_concurrency
        self.policy = connection.policy
        self.timeout_s = connection.timeout_s
        self.usage = Usage()
        self._key = key
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "Accept-Encoding": "identity",
            "User-Agent": "ptah",
        }
        if key:
            headers["Authorization"] = f"Bearer {key}"
        self._http = httpx.Client(
            headers=headers,
            follow_redirects=False,
            limits=httpx.Limits(
                max_connections=self.max_concurrency,
                max_keepalive_connections=self.max_concurrency,
            ),
        )

    def close(self) -> None:
        """Close the pooled connections (a closed client sends nothing more)."""
        self._http.close()

    @property
    def closed(self) -> bool:
        return self._http.is_closed

    def in_parallel(self, work: Callable[[T], R], batches: list[T]) -> list[R]:
        """``work`` of each batch, in order, ``max_concurrency`` of them in flight (threads sharing
        the connections)."""
        if len(batches) <= 1 or self.max_concurrency == 1:
            return [work(batch) for batch in batches]
        with ThreadPoolExecutor(max_workers=min(self.max_concurrency, len(batches))) as pool:
            return list(pool.map(work, batches))

    def post(self, body: dict, limit: int) -> bytes:
        """The body of the answer to ``body`` sent as JSON, at most ``limit`` bytes (more is
        refused), after the retries the policy allows; :class:`ServiceUnavailable` once they are
        spent or for an answer never retried."""
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        policy = self.policy
        for attempt in range(1, policy.attempts + 1):
            started = time.monotonic()
            try:
                raw = self._post(data, limit)
            except _Retry as exc:
                self.usage.add(requests=1, server_s=time.monotonic() - started)
                if attempt == policy.attempts:
                    raise ServiceUnavailable(
                        f"the {self.service} {self.endpoint} {exc.what} "
                        f"to {all_of(policy.attempts, 'attempt')}; {exc.remedy}"
                    ) from None
                delay = min(
                    policy.max_delay_s, policy.backoff_s * 2 ** (attempt - 1)
                ) * random.uniform(0.5, 1.0)
                if exc.retry_after is not None:
                    delay = max(delay, min(exc.retry_after, policy.max_delay_s))
                self.usage.add(retries=1, backoff_s=delay)
                time.sleep(delay)
                continue
            self.usage.add(requests=1, server_s=time.monotonic() - started)
            return raw
        raise AssertionError("unreachable")  # pragma: no cover

    def document(self, raw: bytes, *, constants: bool = False) -> Any:
        """The answer read as JSON (``NaN`` and ``Infinity`` too, with ``constants``); refused if it
        is not, or if an object in it names one key twice (which of the two values counts is no
        parser's to choose)."""
        try:
            return loads_unique(raw, parse_constant=None if constants else _no_constant)
        except DuplicateKey as exc:
            self.refuse(exc.sentence(self.visible))
        except (ValueError, UnicodeDecodeError, RecursionError):
            self.refuse("answered with something that is not JSON")

    def refuse(self, what: str) -> NoReturn:
        """:class:`ServiceUnavailable`: the service ``what`` (e.g. ``answered 2 scores for 3
        documents``)."""
        raise ServiceUnavailable(f"the {self.service} {self.endpoint} {what}; {self.refused}")

    def visible(self, text: str) -> str:
        """``text`` on one bounded line: control characters escaped, the key masked."""
        if self._key:
            text = text.replace(self._key, "***")
        shown = "".join(char if char.isprintable() else ascii(char)[1:-1] for char in text)
        shown = " ".join(shown.split())
        return shown if len(shown) <= MESSAGE_LIMIT else shown[: MESSAGE_LIMIT - 3] + "..."

    def _post(self, data: bytes, limit: int) -> bytes:
        deadline = time.monotonic() + self.timeout_s
        try:
            timeout = httpx.Timeout(
                self.timeout_s
            )  # connect, write, pool and each read; the deadline is below
            with self._http.stream("POST", self.endpoint, content=data, timeout=timeout) as answer:
                if not answer.is_success:  # a redirect too: the key stays with this host
                    self._failed(answer, deadline)
                kind = answer.headers.get("Content-Type")
                if kind is not None and not _is_json(
                    kind
                ):  # a proxy's or a login page's answer, not the API's
                    self.refuse(
                        f"answered {self.visible(kind.split(';')[0].strip())}, not JSON (a proxy or a "
                        "login page?)"
                    )
                raw = self._read(answer, limit + 1, deadline)
        except httpx.TimeoutException:
            raise self._timed_out() from None
        except httpx.TransportError as exc:
            raise _Retry(
                "could not be reached or dropped the connection "
                f"({self.visible(str(exc) or type(exc).__name__)})"
            ) from None
        if len(raw) > limit:
            self.refuse(f"sent more than {limit:,} bytes")
        return raw

    def _read(self, answer: httpx.Response, most: int, deadline: float) -> bytes:
        """At most ``most`` bytes of the answer's body, all of them before ``deadline``."""
        body = bytearray()
        for chunk in answer.iter_raw():
            if time.monotonic() > deadline:
                raise self._timed_out()
            body += chunk
            if len(body) >= most:
                break
        return bytes(body[:most])

    def _timed_out(self) -> _Retry:
        return _Retry(
            f"did not answer within timeout_s ({self.timeout_s:g} s)",
            remedy=f"each retry re-sends work the server may still be doing, so try a smaller batch_size "
            f"(now {self.batch_size}) or a larger timeout_s",
        )

    def _failed(self, answer: httpx.Response, deadline: float) -> None:
        status = answer.status_code
        try:
            message = self._message(self._read(answer, ERROR_BODY_LIMIT, deadline))
        except (httpx.TransportError, _Retry):  # the body is only told, never needed
            message = "no message"
        if status == 429 or status >= 500:
            raise _Retry(
                f"answered HTTP {status} ({message})",
                _retry_after(answer.headers.get("Retry-After")),
            )
        raise ServiceUnavailable(
            f"the {self.service} {self.endpoint} refused the request with HTTP {status} "
            f"({message}); check the model, the key and base_url"
        )

    def _message(self, raw: bytes) -> str:
        text = raw.decode("utf-8", errors="replace")
        try:
            document = json.loads(text)
        except ValueError:
            document = None
        if isinstance(document, dict):
            error = document.get("error", document.get("detail", document.get("message")))
            if isinstance(error, dict):
                error = error.get("message")
            if isinstance(error, str):
                text = error
        return self.visible(text) if text.strip() else "no message"


class EmbeddingsClient(ServiceClient):
    """Embeds texts with one model of one OpenAI-compatible server (see module docs)."""

    service = "embedding service"
    refused = "the answer was refused and nothing was stored"

    def __init__(self, base_url: str, model: str, dimensions: int | None, connection: Connection):
        super().__init__(base_url.rstrip("/") + "/embeddings", connection)
        self.model, self.dimensions = model, dimensions
        self.dimension: int | None = dimensions  # learnt from the first answer when not asked
        self.served_model: str | None = (
            None  # the model the last answer named (None: it named none)
        )

    def embed(
        self, texts: Sequence[str], progress: Callable[[int], None] | None = None
    ) -> np.ndarray:
        """One float32 row per text, in order (``(0, dimension)`` for none); ``progress(texts
        answered so far)`` after each request that is answered."""
        batches = list(self._batches(texts))
        if not batches:
            return np.zeros((0, self.dimension or 0), dtype=np.float32)
        lock, answered = threading.Lock(), [0]

        def request(batch: list[str]) -> np.ndarray:
            part = self._request(batch)
            if progress is not None:
                with lock:  # requests answer in any thread
                    answered[0] += len(batch)
                    progress(answered[0])
            return part

        return np.ascontiguousarray(
            np.concatenate(self.in_parallel(request, batches)), dtype=np.float32
        )

    def _batches(self, texts: Sequence[str]):
        batch: list[str] = []
        chars = 0
        for text in texts:
            if batch and (
                len(batch) >= self.batch_size or chars + len(text) > self.policy.max_request_chars
            ):
                yield batch
                batch, chars = [], 0
            batch.append(text)
            chars += len(text)
        if batch:
            yield batch

    def _request(self, batch: list[str]) -> np.ndarray:
        body: dict[str, Any] = {"model": self.model, "input": batch, "encoding_format": "float"}
        if self.dimensions is not None:
            body["dimensions"] = self.dimensions
        vectors = self._vectors(
            self.post(body, self.policy.response_limit(len(batch), self.dimension)), len(batch)
        )
        self.usage.add(texts=len(batch), characters=sum(len(text) for text in batch))
        return vectors

    def _vectors(self, raw: bytes, inputs: int) -> np.ndarray:
        document = self.document(raw)
        data = document.get("data") if isinstance(document, dict) else None
        if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
            self.refuse("answered JSON that is not an embeddings list (no data: [{embedding: …}])")
        served = document.get("model")
        if served is not None and served != self.model:
            self.refuse(
                f'answered with model "{self.visible(str(served))}", not "{self.model}" as asked'
            )
        self.served_model = served
        if len(data) != inputs:
            self.refuse(f"answered {len(data)} vectors for {inputs} texts")
        order = [item.get("index", position) for position, item in enumerate(data)]
        if sorted(order) != list(range(inputs)) or any(isinstance(index, bool) for index in order):
            self.refuse("answered vectors whose index fields are not each of 0 to n-1 once")
        rows: list[Any] = [None] * inputs
        for index, item in zip(order, data):
            rows[index] = item.get("embedding")
        if not all(
            isinstance(row, list)
            and row
            and all(
                isinstance(value, (int, float)) and not isinstance(value, bool) for value in row
            )
            for row in rows
        ):
            self.refuse("answered an embedding that is not a list of numbers")
        lengths = {len(row) for row in rows}
        expected = self.dimension
        if len(lengths) != 1 or (expected is not None and lengths != {expected}):
            sizes = ", ".join(str(n) for n in sorted(lengths))
            self.refuse(
                f"answered vectors of dimension {sizes}" + (f", not {expected}" if expected else "")
            )
        with np.errstate(over="ignore"):
            matrix = np.asarray(rows, dtype=np.float64).astype(np.float32)
        if not np.isfinite(matrix).all():
            self.refuse("answered a vector with a value that is not a finite float32")
        if self.dimension is None:
            self.dimension = matrix.shape[1]
        usage = document.get("usage")
        tokens = usage.get("prompt_tokens") if isinstance(usage, dict) else None
        self.usage.add(
            tokens=tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else None
        )
        return matrix


def _is_json(content_type: str) -> bool:
    media = content_type.split(";")[0].strip().lower()
    return media == "application/json" or media.endswith("+json")


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


def _retry_after(value: str | None) -> float | None:
    """Seconds a ``Retry-After`` header asks to wait (a number of seconds or an HTTP date); ``None``
    if unreadable."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - time.time()
    return max(0.0, seconds) if seconds == seconds else None
