"""What ``evaluate`` tells a CI: GitHub workflow annotations, and the summary appended to the step's
page.

* ``GITHUB_ACTIONS=true``: an ``::error`` annotation on the corpus line of each
  failed case (:mod:`ptah.render.annotations`), printed to stderr; the file is
  named relative to ``GITHUB_WORKSPACE`` when the corpus lies inside it, as
  GitHub places annotations by a path from the repository root.
* ``GITHUB_STEP_SUMMARY`` set: the Markdown summary (:mod:`ptah.render.markdown`)
  is appended to that file without being asked (:func:`ptah.adapters.files.append_text`:
  a regular file only, at most 1 MiB in all). The summary
  is a courtesy: when it cannot be appended, a one-line warning says why on
  stderr and the exit code stays the verdict's.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from ptah.core.corpus import Corpus
from ptah.core.errors import PtahError
from ptah.core.report import Report
from ptah.core.visible import visible


def workspace_path(path: str, environ: Mapping[str, str]) -> str:
    """``path`` relative to ``GITHUB_WORKSPACE`` when it lies inside it; else as given."""
    workspace = environ.get("GITHUB_WORKSPACE")
    if not workspace:
        return path
    absolute, root = os.path.realpath(path), os.path.realpath(workspace)
    if os.path.commonpath([absolute, root]) != root:
        return path
    return os.path.relpath(absolute, root)


def report_to_ci(report: Report, corpus: Corpus, environ: Mapping[str, str] | None = None) -> None:
    """Annotations and the step summary, as the environment asks (module docs)."""
    environ = os.environ if environ is None else environ
    if environ.get("GITHUB_ACTIONS") == "true" and not report.passed:
        from ptah.render.annotations import failure_annotations

        for line in failure_annotations(
            report, workspace_path(corpus.path or "corpus", environ), corpus.lines()
        ):
            print(line, file=sys.stderr)
    summary = environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        from ptah.adapters.files import append_text
        from ptah.render.markdown import render_markdown

        try:
            append_text(
                summary, render_markdown(report) + "\n", label=f"GITHUB_STEP_SUMMARY {summary}"
            )
        except PtahError as exc:
            print(visible(f"ptah: warning: the summary was not appended: {exc}"), file=sys.stderr)
