"""ptah-serve uses of ptah only its public API (``import ptah``) and the extension surface the
installed core declares (:mod:`ptah.extending`): every import, and every private member it reads of
ptah's objects."""

from __future__ import annotations

import ast
from pathlib import Path

import ptah
from ptah.extending import MEMBERS, SURFACE

SOURCE = Path(__file__).resolve().parents[1] / "src" / "ptah_serve"
PRIVATE = {member for members in MEMBERS.values() for member in members}


def outside_the_surface(path: Path) -> list[str]:
    """``FILE: what`` for each import of ptah, and each private member read on an object not made
    in ``path``, that the surface does not hold."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    own = {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
    }
    own |= {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
    own |= {  # a dataclass's fields
        node.target.id
        for node in ast.walk(tree)
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "ptah":
            allowed = ptah.__all__ if node.module == "ptah" else SURFACE.get(node.module, ())
            found += [f"{node.module}.{a.name}" for a in node.names if a.name not in allowed]
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith("ptah.")]
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "ptah"
            and node.attr not in ptah.__all__
        ):
            found.append(f"ptah.{node.attr}")
        elif (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and node.attr not in own
            and node.attr not in PRIVATE
        ):
            found.append(f".{node.attr}")
    return [f"{path.name}: {what}" for what in found]


def test_the_add_on_uses_only_the_public_api_and_the_extension_surface():
    assert [
        what for path in sorted(SOURCE.glob("*.py")) for what in outside_the_surface(path)
    ] == []


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
