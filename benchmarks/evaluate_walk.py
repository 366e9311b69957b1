"""How much of the package one warm ``ptah inference evaluate`` of the bundled example touches.

    python benchmarks/evaluate_walk.py [--json FILE]

Copies the bundled example (``examples/support``, ``corpora/support.yaml``) to a temporary
folder, builds its generation, runs the quickstart's evaluate once to warm every cache, then
runs it again in this process under :func:`sys.setprofile` and counts the distinct package files
(under ``ptah/``) and functions whose frames were entered. Also: the longest parameter list of
any function of ``ptah/`` outside the CLI's command functions, and the lines of
``services/evaluate.py:evaluate``'s body.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "ptah"


def evaluate_args(work: Path) -> list[str]:
    return [
        "inference",
        "evaluate",
        "--spec",
        str(work / "examples/support/ptah.yaml"),
        "--corpus",
        str(work / "corpora/support.yaml"),
        "--baseline",
        str(work / "examples/support/baseline.json"),
        "--max-recall-drop",
        "0.02",
    ]


def walked(work: Path) -> tuple[set[str], set[tuple[str, str]], int]:
    """The package files and functions one warm evaluate enters, and its exit code."""
    from ptah.cli import main

    files: set[str] = set()
    functions: set[tuple[str, str]] = set()
    root = str(PACKAGE) + os.sep

    def profile(frame, event, arg):
        if event == "call":
            name = frame.f_code.co_filename
            if name.startswith(root):
                files.add(name)
                functions.add((name, frame.f_code.co_qualname))

    code = 0
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        for traced in (False, True):
            sys.setprofile(profile if traced else None)
            try:
                main(evaluate_args(work))
            except SystemExit as exit:
                code = int(exit.code or 0)
            finally:
                sys.setprofile(None)
            if not traced:
                files.clear()
                functions.clear()
    return files, functions, code


def widest_function() -> tuple[int, str]:
    """The most parameters of a function of ``ptah/`` outside ``ptah/cli`` (whose command
    functions take the command's options), and where."""
    widest = (0, "")
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.parts[len(PACKAGE.parts)] == "cli":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                arguments = node.args
                names = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
                count = len([a for a in names if a.arg not in ("self", "cls")])
                if count > widest[0]:
                    where = f"{path.relative_to(REPO)}:{node.lineno} {node.name}"
                    widest = (count, where)
    return widest


def evaluate_body_lines() -> int:
    """The non-blank lines of ``evaluate``'s body after its docstring."""
    path = PACKAGE / "services" / "evaluate.py"
    source = path.read_text()
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and node.name == "evaluate":
            first = node.body[1] if isinstance(node.body[0], ast.Expr) else node.body[0]
            lines = source.splitlines()[first.lineno - 1 : node.end_lineno]
            return sum(1 for line in lines if line.strip())
    raise SystemExit("no evaluate in services/evaluate.py")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the figures to this file")
    parser.add_argument(
        "--list", action="store_true", help="also list each file entered, with its functions"
    )
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        shutil.copytree(REPO / "examples", work / "examples")
        shutil.copytree(REPO / "corpora", work / "corpora")
        python = sys.executable
        subprocess.run([python, "examples/support/make_db.py"], cwd=work, check=True)
        spec = str(work / "examples/support/ptah.yaml")
        subprocess.run(
            [python, "-m", "ptah", "inference", "build", "--spec", spec],
            cwd=work,
            check=True,
            capture_output=True,
        )
        os.chdir(work)
        files, functions, code = walked(work)
    widest, where = widest_function()
    figures = {
        "exit": code,
        "files": len(files),
        "functions": len(functions),
        "evaluate_body_lines": evaluate_body_lines(),
        "most_parameters": widest,
        "most_parameters_at": where,
    }
    print(json.dumps(figures, indent=2))
    if options.list:
        for name in sorted(files):
            entered = sorted(f for n, f in functions if n == name)
            print(f"{len(entered):4d} {Path(name).relative_to(REPO)}: {', '.join(entered)}")
    if options.json:
        Path(options.json).write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
