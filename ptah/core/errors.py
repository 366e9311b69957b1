"""Typed errors. Each carries the exit code of its kind (docs/exit-codes.md).

Exit codes, the same in every command:

* 0 -- ok;
* 1 -- the check ran and its verdict is negative (a gate failed, a generation
  is incomplete or stale under ``verify``);
* 2 -- bad input or usage (:class:`InputError` and its subclasses);
* 3 -- operational failure (:class:`OperationalError` and its subclasses);
* 4 -- inconclusive: a drop gate fails on the measured values and passes on
  their high bounds, so the holes in the judgements decide it (and no other
  gate failed: 1 wins). Like 1, a verdict, not an error.

The CLI has one error boundary that turns a :class:`PtahError` into its
message on stderr and its exit code. Nothing here formats for a terminal, and
nothing here or in the use cases spells a flag: a message that advises an
option or a command is a function of :class:`Words`, which each interface
supplies (:data:`PLAIN` for ``str()``, the Python API and the server).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

EXIT_OK = 0
EXIT_NEGATIVE = 1
EXIT_INPUT = 2
EXIT_OPERATIONAL = 3
EXIT_INCONCLUSIVE = 4


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input file, located as precisely as known.

    Rendered as ``FILE:LINE: case "ID": field: message`` with the parts that
    are unknown left out.
    """

    message: str
    path: str | None = None
    line: int | None = None
    case: str | None = None
    field: str | None = None

    def __str__(self) -> str:
        where = ""
        if self.path is not None:
            where = self.path + (f":{self.line}" if self.line is not None else "") + ": "
        elif self.line is not None:
            where = f"line {self.line}: "
        if self.case is not None:
            where += f'case "{self.case}": '
        if self.field is not None:
            where += f"{self.field}: "
        return where + self.message

    def as_dict(self) -> dict:
        return {
            "path": self.path,
            "line": self.line,
            "case": self.case,
            "field": self.field,
            "message": self.message,
        }


class Words(Protocol):
    """How an interface names, in an error's advice, an option to set and a command to run.

    The methods naming a command return an imperative (``run `ptah inference build docs```), to be
    capitalised (:func:`capital`) where it starts a sentence.
    """

    def option(self, name: str, value: object = None) -> str:
        """Option ``name`` (a field of the request or a keyword: ``allow_stale``, ``search``), set
        to ``value`` where given (True: set, for a switch)."""
        ...

    def build(self, generation: str, spec: str | None) -> str:
        """Building ``generation`` of the specification at ``spec`` (None: the one found from the
        working folder)."""
        ...

    def index(self, generation: str) -> str:
        """Building ``generation``'s HNSW index."""
        ...

    def prune(self) -> str:
        """Removing from the store the generations no longer declared."""
        ...

    def listing(self) -> str:
        """What lists the stored generations, as a noun."""
        ...

    def rebaseline(self, report: str, corpus: str, spec: str | None) -> str:
        """Measuring the runs of the report at ``report`` again on the corpus at ``corpus``."""
        ...


class PlainWords:
    """:class:`Words` for the Python API and the server: an option by its name, a command by what it
    does or by the method that does it."""

    def option(self, name: str, value: object = None) -> str:
        return name if value is None else f"{name}={value}"

    def build(self, generation: str, spec: str | None) -> str:
        return f'build generation "{generation}"'

    def index(self, generation: str) -> str:
        return f'build one with Project.index("{generation}")'

    def prune(self) -> str:
        return "prune the store"

    def listing(self) -> str:
        return "Project.list_generations()"

    def rebaseline(self, report: str, corpus: str, spec: str | None) -> str:
        return "measure its runs again on this corpus"


PLAIN = PlainWords()

Said = Callable[[Words], str]


def capital(text: str) -> str:
    """``text`` with its first letter a capital, to start a sentence."""
    return text[:1].upper() + text[1:]


class PtahError(Exception):
    """Base of every error ptah reports to a user. Never shown as a traceback.

    ``message`` is a text, or a function of the :class:`Words` an interface names options and
    commands in; ``str()`` is it in :data:`PLAIN` words.
    """

    exit_code = EXIT_OPERATIONAL

    def __init__(self, message: str | Said, *, problems: tuple[Problem, ...] | list[Problem] = ()):
        self._said = message if callable(message) else None
        self.message = message(PLAIN) if callable(message) else message
        super().__init__(self.message)
        self.problems = tuple(problems)

    def said(self, words: Words) -> str:
        """The message with its advice in ``words`` (the command line's flags and commands)."""
        return self.message if self._said is None else self._said(words)

    def __str__(self) -> str:
        return self.message


