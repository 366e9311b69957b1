"""The ``chat`` judge: an OpenAI-compatible ``POST {base_url}/chat/completions`` grades each pair.

One request a (query, judging text) pair, temperature 0: ptah's fixed prompt (:data:`PROMPT`, in
the judge's identity by its SHA-256) as the system message; the query, the row's text and the
corpus's grade scale as the user's. ``choices[0].message.content`` must be exactly ``{"grade":
G}``, G a grade of the scale (a fenced ```json block is read too); anything else -- prose, another
grade or field, another model than asked -- is a *refused* answer, counted by reason, never
recorded. The server's ``usage`` tokens are counted under their own names. Requests use the
service client's policy (:class:`~ptah.adapters.embedders.http_client.ServiceClient`); an answer
that is no chat completion, JSON naming a key twice anywhere, or a server that keeps failing is
exit 3. httpx is imported only when a chat judge is opened.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING, Any

from ptah.adapters.embedders.base import service_key
from ptah.adapters.embedders.json_answers import DuplicateKey, loads_unique
from ptah.adapters.judges.base import JudgeContext
from ptah.core.errors import InputError
from ptah.core.spec import JudgeSettings

if TYPE_CHECKING:
    from ptah.adapters.embedders.http_client import Policy

KIND = "chat"
POLICY: Policy | None = None  # the client's retries (None: its defaults); tests lower them
ANSWER_BYTES = 256 * 1024
MAX_TEXT_CHARS = (
    8_000  # of a row's judging text sent; the rest is cut (and the cut is part of the identity)
)
PROMPT = """\
You judge search results. Given a search query and the text of one row of a database table, decide how relevant \
the row is to the query: would a person who searched for this query want this row among the results?

Answer with exactly one JSON object and nothing else: {"grade": G}, where G is one of the grades listed in the \
message. 0 means not relevant; higher grades mean more relevant. Judge only the row's text, not its format."""
_FENCED = re.compile(r"```(?:json)?\s*(\{.*\})\s*```\Z", re.DOTALL)


class ChatKind:
    name = KIND
    service = True  # asks a chat service: the specification reads its endpoint

    def check(self, settings: JudgeSettings, written: AbstractSet[str]) -> list[tuple[str, str]]:
        """What ``settings`` lack, as (field, message) pairs."""
        if settings.model is None:
            return [("model", "missing; name the model the chat service is asked for")]
        return []

    def open(self, settings: JudgeSettings, context: JudgeContext) -> ChatJudge:
        service = settings.service
        if service is None or not settings.model:
            raise InputError(
                "the chat judge needs model: and base_url: (an OpenAI-compatible server)"
            )
        key = service_key(service, context.env)
        # httpx only once a chat judge is used
        from ptah.adapters.embedders.http_client import Connection, Policy, ServiceClient

        class ChatClient(ServiceClient):
            service = "chat service"

        connection = Connection(key, 1, 1, POLICY or Policy(), service.timeout_s)
        client = ChatClient(service.base_url + "/chat/completions", connection)
        return ChatJudge(settings.model, client, context.scale)


class ChatJudge:
    """Grades through a chat completions endpoint; :meth:`usage` says what it cost, :attr:`refusals`
    why answers were refused."""

    def __init__(self, model: str, client, scale: tuple[float, ...]):
        self.model, self.client, self.scale = model, client, scale
        self.refusals: Counter[str] = Counter()
        self._tokens = [0, 0]  # prompt, completion, as the server counted them
        self._pairs = 0

    def grades(self, pairs: Sequence[tuple[str, str]]) -> list[float | None]:
        return [self._grade(query, text) for query, text in pairs]

    def _grade(self, query: str, text: str) -> float | None:
        grades = ", ".join(f"{grade:g}" for grade in self.scale)
        message = f"Grades: {grades}\n\nQuery:\n{query}\n\nRow text:\n{text[:MAX_TEXT_CHARS]}"
        body = {
            "model": self.model,
            "temperature": 0,
            "max_tokens": 20,
            "messages": [
                {"role": "system", "content": PROMPT},
                {"role": "user", "content": message},
            ],
        }
        raw = self.client.post(body, ANSWER_BYTES)
        self._pairs += 1
        answer = self.client.document(raw)
        content = self._content(answer)
        served = answer.get("model")
        if served is not None and served != self.model:
            return self._refused(
                f'answered by model "{self.client.visible(str(served))}", not "{self.model}"'
            )
        return self._parsed(content)

    def _content(self, answer: Any) -> str | None:
        """The first choice's message text; the answer refused (exit 3) when it is no chat
        completion at all."""
        choices = answer.get("choices") if isinstance(answer, dict) else None
        first = choices[0] if isinstance(choices, list) and choices else None
        message = first.get("message") if isinstance(first, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, str):
            self.client.refuse(
                "answered JSON that is not a chat completion (no choices[0].message.content)"
            )
        usage = answer.get("usage")
        if isinstance(usage, dict):
            for index, name in enumerate(("prompt_tokens", "completion_tokens")):
                value = usage.get(name)
                if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 10**9:
                    self._tokens[index] += value
        return content

    def _parsed(self, content: str | None) -> float | None:
        text = (content or "").strip()
        fenced = _FENCED.match(text)
        try:
            found = loads_unique(fenced[1] if fenced else text)
        except (
            DuplicateKey
        ) as exc:  # a grade and its contradiction: the service's fault, not one refused answer
            self.client.refuse(exc.sentence(self.client.visible))
        except (ValueError, RecursionError):
            return self._refused("not a JSON object")
        if not isinstance(found, dict) or set(found) != {"grade"}:
            return self._refused('not exactly {"grade": G}')
        grade = found["grade"]
        if (
            isinstance(grade, bool)
            or not isinstance(grade, (int, float))
            or float(grade) not in self.scale
        ):
            return self._refused("a grade off the corpus's scale")
        return float(grade)

    def _refused(self, why: str) -> float | None:
        """None, the answer refused, counted under ``why``."""
        self.refusals[why] += 1
        return None

    def usage(self) -> dict:
        """What was asked of the server since it was opened or last asked this."""
        usage, self.client.usage = self.client.usage, type(self.client.usage)()
        tokens, self._tokens = self._tokens, [0, 0]
        pairs, self._pairs = self._pairs, 0
        refusals, self.refusals = dict(self.refusals), Counter()
        return {
            "requests": usage.requests,
            "retries": usage.retries,
            "pairs": pairs,
            "server_prompt_tokens": tokens[0],
            "server_completion_tokens": tokens[1],
            "server_seconds": round(usage.server_s, 3),
            "backoff_seconds": round(usage.backoff_s, 3),
            "refused": refusals,
        }

    def describe(self) -> dict:
        return {
            "kind": KIND,
            "model": self.model,
            "endpoint": self.client.endpoint,
            "prompt_sha256": hashlib.sha256(PROMPT.encode("utf-8")).hexdigest(),
            "text_chars": MAX_TEXT_CHARS,
        }
