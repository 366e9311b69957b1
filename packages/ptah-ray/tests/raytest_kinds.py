"""Embedders for the Ray tests, registered in the test process and in every Ray worker process.

Ray runs ``register`` in each worker it starts (``worker_process_setup_hook``),
so an actor opening ``raytest/…`` finds the kind as the driver does. Both
models embed exactly as ``ptah/deterministic`` does (same vectors), and:

* ``raytest/killer``: at its second call in a process, if the file
  ``kill-worker`` exists in the specification's folder, removes it and ends the
  process at once (``os._exit``): a worker killed mid-partition, once;
* ``raytest/slow``: sleeps 0.25 s before each call, so a build takes long enough
  to be killed in the middle;
* ``raytest/leaky``: refuses every source row with an error that quotes the
  store URL its worker connects with, password included (found up the stack,
  as a library quoting the connection string it was given would).
"""

from __future__ import annotations

import inspect
import os
import time
from pathlib import Path

from ptah.adapters.embedders import registry
from ptah.adapters.embedders.deterministic import DeterministicEmbedder


class _Killer(DeterministicEmbedder):
    def __init__(self, marker: Path, **options):
        super().__init__(**options)
        self.marker = marker

    def embed_documents(self, texts):
        if len(self.calls) == 1:
            try:
                self.marker.unlink()
            except FileNotFoundError:
                pass
            else:
                os._exit(1)
        return super().embed_documents(texts)


class _Slow(DeterministicEmbedder):
    def embed_documents(self, texts):
        time.sleep(0.25)
        return super().embed_documents(texts)


class _Leaky(DeterministicEmbedder):
    def embed_documents(self, texts):
        if any(text.startswith("title") for text in texts):  # a source row, not the probe
            plan = next(
                frame.frame.f_locals["self"].plan
                for frame in inspect.stack()
                if hasattr(frame.frame.f_locals.get("self"), "plan")
            )
            raise RuntimeError(f"cannot embed with the store at {plan.store_url.reveal()}")
        return super().embed_documents(texts)


class RayTestKind:
    name = "raytest"

    def claims(self, settings) -> bool:
        return settings.model.startswith("raytest/")

    def identity_parts(self, settings, root: str, *, cache_dir=None) -> dict:
        return {"model": settings.model, "dimension": settings.dimension}

    def open(self, settings, root: str):
        options = dict(dimension=settings.dimension or 32, normalize=settings.normalize)
        if settings.model == "raytest/killer":
            return _Killer(Path(root) / "kill-worker", **options)
        if settings.model == "raytest/leaky":
            return _Leaky(**options)
        return _Slow(**options)

    def versions(self) -> dict:
        return {}


def register() -> None:
    """Register the kind once per process."""
    if "raytest" not in registry.REGISTRY.names():
        registry.register(RayTestKind())
