"""Typed errors. Each carries the exit code DESIGN.md assigns to its kind.

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
message on stderr and its exit code. Nothing here formats for a terminal.
"""

from __future__ import annotations

from dataclasses import dataclass

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


class PtahError(Exception):
    """Base of every error ptah reports to a user. Never shown as a traceback."""

    exit_code = EXIT_OPERATIONAL

    def __init__(self, message: str, *, problems: tuple[Problem, ...] | list[Problem] = ()):
        super().__init__(message)
        self.message = message
        self.problems = tuple(problems)

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
    exit 2, never a fallback (DESIGN.md, "Variants and stages")."""


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


def spec_flag(path: str | None) -> str:
    """What a command a sentence names adds for the spec the work used: `` --spec PATH``; nothing
    for none (ptah.yaml of the working directory), so that the command runs as written."""
    return f" --spec {path}" if path else ""


class StaleGeneration(OperationalError):
    """Evaluation was asked of a generation that is incomplete or stale."""


class NotBuilt(StaleGeneration):
    """A generation asked for has no vectors built with its current settings (exit 3): the most
    incomplete of all."""

    def __init__(self, name: str, identity: str, spec_path: str | None = None) -> None:
        super().__init__(
            f'generation "{name}" has not been built with its current settings (identity {identity}); '
            f"run `ptah inference build {name}{spec_flag(spec_path)}` first."
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