class InputError(PtahError):
    """Bad input or usage: exit 2."""

    exit_code = EXIT_INPUT


class OperationalError(PtahError):
    """Something ptah needs is unavailable or unusable: exit 3."""

    exit_code = EXIT_OPERATIONAL


def _joined(problems: tuple[Problem, ...] | list[Problem]) -> str:
    return "\n".join(str(p) for p in problems)


def in_file_order(problems: tuple[Problem, ...] | list[Problem]) -> tuple[Problem, ...]:
    """``problems`` as a reader meets them in the file: by line within each file (files in the order
    first named, problems without a line last in theirs); problems on one line keep the order they
    were found in."""
    files: dict[str | None, int] = {}
    for problem in problems:
        files.setdefault(problem.path, len(files))
    return tuple(sorted(problems, key=lambda p: (files[p.path], p.line is None, p.line or 0)))


class VariantUnavailable(InputError):
    """A variant names a stage or capability that is absent (an index, a reranker kind or model):
    exit 2, never a fallback (docs/variants.md)."""


class CorpusError(InputError):
    """A corpus file is invalid. Carries every problem found, not just the first, in file order."""

    def __init__(self, problems: tuple[Problem, ...] | list[Problem]):
        problems = in_file_order(problems)
        super().__init__(_joined(problems), problems=problems)


class SpecError(InputError):
    """The specification (``ptah.yaml``) is invalid or cannot be found."""

    def __init__(self, problems: tuple[Problem, ...] | list[Problem] | str):
        problems = (Problem(problems),) if isinstance(problems, str) else in_file_order(problems)
        super().__init__(_joined(problems), problems=problems)


class IncomparableBaseline(InputError):
    """A baseline report was measured on a different corpus (digests differ) or is unreadable."""


class UnknownGeneration(InputError):
    """A generation name the specification does not declare, or one never built."""


class UnknownKey(InputError):
    """A corpus names a key the generation does not hold."""


class ReportError(InputError):
    """A report file (e.g. a baseline) cannot be read as ``ptah-report@1``."""


class SourceUnavailable(OperationalError):
    """The source database or table cannot be read."""


class StoreUnavailable(OperationalError):
    """The store cannot be opened, is locked, or is from an unknown schema version."""


class StoreDamaged(StoreUnavailable):
    """The store's contents are damaged: its database reports corruption, or a vector is not finite.

    ptah never writes such a store; the message says what was found and how to
    rebuild without deleting anything unasked.
    """


class ModelUnavailable(OperationalError):
    """The embedding model cannot be found or loaded offline."""


class ServiceUnavailable(ModelUnavailable):
    """An embedding service failed, kept failing past its retries, or answered something refused
    (exit 3)."""


class CredentialMissing(InputError):
    """The environment variable that should hold a service's key is not set (exit 2)."""


class StaleGeneration(OperationalError):
    """Evaluation was asked of a generation that is incomplete or stale.

    Where the generation can be made fresh, ``what`` says what is wrong with it and ``remedy`` (in
    an interface's words, a capitalised imperative) what makes it fresh, so that a use case that
    cannot measure it as it is says only that.
    """

    def __init__(self, message: str | Said, *, what: str = "", remedy: Said | None = None):
        super().__init__(message)
        self.what, self.remedy = what, remedy


class NotBuilt(StaleGeneration):
    """A generation asked for has no vectors built with its current settings (exit 3): the most
    incomplete of all."""

    def __init__(self, name: str, identity: str, spec_path: str | None = None) -> None:
        super().__init__(
            lambda words: (
                f'generation "{name}" has not been built with its current settings (identity '
                f"{identity}); {words.build(name, spec_path)} first."
            )
        )
        self.generation, self.identity = name, identity


class OutputUnwritable(OperationalError):
    """A file ptah was asked to write (a report, a run, a page) cannot be written."""


class OutputRefused(InputError):
    """An output path ptah must not write: a folder, a read-only file, a link to a file, a FIFO
    nobody reads."""


class CapabilityUnavailable(OperationalError):
    """A requested capability (an index, a channel) is absent; never silently replaced."""


class UnknownModelKind(InputError):
    """No registered embedder kind handles a generation's model."""


class PluginError(OperationalError):
    """An installed plugin cannot be loaded, or registers something unusable or conflicting."""
