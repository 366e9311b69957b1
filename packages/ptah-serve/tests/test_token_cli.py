"""``ptah token create|list|revoke``: the token is printed once, only a digest is stored, bad input
is exit 2."""

from __future__ import annotations

import hashlib
import json
import sqlite3

import pytest
from serving import ptah

from ptah_serve.records import open_records
from ptah_serve.tokens import Grant, check_token


def test_tokens_are_created_listed_and_revoked_and_only_their_hash_is_stored(project):
    made = ptah(
        "token", "create", "--scope", "read", "--name", "viewer", "--spec", str(project.spec)
    )
    assert made.returncode == 0
    token = made.stdout.splitlines()[-1]
    assert (
        made.stdout.splitlines()[0]
        == "token viewer (scope read); keep it now, it is not shown again:"
    )
    token_id, secret = token.split(".")[1:]
    assert token.startswith("ptah.") and len(token_id) == 12 and len(secret) == 43
    listed = ptah("token", "list", "--json", "--spec", str(project.spec))
    entries = json.loads(listed.stdout)
    assert [(entry["name"], entry["scope"], entry["revoked_at"] is None) for entry in entries] == [
        ("manage", "manage", True),
        ("read", "read", True),
        ("revoked", "manage", False),
        ("viewer", "read", True),
    ]
    assert sorted(entries[0]) == ["created_at", "name", "revoked_at", "scope"]
    assert (
        secret not in listed.stdout
        and secret not in ptah("token", "list", "--spec", str(project.spec)).stdout
    )
    with sqlite3.connect(project.folder / ".ptah" / "ptah.db") as connection:
        stored = " ".join(body for (body,) in connection.execute("SELECT body FROM records"))
    assert secret not in stored and token_id in stored
    record = json.loads(
        next(
            body
            for (body,) in sqlite3.connect(project.folder / ".ptah" / "ptah.db").execute(
                "SELECT body FROM records WHERE kind = 'token' AND key = ?", (token_id,)
            )
        )
    )
    assert sorted(record) == ["created_at", "hash", "id", "kdf", "name", "revoked_at", "scope"]
    assert (record["kdf"], record["hash"]) == (
        "sha256",
        hashlib.sha256(secret.encode()).hexdigest(),
    )
    assert ptah("token", "revoke", "viewer", "--spec", str(project.spec)).returncode == 0
    again = ptah("token", "revoke", "viewer", "--spec", str(project.spec))
    assert (again.returncode, again.stderr.strip()) == (
        2,
        "no active token is named 'viewer' (see `ptah token list`).",
    )


def test_bad_scopes_names_and_duplicates_are_exit_2(project):
    for args, message in (
        (["--scope", "admin"], "the scope must be read or manage, not 'admin'."),
        (["--scope", "read", "--name", "a b"], "a token name is 1 to 64 letters"),
        (["--scope", "read", "--name", "manage"], 'an active token is named "manage" already'),
    ):
        made = ptah("token", "create", *args, "--spec", str(project.spec))
        assert made.returncode == 2 and made.stderr.startswith(message), made.stderr
        assert made.stdout == ""


@pytest.mark.parametrize(
    "option, value, says",
    [
        ("--port", "70000", "70000 is not in the range 1<=x<=65535"),
        ("--max-searches", "0", "0 is not in the range x>=1"),
    ],
)
def test_a_number_out_of_range_is_exit_2_not_an_internal_error(project, option, value, says):
    served = ptah("serve", "--spec", str(project.spec), option, value)
    assert served.returncode == 2
    assert says in served.stderr and "internal error" not in served.stderr


def test_a_token_an_earlier_ptah_stored_as_scrypt_still_verifies(tmp_path):
    secret = "s" * 43
    salt = bytes(range(16))
    old = {
        "id": "abcdefghijkl",
        "name": "old",
        "scope": "read",
        "salt": salt.hex(),
        "kdf": "scrypt(n=16384,r=8,p=1)",
        "hash": hashlib.scrypt(secret.encode(), salt=salt, n=2**14, r=8, p=1, dklen=32).hex(),
        "created_at": "2026-12-01T00:00:00+00:00",
        "revoked_at": None,
    }
    records = open_records(str(tmp_path / "ptah.db"))
    records.put("token", old["id"], json.dumps(old))
    assert check_token(records, f"ptah.abcdefghijkl.{secret}") == (Grant("old", "read"), "ok")
    assert check_token(records, f"ptah.abcdefghijkl.{'t' * 43}") == (None, "invalid")
    records.close()
