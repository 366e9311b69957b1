"""A reader that goes away (``ptah … | head -1``) ends ptah with exit 141, never 1.

Exit 1 means "negative verdict", and click turns a broken pipe into exactly
that. ptah instead ends as every Unix filter killed by SIGPIPE does, with the
status a shell reports for one (128 + 13 = 141): under ``set -o pipefail`` a
pipeline that cut ptah short fails as it would with ``git log | head``, and a
script can tell "the reader left" from a pass (0), a failed gate (1) and
ptah's own failures (2, 3, 4). Whatever ptah wrote to files before (the
``--output`` report) is complete: the pipe breaks only while printing.

The standard streams are wrapped so that a broken pipe surfaces as
:class:`ReaderGone`, which is not an ``OSError`` and so passes click by;
:func:`leave_quietly` points them at ``/dev/null`` so that Python's flush at
exit cannot fail a second time and print a traceback.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

EXIT_READER_GONE = 141


class ReaderGone(Exception):
    """The other end of stdout or stderr was closed."""


class _Guarded:
    """A text stream whose broken pipe raises :class:`ReaderGone`; everything else passes
    through."""

    def __init__(self, stream: TextIO):
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            raise ReaderGone from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise ReaderGone from None

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


@contextmanager
def guarded_streams() -> Iterator[None]:
    """Wrap ``sys.stdout`` and ``sys.stderr`` for the duration of one command."""
    stdout, stderr = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Guarded(stdout), _Guarded(stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = stdout, stderr


def leave_quietly() -> None:
    """Exit 141 with stdout and stderr sent to ``/dev/null``: there is nobody left to tell."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        try:
            os.dup2(devnull, stream.fileno())
        except (
            OSError,
            ValueError,
            AttributeError,
        ):  # a stream without a descriptor (a test's capture)
            pass
    os.close(devnull)
    sys.exit(EXIT_READER_GONE)
