"""Channels: what each run of an evaluation searches with (see :mod:`ptah.services.channels.base`).

ptah's own channels -- ``vector`` (exact, or through an index), ``lexical`` and ``hybrid`` --
come in through the door (:mod:`ptah.core.plugins`), in that order.
"""

from collections.abc import Callable

from ptah.core.plugins import hookimpl
from ptah.services.channels.base import RunPlan, Sides, check_record_run, plan_runs
from ptah.services.channels.registry import (
    CHANNELS,
    Channel,
    channel,
    channel_names,
    register_channel,
)

__all__ = [
    "CHANNELS",
    "Channel",
    "RunPlan",
    "Sides",
    "channel",
    "channel_names",
    "check_record_run",
    "plan_runs",
    "register_channel",
]


@hookimpl
def register_channels(register: Callable) -> None:
    from ptah.services.channels.hybrid import HybridChannel
    from ptah.services.channels.lexical import LexicalChannel
    from ptah.services.channels.vector import VectorChannel

    register(VectorChannel())
    register(LexicalChannel())
    register(HybridChannel())
