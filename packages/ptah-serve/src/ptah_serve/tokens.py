"""Bearer tokens of ``ptah serve``: created once, kept only as a digest in the store, revoked at
once.

A token reads ``ptah.ID.SECRET``: ``ID`` (12 URL-safe characters) finds its
record, ``SECRET`` (43 URL-safe characters, 256 random bits from
:mod:`secrets`) proves it. The store keeps the record ``token/ID``: the
name, the scope and the secret's SHA-256 digest, never the secret (256 random
bits need no slow hash: no dictionary holds them). Checking reads the record
on every request (so a revocation from another process counts from the next
request) and compares digests with :func:`hmac.compare_digest`.

A token created by an earlier ptah is stored as a salted ``scrypt`` hash; it
still verifies that way (about 0.1 s a request): ``ptah token create`` a new
one and revoke the old to drop that cost.

Names: one active token per name in the store. Creating one claims its name
with the record ``token_name/NAME`` (added atomically, so of two concurrent
``ptah token create`` of one name exactly one succeeds); revoking releases it.

Scopes: ``read`` lists and fetches; ``manage`` also registers corpora and
starts or cancels evaluations.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
from dataclasses import dataclass

from ptah import InputError
from ptah.adapters.stores.records import now as _now
from ptah.core.visible import abbreviated

SCOPES = ("read", "manage")
KIND = "token"
NAME_KIND = "token_name"  # an active token's name -> its id
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")
_TOKEN = re.compile(r"ptah\.([A-Za-z0-9_-]{12})\.([A-Za-z0-9_-]{43})\Z")
_SCRYPT = {
    "n": 2**14,
    "r": 8,
    "p": 1,
    "maxmem": 64 * 1024 * 1024,
    "dklen": 32,
}  # tokens of an earlier ptah


@dataclass(frozen=True)
class Grant:
    """Who a request is: the token's name and scope."""

    name: str
    scope: str

    def allows(self, scope: str) -> bool:
        return self.scope == "manage" or scope == self.scope


def _digest(secret: str, record: dict | None = None) -> bytes:
    """The secret's digest as ``record`` keeps it: SHA-256, or scrypt with its salt for a token of
    an earlier ptah."""
    if record is not None and record["kdf"].startswith("scrypt"):
        return hashlib.scrypt(secret.encode("ascii"), salt=bytes.fromhex(record["salt"]), **_SCRYPT)
    return hashlib.sha256(secret.encode("ascii")).digest()


def _records_of(records) -> list[dict]:
    return [json.loads(body) for _, body in records.items(KIND)]


def create_token(records, scope: str, name: str | None = None) -> tuple[str, str]:
    """A new token of ``scope``: ``(name, token)``; the token is shown only now. InputError for a
    bad scope or a name an active token has."""
    if scope not in SCOPES:
        raise InputError(f"the scope must be read or manage, not {abbreviated(repr(scope))}.")
    token_id = secrets.token_urlsafe(9)
    name = f"token-{token_id}" if name is None else name
    if not _NAME.match(name):
        raise InputError(
            f"a token name is 1 to 64 letters, digits, '.', '_' or '-' (starting with a letter or "
            f"digit), not {abbreviated(repr(name))}."
        )
    taken = InputError(
        f'an active token is named "{name}" already; revoke it first or choose another name.'
    )
    if not records.add(NAME_KIND, name, token_id):
        raise taken
    if any(
        record["name"] == name and record["revoked_at"] is None for record in _records_of(records)
    ):
        records.remove(NAME_KIND, name)  # an active token of an earlier ptah, which claimed no name
        raise taken
    secret = secrets.token_urlsafe(32)
    record = {
        "id": token_id,
        "name": name,
        "scope": scope,
        "hash": _digest(secret).hex(),
        "kdf": "sha256",
        "created_at": _now(),
        "revoked_at": None,
    }
    records.put(KIND, token_id, json.dumps(record, sort_keys=True))
    return name, f"ptah.{token_id}.{secret}"


def list_tokens(records) -> list[dict]:
    """Every token, oldest first: name, scope, created_at, revoked_at (never a hash or a secret)."""
    return [
        {field: record[field] for field in ("name", "scope", "created_at", "revoked_at")}
        for record in _records_of(records)
    ]


def revoke_token(records, name: str) -> None:
    """Revoke the active token named ``name`` (from the next request on); InputError when there is
    none."""
    for token_id, body in records.items(KIND):
        record = json.loads(body)
        if record["name"] == name and record["revoked_at"] is None:
            record["revoked_at"] = _now()
            records.put(KIND, token_id, json.dumps(record, sort_keys=True))
            records.remove(NAME_KIND, name)
            return
    raise InputError(f"no active token is named {abbreviated(repr(name))} (see `ptah token list`).")


def check_token(records, presented: str | None) -> tuple[Grant | None, str]:
    """The grant of a presented token, or None and why: ``missing``, ``invalid`` or ``revoked``."""
    if not presented:
        return None, "missing"
    match = _TOKEN.match(presented)
    if match is None:
        return None, "invalid"
    token_id, secret = match.groups()
    body = records.get(KIND, token_id)
    if body is None:
        return None, "invalid"
    record = json.loads(body)
    if not hmac.compare_digest(_digest(secret, record), bytes.fromhex(record["hash"])):
        return None, "invalid"
    if record["revoked_at"] is not None:
        return None, "revoked"
    return Grant(record["name"], record["scope"]), "ok"
