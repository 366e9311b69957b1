"""What the parts of the specification reader share: collecting problems, and reading a field's
value.

The reader (:mod:`ptah.adapters.spec_yaml`) is built of parts -- generations
(:mod:`ptah.adapters.spec_generations`), variants and judges
(:mod:`ptah.adapters.spec_variants`) -- each a :class:`FieldReader`, so
every problem is reported alike: ``FILE:LINE: field: message``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import TypeVar
from urllib.parse import urlsplit

from ptah.adapters.yaml_nodes import (
    TAG_BOOL,
    Field,
    MappingNode,
    ScalarNode,
    SequenceNode,
    describe,
    integer,
    is_null,
    line_of,
    mapping_fields,
    tag_of,
)
from ptah.core.errors import Problem
from ptah.core.spec import DEFAULT_SERVICE_TIMEOUT_S, TemplateSyntaxError, template_columns

T = TypeVar("T")
Default = TypeVar("Default", int, None)  # a number field read with a default reads as a number
MAX_TIMEOUT_S = 3600
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")  # of a generation, a variant, a judge
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def base_url_problem(url: str) -> str | None:
    """Why ``url`` cannot be a service's base URL (``None``: it can); never repeats a credential it
    holds."""
    if any(not char.isprintable() or char.isspace() for char in url):
        return "must not contain spaces or control characters"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- raises on a port that is not a number from 0 to 65535
    except ValueError:
        return "is not a URL; write e.g. http://127.0.0.1:8080/v1"
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return "must be an http:// or https:// URL with a host, e.g. http://127.0.0.1:8080/v1"
    if "@" in parts.netloc:
        return "must not hold credentials; put the key in the variable api_key_env names"
    if parts.query or parts.fragment or url.rstrip().endswith(("?", "#")):
        return "must not have a query or fragment; write the scheme, host, port and path only"
    return None


class FieldReader:
    """Collects every problem of the specification while its parts read it (see module docs)."""

    def __init__(self, name: str, root: str, env: Mapping[str, str]):
        self.name = name
        self.root = root
        self.env = env
        self.problems: list[Problem] = []
        self.declared: list[str] = []  # generation names, valid or not, for checking active:

    def add(self, message: str, *, line: int | None, field: str | None) -> None:
        self.problems.append(Problem(message, path=self.name, line=line, field=field))

    def fields(
        self, node: MappingNode, known: tuple[str, ...], prefix: str, where: str
    ) -> dict[str, Field]:
        def report(message: str, *, line: int | None, field: str | None) -> None:
            self.add(
                message, line=line, field=prefix + field if field else prefix.rstrip(".") or None
            )

        return mapping_fields(node, known=known, report=report, where=where)

    # -- values -----------------------------------------------------------------

    def scalar(self, field: Field, where: str) -> str | None:
        """The text of a scalar as written; reports a list, mapping or null."""
        node = field.value
        if isinstance(node, ScalarNode) and not is_null(node):
            return str(node.value)
        self.add(f"must be text, not {describe(node)}", line=line_of(node), field=where)
        return None

    def text(
        self,
        fields: dict[str, Field],
        name: str,
        prefix: str,
        at: int,
        *,
        required: bool = True,
        empty: bool = False,
        hint: str = "",
    ) -> str | None:
        field = fields.get(name)
        if field is None:
            if required:
                self.add("missing; " + hint, line=at, field=prefix + name)
            return None
        if empty and is_null(field.value):
            return ""
        value = self.scalar(field, prefix + name)
        if value is not None and not empty and not value.strip():
            self.add("is empty; " + hint, line=line_of(field.value), field=prefix + name)
            return None
        return value

    def boolean(self, field: Field | None, where: str, *, default: bool, hint: str = "") -> bool:
        if field is None:
            return default
        node = field.value
        if isinstance(node, ScalarNode) and tag_of(node) == TAG_BOOL:
            return str(node.value).lower() == "true"
        self.add(
            f"must be true or false, not {describe(node)}{hint}", line=line_of(node), field=where
        )
        return default

    def positive(
        self, field: Field | None, where: str, limit: int, default: Default, hint: str = ""
    ) -> int | Default:
        if field is None or (default is None and is_null(field.value)):
            return default
        value = integer(field.value)
        if value is None or not 1 <= value <= limit:
            self.add(
                f"must be a whole number from 1 to {limit:,}, not {describe(field.value)}{hint}",
                line=line_of(field.value),
                field=where,
            )
            return default
        return value

    def template(self, field: Field | None, where: str, at: int, *, required: bool) -> str | None:
        if field is None:
            if required:
                self.add(
                    'missing; write the text to embed as a template, e.g. text: "{title}"',
                    line=at,
                    field=where,
                )
            return None
        value = self.scalar(field, where)
        if value is None:
            return None
        line = line_of(field.value)
        try:
            columns = template_columns(value)
        except TemplateSyntaxError as exc:
            self.add(f"the template is not valid: {exc.message}", line=line, field=where)
            return None
        if not columns:
            self.add(
                'the template names no column, so every row would embed the same text; write e.g. "{title}"',
                line=line,
                field=where,
            )
            return None
        return value

    def refuse(self, fields: dict[str, Field], prefix: str, name: str, message: str) -> None:
        if name in fields:
            self.add(message, line=line_of(fields[name].key), field=prefix + name)

    def kind_checks(
        self, kind: object, settings: object, fields: dict[str, Field], where: str, at: int
    ) -> None:
        """What a registered kind (a reranker's, a judge's) finds wrong in its own ``settings``:
        ``kind.check(settings, written)`` gives ``(field, message)`` pairs, the field relative to
        the entry (empty: the entry itself). A kind with no ``check`` finds nothing."""
        check = getattr(kind, "check", None)
        if check is None:
            return
        for name, message in check(settings, set(fields)):
            self.add(message, line=at, field=f"{where}.{name}" if name else where)

    def named(
        self,
        field: Field | None,
        section: str,
        what: str,
        needs: str,
        read: Callable[[str, Field], T | None],
    ) -> dict[str, T]:
        """A top-level mapping of named settings (``variants:``, ``judges:``): each entry whose name
        is 1 to 64 letters, digits, ``.``, ``_`` or ``-`` and whose value is a mapping is read by
        ``read``; an entry with a problem is left out (and the problem reported)."""
        if field is None or is_null(field.value):
            return {}
        node = field.value
        if not isinstance(node, MappingNode):
            self.add(
                f"must map {what} names to their settings, not {describe(node)}",
                line=line_of(node),
                field=section,
            )
            return {}
        found: dict[str, T] = {}
        for name, entry in self.fields(
            node, tuple(str(k.value) for k, _ in node.value), section + ".", section
        ).items():
            if not _NAME.match(name):
                self.add(
                    f"a {what} name is 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or "
                    "digit",
                    line=line_of(entry.key),
                    field=f"{section}.{name}",
                )
            elif not isinstance(entry.value, MappingNode):
                self.add(
                    f"must be a mapping with at least {needs}:, not {describe(entry.value)}",
                    line=line_of(entry.value),
                    field=f"{section}.{name}",
                )
            elif (value := read(name, entry)) is not None:
                found[name] = value
        return found

    def declared_generation(self, fields: dict[str, Field], prefix: str, at: int) -> str | None:
        name = self.text(fields, "generation", prefix, at, required=False)
        if name is not None and name not in self.declared:
            self.add(
                f"names no generation declared under generations:; declare it or write one of "
                f"{', '.join(self.declared) or 'none'}",
                line=line_of(fields["generation"].value),
                field=prefix + "generation",
            )
            return None
        return name

    def options(self, fields: dict[str, Field], prefix: str) -> dict:
        """A plug-in kind's ``options:`` as plain values (``{}`` and a problem when it is no
        mapping)."""
        field = fields.get("options")
        if field is not None and not isinstance(field.value, MappingNode):
            self.add(
                f"must be a mapping of a plug-in kind's settings, not {describe(field.value)}",
                line=line_of(field.value),
                field=prefix + "options",
            )
            return {}
        return _plain(field.value) if field is not None else {}

    def endpoint(
        self,
        fields: dict[str, Field],
        prefix: str,
        at: int,
        *,
        url_hint: str,
        url_required: bool = True,
        key_env: str | None = None,
        key_hint: str = "",
    ) -> tuple[str | None, str | None, int]:
        """A service's ``base_url``, ``api_key_env`` and ``timeout_s``, each checked; an absent
        ``api_key_env`` reads as ``key_env``, and null (a server that wants no key) is accepted
        where that default is a name."""
        base_url = self.text(fields, "base_url", prefix, at, required=url_required, hint=url_hint)
        if base_url is not None and (problem := base_url_problem(base_url)):
            self.add(problem, line=line_of(fields["base_url"].value), field=prefix + "base_url")
        if "api_key_env" in fields:
            key_env = (
                None
                if key_env and is_null(fields["api_key_env"].value)
                else self.text(fields, "api_key_env", prefix, at, hint=key_hint)
            )
            if key_env is not None and not _VARIABLE.match(key_env):
                self.add(
                    "must name an environment variable (letters, digits and _), not the key itself",
                    line=line_of(fields["api_key_env"].value),
                    field=prefix + "api_key_env",
                )
        timeout_s = self.positive(
            fields.get("timeout_s"), prefix + "timeout_s", MAX_TIMEOUT_S, DEFAULT_SERVICE_TIMEOUT_S
        )
        return base_url, key_env, timeout_s


def _plain(node):
    """A YAML node as plain values (a plug-in's options)."""
    if isinstance(node, MappingNode):
        return {str(key.value): _plain(value) for key, value in node.value}
    if isinstance(node, SequenceNode):
        return [_plain(item) for item in node.value]
    return None if is_null(node) else node.value
