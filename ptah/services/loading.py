"""The notice a command line shows while a model loads: :data:`LOADING` (set it to a function of one
line)."""

from __future__ import annotations

from ptah.adapters.embedders import LOADING

__all__ = ["LOADING"]
