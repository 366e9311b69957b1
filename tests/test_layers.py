"""The layer rule of STYLE.md, enforced: core imports only the standard library, numpy and core
(and pluggy, in the door)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "ptah"


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            names.add("ptah.core" if path.parent.name == "core" else "relative")
    return names


def allowed_in_core(module: str) -> bool:
    top = module.split(".")[0]
    return (
        top in sys.stdlib_module_names
        or top == "numpy"
        or module == "ptah.core"
        or module.startswith("ptah.core.")
    )


def offenders(paths, refused) -> set[str]:
    """``FILE: MODULE`` for each import of a file in ``paths`` that ``refused(MODULE)`` refuses."""
    return {
        f"{path.relative_to(PACKAGE.parent)}: {module}"
        for path in paths
        for module in imported_modules(path)
        if refused(module)
    }


def under(*folders: str) -> list[Path]:
    return [path for folder in folders for path in (PACKAGE / folder).rglob("*.py")]


def test_core_imports_only_stdlib_numpy_and_core():
    """And pluggy, in the door alone (``ptah/core/plugins.py``: the hook specifications)."""
    door = PACKAGE / "core" / "plugins.py"
    others = [path for path in under("core") if path != door]
    assert offenders(others, lambda module: not allowed_in_core(module)) == set()
    assert offenders([door], lambda module: not allowed_in_core(module)) == {
        "ptah/core/plugins.py: pluggy"
    }


def test_adapters_do_not_import_services_or_cli():
    assert (
        offenders(
            under("adapters"), lambda module: module.startswith(("ptah.services", "ptah.cli"))
        )
        == set()
    )


def test_renderers_import_only_stdlib_rich_core_and_render():
    assert (
        offenders(
            under("render"),
            lambda module: (
                not (
                    module.split(".")[0] in (*sys.stdlib_module_names, "rich")
                    or module.startswith(("ptah.core.", "ptah.render."))
                )
            ),
        )
        == set()
    )


def test_the_rule_itself_catches_a_violation(tmp_path):
    bad = tmp_path / "core" / "bad.py"
    bad.parent.mkdir()
    bad.write_text("import yaml\nfrom ptah.adapters import corpus_yaml\nimport json\n")
    assert {m for m in imported_modules(bad) if not allowed_in_core(m)} == {"yaml", "ptah.adapters"}


def test_the_cli_and_the_api_import_no_adapter():
    """The CLI is a client of the API (and services, render, core); it never reaches past the use
    cases."""
    paths = [*under("cli"), PACKAGE / "_api.py", PACKAGE / "__init__.py"]
    assert offenders(paths, lambda module: module.startswith("ptah.adapters")) == set()


# what the add-ons under packages/ bring: the core imports none of it, nor the add-ons themselves
ADD_ONS = ("starlette", "uvicorn", "ray", "ptah_serve", "ptah_ray")


def test_no_module_of_the_core_imports_the_server_or_ray_or_an_add_on():
    assert (
        offenders(
            under("."),
            lambda module: module.split(".")[0] in ADD_ONS or module.startswith("ptah_"),
        )
        == set()
    )


def test_the_add_on_rule_itself_catches_each_import(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import ray\nfrom starlette.routing import Route\nimport uvicorn.config\n"
        "from ptah_serve import serve\nimport ptah_ray.engine\nfrom ptah.core import errors\n"
    )
    found = {m for m in imported_modules(bad) if m.split(".")[0] in ADD_ONS}
    assert found == {"ray", "starlette.routing", "uvicorn.config", "ptah_serve", "ptah_ray.engine"}


def test_the_use_cases_and_the_adapters_never_import_a_renderer():
    """A report's formats are reached through ``ptah.Report.save`` and its registry, never from a
    use case."""
    assert (
        offenders(
            under("core", "adapters", "services"), lambda module: module.startswith("ptah.render")
        )
        == set()
    )


def test_services_and_core_never_import_the_cli_or_the_api():
    # "from ptah import __version__" is fine: ptah/__init__ is lazy
    assert (
        offenders(
            under("core", "adapters", "services", "render"),
            lambda module: module.startswith(("ptah.cli", "ptah._api")),
        )
        == set()
    )


def test_the_public_api_names_what_it_exports():
    import ptah

    assert sorted(ptah.__all__) == sorted({*ptah._WHERE, "__version__"})
    for name in ptah.__all__:
        assert getattr(ptah, name) is not None
    # what a type checker reads (the imports under TYPE_CHECKING) names the same modules as the lazy
    # table
    tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    (checked,) = [
        node
        for node in tree.body
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
    ]
    assert {alias.name: node.module for node in checked.body for alias in node.names} == ptah._WHERE


def test_what_the_public_api_returns_is_a_type_it_exports():
    """Every public function, method and property of an exported class (and every field of an
    exported dataclass) is annotated with types a user can import from ``ptah`` (or builtins), and
    so is each type those name."""
    import dataclasses
    import inspect
    import typing

    import ptah

    public = {name: getattr(ptah, name) for name in ptah.__all__}
    exported = {value for value in public.values() if isinstance(value, type)}

    def named(hint) -> set[type]:
        origin = typing.get_origin(hint)
        found = {origin} if isinstance(origin, type) else set()
        if origin is None and isinstance(hint, type):
            found.add(hint)
        return found.union(*map(named, typing.get_args(hint)))

    def hints(function) -> dict:
        return typing.get_type_hints(function, localns=public)

    annotated: dict[str, object] = {}
    for name in ("open_project", "load_corpus", "load_report"):
        annotated[name] = hints(public[name]).get("return")
    for cls in exported:
        if dataclasses.is_dataclass(cls):
            annotated.update(
                (f"{cls.__name__}.{field}", hint) for field, hint in hints(cls).items()
            )
        members = {
            name: member
            for klass in reversed(cls.__mro__)
            if klass.__module__.startswith("ptah")
            for name, member in vars(klass).items()
        }
        for name, member in members.items():
            function = (
                member.fget if isinstance(member, property) else getattr(member, "__func__", member)
            )
            if not name.startswith("_") and inspect.isfunction(function):
                annotated[f"{cls.__name__}.{name}"] = hints(function).get("return")

    assert [where for where, hint in annotated.items() if hint is None] == []
    private = {
        f"{where}: {kind.__module__}.{kind.__qualname__}"
        for where, hint in annotated.items()
        for kind in named(hint)
        if kind.__module__.startswith("ptah") and kind not in exported
    }
    assert private == set()
