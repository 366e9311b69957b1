"""Connection URLs that travel to Ray workers whole, but never show their passwords.

A distributed build's workers connect to the source and the store themselves,
with the URLs as the driver expanded them (``${VAR}`` included), so the URLs
travel in the actors' creation arguments. A :class:`Sealed` URL carries one:
its ``repr`` and ``str`` -- what Ray writes into an error about an argument,
a log line or a task's description -- are the URL with its password replaced
by ``***``; :meth:`Sealed.reveal` gives it whole to the code that connects.

:func:`scrub` clears a message of the passwords, for what a worker raises and
what the driver says about it: a library's error may quote the URL it was
given, and a worker's error travels to the driver and into Ray's logs.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

from ptah.adapters.postgres import secrets_of
from ptah.core.spec import redact_url

HIDDEN = "***"


@dataclass(frozen=True, slots=True, repr=False)
class Sealed:
    """A database URL whose ``repr`` and ``str`` hide its password; pickled whole."""

    _url: str

    def reveal(self) -> str:
        """The URL as written, password included: only to connect with."""
        return self._url

    def __str__(self) -> str:
        return redact_url(self._url)

    def __repr__(self) -> str:
        return f"Sealed({str(self)!r})"


def scrub(text: str, *urls: Sealed) -> str:
    """``text`` with each of ``urls`` shown redacted, and each of their passwords (as written,
    percent-decoded or percent-encoded) replaced by ``***``."""
    for url in urls:
        text = text.replace(url.reveal(), str(url))
    forms = {
        form
        for url in urls
        for secret in secrets_of(url.reveal())
        for form in (secret, quote(secret, safe=""), quote(secret))
    }
    for secret in sorted(forms, key=len, reverse=True):
        text = text.replace(secret, HIDDEN)
    return text
