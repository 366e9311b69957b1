"""The extension surface (:mod:`ptah.extending`) holds: every module, name and member it promises
exists, and docs/extending.md names each one. The add-ons' own tests check the other side: that
they import nothing else of ptah."""

from __future__ import annotations

import ast
import importlib
import inspect
import textwrap
from pathlib import Path

from ptah.extending import MEMBERS, SURFACE, outside_the_surface

DOCS = Path(__file__).resolve().parents[1] / "docs" / "extending.md"


def assigned_on_self(cls: type, within: str = "ptah") -> set[str]:
    """The attributes the methods of ``cls`` (and its bases of the package ``within``) assign on
    ``self``, and those its class bodies declare or define."""
    names: set[str] = set()
    for klass in cls.__mro__:
        if not klass.__module__.startswith(within):
            continue
        names.update(vars(klass), getattr(klass, "__annotations__", {}))
        for node in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(klass)))):
            targets = (
                node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
            )
            for target in targets:
                for element in target.elts if isinstance(target, ast.Tuple) else [target]:
                    if (
                        isinstance(element, ast.Attribute)
                        and isinstance(element.value, ast.Name)
                        and element.value.id == "self"
                    ):
                        names.add(element.attr)
    return names


def test_every_name_of_the_surface_exists():
    missing = [
        f"{module}.{name}"
        for module, names in SURFACE.items()
        for name in names
        if not hasattr(importlib.import_module(module), name)
    ]
    assert missing == []


def test_every_member_of_the_surface_exists():
    missing = []
    for path, members in MEMBERS.items():
        module, _, name = path.rpartition(".")
        cls = getattr(importlib.import_module(module), name)
        missing += [f"{path}.{member}" for member in members if member not in assigned_on_self(cls)]
    assert missing == []


def test_the_rule_itself_finds_attributes_assigned_in_methods_and_tuples():
    class Toy:
        declared: int

        def __init__(self):
            self.plain = 1
            self.first, self.second = 2, 3

    found = assigned_on_self(Toy, within=Toy.__module__)
    assert {"declared", "plain", "first", "second"} <= found
    assert "absent" not in found


def row(text: str, first: str) -> str:
    """The line of a table in ``text`` whose first cell is ``first`` (in backticks); "" when none."""
    return next((line for line in text.splitlines() if line.startswith(f"| `{first}` |")), "")


def test_docs_extending_names_every_module_name_and_member_in_its_row():
    text = DOCS.read_text(encoding="utf-8")
    unnamed = [
        f"{module}.{name}"
        for module, names in SURFACE.items()
        for name in names
        if f"`{name}`" not in row(text, module)
    ]
    unnamed += [
        f"{path}.{member}"
        for path, members in MEMBERS.items()
        for member in members
        if f"`{member}`" not in row(text, path)
    ]
    assert unnamed == []


def test_the_rule_itself_catches_what_the_surface_does_not_hold(tmp_path):
    module = tmp_path / "module.py"
    module.write_text(
        "import ptah\nimport ptah.core.report\nfrom ptah import open_project, _WHERE\n"
        "from ptah.core.errors import StoreDamaged, SpecError\n"
        "ptah.open_project\nptah.cli\nstore._connection\nstore._secret\n"
        "class Mine:\n    def __init__(self):\n        self._mine = 1\n        self._mine\n"
    )
    assert outside_the_surface(module) == [
        "module.py: ptah.core.report",
        "module.py: ptah._WHERE",
        "module.py: ptah.core.errors.SpecError",
        "module.py: ptah.cli",
        "module.py: ._secret",
    ]
