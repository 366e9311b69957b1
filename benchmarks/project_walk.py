"""Walk the vector route with the object that carries the project, and count where it goes.

    python benchmarks/project_walk.py [--json FILE]

Issue 22 (item 7) asks that the vector channel read source -> verify ->
queries -> score -> measure, and measures that by following the project
through one evaluation: every function that is handed it (as an argument, or
as the ``sides`` or ``self`` that holds it; not the project's own methods,
nor constructors) is a *stay*; the package modules
those functions live in are the *rooms*; a *return* is the walk coming back
to a room it had left (A -> B -> A counts one). Fewer rooms and returns mean
a reader follows the route through fewer files, without going back.

The walk is recorded with :func:`sys.setprofile` over one evaluation of the
bundled example's corpus (``corpora/support.yaml``) on a deterministic
generation, once per route of the vector channel:

* ``held``: the stored vectors read whole (the usual route);
* ``streamed``: the same generation read block by block from the store's
  snapshot (forced by lowering the streaming threshold for this process);
* ``external``: the table's own vectors (a JSON column of the source).

Only ``ptah`` frames count; the build before each evaluation does not.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from ptah.adapters.corpus_yaml import load_corpus  # noqa: E402
from ptah.core.request import EvaluationRequest  # noqa: E402
from ptah.services import project as projects  # noqa: E402
from ptah.services.build import build  # noqa: E402

try:
    from ptah.services.channels import exact  # noqa: E402
except (
    ImportError
):  # a tree from before issue 21 (bf34c1e), walked for the before/after in RESULTS.md
    from ptah.services.channels import streamed as exact  # type: ignore[no-redef]  # noqa: E402
from ptah.services.evaluate import evaluate  # noqa: E402

SPEC = """\
version: 1
source:
  database: sqlite:///support.db
  table: articles
  key_fields: [id]
  text: "{title}\\n\\n{body}"
  filter: "status = 'published'"
store: .ptah/ptah.db
active: own
generations:
  own:
    model: ptah/deterministic
    dimension: 32
  external:
    vectors: {column: embedding}
    model: ptah/deterministic
    dimension: 32
"""


def carries(value, project) -> bool:
    return value is project or getattr(value, "project", None) is project


def walk(project, run) -> dict:
    """Run ``run()`` and count the stays, rooms and returns of ``project`` (module docs)."""
    stays: set[tuple[str, str]] = set()
    path: list[str] = []
    steps: list[str] = []  # the first function of each room entered, in order

    def profile(frame, event, _arg):
        if event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        if not module.startswith("ptah.") or module.startswith("ptah.services.evaluate"):
            return
        code = frame.f_code
        arguments = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
        if frame.f_locals.get("self") is project or code.co_name == "__init__":
            # the project answering for itself, or a value being made: not a step of the walk
            return
        if any(carries(frame.f_locals.get(name), project) for name in arguments):
            stays.add((module, code.co_qualname))
            if not path or path[-1] != module:
                path.append(module)
                steps.append(f"{module}.{code.co_qualname}")

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    returns = sum(1 for i, module in enumerate(path) if module in path[:i])
    return {"stays": len(stays), "rooms": len(set(path)), "returns": returns, "walk": steps}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path)
    options = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        subprocess.run(
            [sys.executable, str(REPO / "examples/support/make_db.py"), str(work / "support.db")],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        (work / "ptah.yaml").write_text(SPEC)
        corpus = load_corpus(REPO / "corpora/support.yaml")
        with projects.open_project(str(work / "ptah.yaml")) as project:
            build(project, "own")
            vectors = project.matrix(project.generation("own"))
        with sqlite3.connect(work / "support.db") as db:
            db.execute("ALTER TABLE articles ADD COLUMN embedding TEXT")
            db.executemany(
                "UPDATE articles SET embedding = ? WHERE id = ?",
                [(json.dumps(v.tolist()), key) for key, v in zip(vectors.keys, vectors.vectors)],
            )
        routes = {"held": ("own", None), "streamed": ("own", 1), "external": ("external", None)}
        for route, (name, threshold) in routes.items():
            saved = exact.STREAM_BYTES
            if threshold is not None:
                exact.STREAM_BYTES = threshold
            try:
                with projects.open_project(str(work / "ptah.yaml")) as project:
                    request = EvaluationRequest(generations=(name,))
                    results[route] = walk(project, lambda: evaluate(project, corpus, request))  # noqa: B023
            finally:
                exact.STREAM_BYTES = saved
    for route, counts in results.items():
        print(
            f"{route:9} stays {counts['stays']:3}  rooms {counts['rooms']:3}  returns {counts['returns']:3}"
        )
    if options.json:
        options.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
