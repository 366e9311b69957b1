"""Text from files and databases made safe to print on a terminal.

Case ids, queries, keys, generation names, column names and the messages that
quote them come from files and databases a user may not control. Printed raw,
an ESC sequence clears the screen or sets the window title, a C1 CSI (U+009B)
does the same on terminals that honour it, and a bidi override reorders what
the reader sees. :func:`visible` writes each such character as an escape, the
way Python's ``repr`` does (``\\x1b``, ``\\x9b``, ``\\u202e``, ``\\n``), and
leaves every other character as it is.

Escaped: C0 controls (U+0000-U+001F), DEL (U+007F), C1 controls
(U+0080-U+009F), the bidi embeddings, overrides and isolates
(U+202A-U+202E, U+2066-U+2069) and the line and paragraph separators
(U+2028, U+2029). A newline is escaped too unless the caller keeps newlines
(a multi-line message); in a table cell or a one-line listing it reads ``\\n``.
Backslashes are not doubled: the result is for reading, not for parsing back.

:func:`visible_json` does the same for JSON text printed to a terminal: JSON
already escapes C0 controls, and this writes DEL, C1, bidi and separator
characters as ``\\uXXXX`` escapes, which JSON reads back as the same string.

:func:`abbreviated` cuts a value a file may make huge (a 5,000-digit ``k``)
to a few characters and says how long it was, so that a message stays short.
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
