"""Options declared once, on the dataclass field that holds them (:func:`option`: type, default,
bounds, help).

The dataclass checks them in ``__post_init__`` (:func:`check_options`);
:func:`declared` lists them, those of nested option dataclasses included, and
:func:`made` builds one from their values by name. ``ptah inference
evaluate``'s options, the API's keywords, the server's evaluation body and its
OpenAPI schema are made from :func:`declared`; a refusal is an
:class:`OptionError` naming the option (the CLI names its flag instead).
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import MISSING, Field, dataclass, field, fields, is_dataclass, replace
from typing import Any

from ptah.core.errors import InputError
from ptah.core.visible import abbreviated

_KEY = "ptah.option"


class OptionError(InputError):
    """An option's value refused: ``name`` (the option) and ``problem`` (what is wrong, one sentence
    without it)."""

    def __init__(self, name: str, problem: str):
        super().__init__(lambda words: f"{words.option(name)}: {problem}.")
        self.name, self.problem = name, problem


@dataclass(frozen=True)
class Option:
    """One option: ``kind`` is bool, int, float, str, tuple (a list of names) or dict (name ->
    number); ``default`` None makes it optional; ``flags`` spell it on the command line (default
    ``--the-name``); ``served``: a field of the server's evaluation body."""

    name: str
    kind: type
    default: Any
    help: str
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()
    served: bool = True

    @property
    def spellings(self) -> tuple[str, ...]:
        return self.flags or ("--" + self.name.replace("_", "-"),)

    def expected(self) -> str:
        """What a value must be, as a refusal says it."""
        if self.choices:
            return f"one of {', '.join(self.choices)}"
        if self.kind in (int, float):
            what = "a whole number" if self.kind is int else "a finite number"
            if self.low is not None and self.high is not None:
                return f"{what} from {self.low:,} to {self.high:,}"
            return what if self.low is None else f"{what} of at least {self.low:,}"
        return {
            bool: "true or false",
            str: "a text",
            tuple: "a list of names",
            dict: "a mapping of names to numbers",
        }[self.kind]

    def check(self, value: Any) -> Any:
        """``value`` as the option holds it (a tuple of names, a dict, a path as text); OptionError
        otherwise."""
        if value is None and self.default is None:
            return None
        if (
            self.kind is tuple
            and not isinstance(value, (str, bytes))
            and isinstance(value, Iterable)
        ):
            return tuple(value)
        if self.kind is dict and isinstance(value, Mapping):
            return dict(value)
        if self.kind is str and isinstance(value, os.PathLike):
            value = os.fspath(value)
        if (
            self.kind is float
            and isinstance(value, int)
            and not isinstance(value, bool)
            and abs(value) < 1e308
        ):
            value = float(
                value
            )  # a whole number where a number is asked; one past floats is refused below
        if self._fits(value):
            return value
        raise OptionError(self.name, f"must be {self.expected()}, not {abbreviated(repr(value))}")

    def _fits(self, value: Any) -> bool:
        if self.kind in (int, float):
            if isinstance(value, bool) or not isinstance(value, self.kind):
                return False
            if self.kind is float and not math.isfinite(value):
                return False
            return (self.low is None or value >= self.low) and (
                self.high is None or value <= self.high
            )
        return isinstance(value, self.kind) and (not self.choices or value in self.choices)


def option(
    default: Any, help: str, *, kind: type | None = None, name: str = "", **bounds: Any
) -> Any:
    """A dataclass field holding an option (its name: the field's, unless ``name`` is given);
    ``bounds``: the other :class:`Option` attributes (``low``, ``high``, ``choices``, ``flags``,
    ``served``)."""
    declared_option = Option(name, kind or type(default), default, help, **bounds)
    if isinstance(default, (dict, list)):
        return field(default_factory=type(default), metadata={_KEY: declared_option})
    return field(default=default, metadata={_KEY: declared_option})


def _named(item: Field) -> Option | None:
    found = item.metadata.get(_KEY)
    return None if found is None else found if found.name else replace(found, name=item.name)


def _nested(item: Field) -> type | None:
    """The dataclass of options a field's default is (EvaluationRequest.search: SearchOptions), else
    None."""
    kind = type(item.default)
    return kind if item.default is not MISSING and is_dataclass(kind) and declared(kind) else None


@functools.cache
def declared(cls: type) -> tuple[Option, ...]:
    """The options of a dataclass, in field order, those of its nested option dataclasses in their
    place."""
    found: list[Option] = []
    for item in fields(cls):
        own, nested = _named(item), _nested(item)
        found.extend([own] if own is not None else declared(nested) if nested is not None else [])
    return tuple(found)


def check_options(instance: Any) -> None:
    """Check and normalise each option field of a dataclass instance (its ``__post_init__`` calls
    this)."""
    for item in fields(instance):
        own = _named(item)
        if own is not None:
            object.__setattr__(instance, item.name, own.check(getattr(instance, item.name)))


def made(cls: type, values: Mapping[str, Any]) -> Any:
    """An instance of ``cls`` with the options ``values`` names (by option name; the rest default).
    TypeError for a name that is not one of its options, as for an unknown keyword argument."""
    known = [declared_option.name for declared_option in declared(cls)]
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise TypeError(
            f"{unknown[0]!r} is not an option of {cls.__name__}; its options are {', '.join(known)}"
        )
    return _made(cls, values)


def _made(cls: type, values: Mapping[str, Any]) -> Any:
    arguments: dict[str, Any] = {}
    for item in fields(cls):
        own, nested = _named(item), _nested(item)
        if own is not None and own.name in values:
            arguments[item.name] = values[own.name]
        elif nested is not None:
            arguments[item.name] = _made(nested, values)
    return cls(**arguments)
