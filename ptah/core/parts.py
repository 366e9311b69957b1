"""Report parts whose JSON members are their fields, in order: one ``to_dict``/``from_dict`` for
all of them, led by each field's type.

A field typed as another :class:`Part` (or a :class:`~ptah.core.measures.Mean`, a
:class:`~ptah.core.compared.Flat` part, a tuple or a mapping of them) is read and written as that; a field typed ``Mapping`` alone is free-form JSON,
kept read-only. A member in ``ABSENT_WHEN_NONE`` is absent by nature when None (a stage's
``load_s`` when no model was loaded); one in ``OPTIONAL`` may be missing from a report of an older
ptah. A part read without a member reads it None, keeps its name in ``omitted`` and writes it back
absent, so ``from_dict(d).to_dict() == d``.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from functools import cache
from types import MappingProxyType
from typing import Any, ClassVar, Self, Union, cast, get_args, get_origin, get_type_hints

from ptah.core.compared import Flat
from ptah.core.measures import Mean


def read_only(value: Any) -> Any:
    """A read-only deep copy of JSON data: mappings become read-only, lists tuples."""
    if isinstance(value, Mapping):
        return MappingProxyType({key: read_only(item) for key, item in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(read_only(item) for item in value)
    return value


def plain(value: Any) -> Any:
    """JSON data back from :func:`read_only`: dicts and lists."""
    if isinstance(value, Mapping):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, tuple):
        return [plain(item) for item in value]
    return value


def mean_to_dict(mean: Mean) -> dict:
    data = {
        "value": mean.value,
        "numerator": mean.numerator,
        "denominator": mean.denominator,
        "undefined": mean.undefined,
    }
    if mean.high_numerator is not None:
        data |= {"high": mean.high, "high_numerator": mean.high_numerator}
    return data


def mean_from_dict(data: Mapping) -> Mean:
    return Mean(
        numerator=data["numerator"],
        denominator=data["denominator"],
        undefined=data["undefined"],
        high_numerator=data.get("high_numerator"),
    )


def to_json(value: Any) -> Any:
    """A field's JSON."""
    if isinstance(value, (Part, Flat)):
        return value.to_dict()
    if isinstance(value, Mean):
        return mean_to_dict(value)
    if isinstance(value, Mapping):
        return {key: to_json(item) for key, item in value.items()}
    if isinstance(value, tuple):
        return [to_json(item) for item in value]
    return value


def from_json(hint: Any, value: Any) -> Any:
    """The JSON ``value`` read as a field typed ``hint``."""
    if value is None:
        return None
    if get_origin(hint) in (Union, types.UnionType):
        hint = next(arg for arg in get_args(hint) if arg is not type(None))
    origin = get_origin(hint) or hint
    if isinstance(origin, type) and issubclass(origin, (Part, Flat)):
        return origin.from_dict(value)
    if origin is Mean:
        return mean_from_dict(value)
    if origin is tuple:
        return tuple(from_json(get_args(hint)[0], item) for item in value)
    if origin is Mapping and get_args(hint):
        return MappingProxyType(
            {key: from_json(get_args(hint)[1], item) for key, item in value.items()}
        )
    return read_only(value)


@cache
def _hints(cls: Any) -> dict[str, Any]:
    return get_type_hints(cls)


@dataclass(frozen=True)
class Part:
    """A part whose JSON members are its fields, in order (see the module docs)."""

    # the members the part was read without, written back absent
    omitted: frozenset[str] = field(default=frozenset(), kw_only=True, repr=False, compare=False)

    ABSENT_WHEN_NONE: ClassVar[tuple[str, ...]] = ()
    OPTIONAL: ClassVar[tuple[str, ...]] = ()

    def to_dict(self) -> dict:
        data = {}
        for member in fields(self):
            value = getattr(self, member.name)
            if member.name == "omitted" or member.name in self.omitted:
                continue
            if value is None and member.name in self.ABSENT_WHEN_NONE:
                continue
            data[member.name] = to_json(value)
        return data

    @classmethod
    def from_dict(cls, data: Mapping) -> Self:
        hints = _hints(cast("Any", cls))
        names = [member.name for member in fields(cast("Any", cls)) if member.name != "omitted"]
        values = {name: from_json(hints[name], data.get(name)) for name in names}
        return cls(**values, omitted=frozenset(name for name in names if name not in data))
