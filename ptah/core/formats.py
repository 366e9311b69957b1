"""The formats a report is written in, and what writes its file: the two registries behind
``Report.save(path, format)`` and ``Report.to_json()``, filled through the door.

* :data:`FORMATS` (hook ``register_formats``): each :class:`Format` names a module whose
  ``pieces(report, corpus)`` gives the file's text in pieces (``corpus``, the corpus the report
  measured, or None); the module is imported only when its format is written. ptah's own are
  registered by :mod:`ptah.render.formats`. The CLI offers every registered format (``--save
  FORMAT=PATH``; ``--output``, ``--html``, ``--junit``, ``--markdown`` and ``--trec-run`` are its
  spellings). A new format is a module and one ``register`` call in a plugin.
* :data:`WRITERS` (hook ``register_writers``): what puts the pieces at a path. ptah's own,
  :data:`FILE`, is registered by :mod:`ptah.adapters.files` (written atomically, devices and FIFOs
  written through), so the core writes a file without importing an adapter.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ptah.core.registry import Registry

if TYPE_CHECKING:
    from ptah.core.corpus import Corpus
    from ptah.core.report import Report


@dataclass(frozen=True)
class Format:
    name: str
    module: str  # the module whose pieces(report, corpus) make the text
    help: str

    def pieces(self, report: Report, corpus: Corpus | None = None) -> Iterable[str]:
        return importlib.import_module(self.module).pieces(report, corpus)


@dataclass(frozen=True)
class Writer:
    name: str
    write: Callable[[str | os.PathLike, Iterable[str]], None]  # the path, the text in pieces


FORMATS: Registry[Format] = Registry("output format", hook="register_formats")
WRITERS: Registry[Writer] = Registry("report writer", hook="register_writers")
FILE = "file"
