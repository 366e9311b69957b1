"""The command line's words for an error's advice (:class:`ptah.core.errors.Words`): an option as
its flag, a command as the ``ptah`` command line that runs it."""

from __future__ import annotations

from ptah.core.baseline import spec_flag
from ptah.core.registry import declared
from ptah.core.request import EvaluationRequest

# an evaluation option's first spelling (``generations``: ``--generation``); another option is
# spelled ``--the-name``, as typer spells a parameter
FLAGS = {option.name: option.spellings[0] for option in declared(EvaluationRequest)}


class CommandLineWords:
    """:class:`~ptah.core.errors.Words` as a person at the command line reads them."""

    def option(self, name: str, value: object = None) -> str:
        flag = FLAGS.get(name, "--" + name.replace("_", "-"))
        return flag if value is None or value is True else f"{flag} {value}"

    def build(self, generation: str, spec: str | None) -> str:
        return f"run `ptah inference build {generation}{spec_flag(spec)}`"

    def index(self, generation: str) -> str:
        return f"build one with `ptah inference index {generation} --hnsw`"

    def prune(self) -> str:
        return "run `ptah inference prune`"

    def listing(self) -> str:
        return "`ptah inference list`"

    def rebaseline(self, report: str, corpus: str, spec: str | None) -> str:
        return (
            "measure its runs again on this corpus with "
            f"`ptah report rebaseline {report} --corpus {corpus} --output NEW.json{spec_flag(spec)}`"
        )


COMMAND_LINE = CommandLineWords()
