"""Text from files and databases made safe to print on a terminal.

Case ids, queries, keys, names and the messages quoting them come from files a user may not
control; printed raw, an ESC or C1 CSI sequence can clear the screen or set the title, and a bidi
override reorders what the reader sees. :func:`visible` writes each such character as ``repr``
does (``\\x1b``, ``\\x9b``, ``\\u202e``, ``\\n``) and leaves every other as it is: C0 controls, DEL,
C1 controls, the bidi embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069) and
U+2028/U+2029; a newline too unless the caller keeps newlines. Backslashes are not doubled: the
result is for reading, not parsing back.

:func:`visible_json` writes DEL, C1, bidi and separator characters of JSON text as ``\\uXXXX``
(JSON already escapes C0), which reads back as the same string. :func:`abbreviated` cuts a value
a file may make huge (a 5,000-digit ``k``) to a few characters and says how long it was.
"""

from __future__ import annotations

import re

_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_BEYOND_C0 = "\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029"
_HIDDEN_CHARACTER = re.compile(f"[\x00-\x1f{_BEYOND_C0}]")
_HIDDEN_BUT_NEWLINE = re.compile(f"[\x00-\x09\x0b-\x1f{_BEYOND_C0}]")
_HIDDEN_IN_JSON = re.compile(f"[{_BEYOND_C0}]")


def _escape(match: re.Match) -> str:
    character = match.group()
    if character in _SHORT:
        return _SHORT[character]
    code = ord(character)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str, *, newlines: bool = False) -> str:
    """``text`` with every control, bidi override and line separator written as an escape.

    With ``newlines=True`` a newline stays a newline (a message of several
    lines); everything else listed in the module docs is still escaped.
    """
    pattern = _HIDDEN_BUT_NEWLINE if newlines else _HIDDEN_CHARACTER
    return pattern.sub(_escape, text)


def visible_json(text: str) -> str:
    """JSON text with DEL, C1, bidi and separator characters written as ``\\uXXXX`` escapes."""
    return _HIDDEN_IN_JSON.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def abbreviated(text: str, limit: int = 40, unit: str = "characters") -> str:
    """``text`` when at most ``limit`` characters, else its start, ``…`` and its length: ``12345…
    (5,000 digits)``."""
    if len(text) <= limit:
        return text
    return f"{text[: limit - 1]}… ({len(text):,} {unit})"
