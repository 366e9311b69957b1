"""The import direction, enforced.

``core`` imports only the standard library, numpy and ``core`` (and pluggy, in the door; scipy
inside the function that needs it); adapters import ``core`` and adapters; services import both;
renderers import ``core`` and ``render``. The CLI, the server and the public API import services,
``core`` and ``render``, and of the adapters only what :data:`CLIENT_ADAPTERS` names: reading a
corpus file, the checks and atomic writes of the files a person names, and the notice that a model
is loading. No module of ptah sits in an import circle.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "ptah"

# What a client of the use cases (the CLI, the server, the API) may import from an adapter: the
# module, and the names (None: any of its names).
CLIENT_ADAPTERS: dict[str, frozenset[str] | None] = {
    "ptah.adapters.corpus_yaml": frozenset({"load_corpus"}),
    "ptah.adapters.files": None,
    "ptah.adapters.embedders": frozenset({"LOADING"}),
}


# The import circles still there: the plug-in registries and the built-in kinds they import.
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


def imported_at_top(path: Path) -> set[str]:
    """The modules ``path`` imports outside any function: what importing it costs."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    inside = {
        id(node)
        for function in ast.walk(tree)
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
        for node in ast.walk(function)
    }
    names: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in inside:
            continue
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


LAZY_IN_CORE = ("scipy",)  # statistics off the hot path, imported inside the function using them


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
    assert (
        offenders(
            others,
            lambda module: not allowed_in_core(module) and module.split(".")[0] not in LAZY_IN_CORE,
        )
        == set()
    )
    assert offenders([door], lambda module: not allowed_in_core(module)) == {
        "ptah/core/plugins.py: pluggy"
    }


def test_core_imports_scipy_only_inside_a_function():
    assert {
        f"{path.relative_to(PACKAGE.parent)}: {module}"
        for path in under("core")
        for module in imported_at_top(path)
        if module.split(".")[0] in LAZY_IN_CORE
    } == set()


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
    bad.write_text(
        "import yaml\nfrom ptah.adapters import corpus_yaml\nimport json\nimport scipy.stats\n"
        "def bound():\n    from scipy.special import betaincinv\n"
    )
    assert {m for m in imported_modules(bad) if not allowed_in_core(m)} == {
        "yaml",
        "ptah.adapters",
        "scipy.stats",
        "scipy.special",
    }
    assert {m for m in imported_at_top(bad) if not allowed_in_core(m)} == {
        "yaml",
        "ptah.adapters",
        "scipy.stats",
    }


def imported_names(path: Path) -> Iterator[tuple[str, str | None]]:
    """``(MODULE, NAME)`` for each name a ``from MODULE import NAME`` takes, ``(MODULE, None)`` for
    each ``import MODULE``."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from ((alias.name, None) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield from ((node.module, alias.name) for alias in node.names)


def test_the_cli_and_the_api_reach_an_adapter_only_for_files_and_the_loading_notice():
    """The CLI is a client of the API (and services, render, core); of the adapters
    they reach only :data:`CLIENT_ADAPTERS`."""
    paths = [*under("cli"), PACKAGE / "_api.py", PACKAGE / "__init__.py"]
    reached = {
        f"{path.relative_to(PACKAGE.parent)}: {module}.{name}"
        for path in paths
        for module, name in imported_names(path)
        if module.startswith("ptah.adapters")
        and not (
            module in CLIENT_ADAPTERS
            and (CLIENT_ADAPTERS[module] is None or name in CLIENT_ADAPTERS[module])
        )
    }
    assert reached == set()


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


def module_name(path: Path, root: Path) -> str:
    """``ptah.a.b`` for ``ROOT/ptah/a/b.py`` and for ``ROOT/ptah/a/b/__init__.py``."""
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(package: Path) -> dict[str, set[str]]:
    """Each module of ``package`` and the modules of ``package`` it imports, wherever the import
    stands (inside a function too) but under ``if TYPE_CHECKING:``; ``from P import N`` imports
    module ``P.N`` when there is one, else ``P``."""
    paths = {module_name(path, package.parent): path for path in package.rglob("*.py")}

    def module_of(name: str) -> str | None:
        while name and name not in paths:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        checked_only = {
            id(inner)
            for node in ast.walk(tree)
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for inner in ast.walk(node)
        }
        here = module if path.name == "__init__.py" else module.rpartition(".")[0]
        named: set[str] = set()
        for node in ast.walk(tree):
            if id(node) in checked_only:
                continue
            if isinstance(node, ast.Import):
                named.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = here.split(".")[: len(here.split(".")) - node.level + 1]
                    base = ".".join([*parent, *([base] if base else [])])
                named.update(f"{base}.{alias.name}" for alias in node.names)
        graph[module] = {module_of(name) for name in named} - {None, module}
    return graph


def circles(graph: dict[str, set[str]]) -> set[frozenset[str]]:
    """The strongly connected components of ``graph`` with more than one module: each a set of
    modules that reach one another through their imports."""

    def reachable(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for target in graph[todo.pop()]:
                if target not in seen:
                    seen.add(target)
                    todo.append(target)
        return seen

    reach = {module: reachable(module) for module in graph}
    found = {
        frozenset({module, *(other for other in reach[module] if module in reach[other])})
        for module in graph
    }
    return {component for component in found if len(component) > 1}


def test_no_module_sits_in_an_import_circle_but_the_registries():
    assert circles(import_graph(PACKAGE)) == set()


def test_the_circle_finder_sees_imports_in_functions_and_skips_type_checking(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "a.py").write_text("def f():\n    from pkg.sub import b\n")
    (package / "sub" / "b.py").write_text("from .. import c\n")
    (package / "c.py").write_text("import pkg.a\n")
    (package / "d.py").write_text("import pkg.e\n")
    (package / "e.py").write_text(
        "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    import pkg.d\n"
    )
    graph = import_graph(package)
    assert graph["pkg.sub.b"] == {"pkg.c"}
    assert graph["pkg.e"] == set()
    assert circles(graph) == {frozenset({"pkg.a", "pkg.sub.b", "pkg.c"})}
