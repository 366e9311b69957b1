"""Is ``source.filter`` one SQL expression? Checked before any database sees it.

A source reader places the filter, as written, inside ``WHERE (…)`` and
``CASE WHEN (…)``. That is safe only if the text cannot close the parenthesis
ptah opened, start a second statement, or hide the rest of ptah's statement in
a comment. :func:`filter_problem` reads the text as the database's own lexer
does -- string literals, quoted identifiers and, for PostgreSQL, escape strings
(``E'…'``) and dollar quotes (``$tag$…$tag$``); for SQLite, ```…``` and
``[…]`` identifiers -- and refuses, outside them:

* ``;``, which ends a statement;
* ``--`` and ``/*``, which start a comment (one could swallow ptah's ``)``);
* a ``)`` closing a parenthesis the filter did not open, and a ``(`` left open;
* a quote left open, and a NUL character.

This is the first of two locks. The second is in the readers: every statement
holding the filter runs where the database accepts exactly one statement
(PostgreSQL's extended query protocol; Python's one-statement
``sqlite3.execute``) inside a read-only transaction the filter cannot end.

PostgreSQL strings are read with ``standard_conforming_strings`` on (a
backslash is an ordinary character in ``'…'``, as PostgreSQL has read them by
default since 9.1); the PostgreSQL reader sets it for its session, so the
server reads the filter exactly as this check did.
"""

from __future__ import annotations

import re

from ptah.adapters.sources.base import source_kind

POSTGRES = "postgresql"
SQLITE = "sqlite"

# The two patterns with Unicode classes take about 15 ms to compile, so they are compiled when a filter is first
# read (``re`` keeps them), not by every command that opens a project.
_WORD = r"[A-Za-z_\u0080-\U0010ffff][A-Za-z0-9_$\u0080-\U0010ffff]*"  # identifiers and keywords
_NUMBER = re.compile(r"[0-9][0-9.]*(?:[eE][+-]?[0-9]+)?")
_PARAMETER = re.compile(r"\$[0-9]+")
_DOLLAR_TAG = r"\$(?:[A-Za-z_\u0080-\U0010ffff][A-Za-z0-9_\u0080-\U0010ffff]*)?\$"

_SUFFIX = "; a filter is one boolean expression, such as status = 'published'"


def dialect_of(database: str) -> str:
    """The SQL dialect the filter of a source at ``database`` (a URL) is read in (named as its source kind)."""
    return POSTGRES if source_kind(database) == POSTGRES else SQLITE


def filter_problem(text: str, dialect: str) -> str | None:
    """Why ``text`` is not one expression ptah may place inside ``WHERE (…)``, or None when it is.

    ``dialect`` is :data:`POSTGRES` or :data:`SQLITE`. Positions in the
    message count characters from 1.
    """
    if "\x00" in text:
        return f"the NUL character at character {text.index(chr(0)) + 1} cannot be part of an SQL expression; remove it"
    opened: list[int] = []  # where each ( not yet closed is
    position, end = 0, len(text)
    while position < end:
        char = text[position]
        pair = text[position : position + 2]
        if pair in ("--", "/*"):
            return (f"the {pair} at character {position + 1} starts a comment, which could hide the rest of ptah's "
                    f"statement; remove the comment{_SUFFIX}")
        if char == ";":
            return f"the ; at character {position + 1} would end the statement (outside quotes, ; is not allowed){_SUFFIX}"
        if char == "(":
            opened.append(position)
        elif char == ")":
            if not opened:
                return (f"the ) at character {position + 1} closes a parenthesis the filter did not open, which would "
                        f"end ptah's WHERE (…){_SUFFIX}")
            opened.pop()
        elif char in "'\"" or (dialect == SQLITE and char in "`["):
            after = _after_quote(text, position, char)
            if after < 0:
                return _unclosed(char, position)
            position = after
            continue
        elif dialect == POSTGRES and char == "$":
            after = _after_dollar(text, position)
            if after < 0:
                return _unclosed(re.compile(_DOLLAR_TAG).match(text, position).group(), position)
            position = after
            continue
        else:
            word = re.compile(_WORD).match(text, position) or _NUMBER.match(text, position)
            if word:
                position = word.end()
                if dialect == POSTGRES and word.group().lower() == "e" and text[position : position + 1] == "'":
                    after = _after_escape_string(text, position)
                    if after < 0:
                        return _unclosed("E'", word.start())
                    position = after
                continue
        position += 1
    if opened:
        return f"the ( at character {opened[-1] + 1} is never closed{_SUFFIX}"
    return None


def _unclosed(opener: str, start: int) -> str:
    return f"the quote {opener} at character {start + 1} is never closed{_SUFFIX}"


def _after_quote(text: str, start: int, opener: str) -> int:
    """The position after the quoted text starting at ``start``; -1 when it is never closed.

    ``'…'``, ``"…"`` and ```…``` end at a lone closing quote (a doubled one is
    part of the text); ``[…]`` (SQLite) ends at the first ``]``.
    """
    closer = "]" if opener == "[" else opener
    position = start + 1
    while True:
        found = text.find(closer, position)
        if found < 0:
            return -1
        if closer != "]" and text[found + 1 : found + 2] == closer:
            position = found + 2
            continue
        return found + 1


def _after_escape_string(text: str, quote: int) -> int:
    """After PostgreSQL's ``E'…'`` whose quote is at ``quote``: a backslash escapes the next character."""
    position = quote + 1
    end = len(text)
    while position < end:
        char = text[position]
        if char == "\\":
            position += 2
        elif char == "'":
            if text[position + 1 : position + 2] != "'":
                return position + 1
            position += 2
        else:
            position += 1
    return -1


def _after_dollar(text: str, start: int) -> int:
    """After a PostgreSQL ``$N`` parameter, a ``$tag$…$tag$`` string, or a lone ``$``; -1 for an unclosed string."""
    parameter = _PARAMETER.match(text, start)
    if parameter:
        return parameter.end()
    tag = re.compile(_DOLLAR_TAG).match(text, start)
    if not tag:
        return start + 1
    closing = text.find(tag.group(), tag.end())
    return -1 if closing < 0 else closing + len(tag.group())
