"""ptah's own model-judge kinds, registered through the door (:mod:`ptah.core.plugins`)."""

from __future__ import annotations

from collections.abc import Callable

from ptah.core.plugins import hookimpl


@hookimpl
def register_judges(register: Callable) -> None:
    from ptah.adapters.judges.chat import ChatKind
    from ptah.adapters.judges.encoder import EncoderKind

    register(EncoderKind())
    register(ChatKind())
