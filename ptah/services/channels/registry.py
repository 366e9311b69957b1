"""The channels by name: one registry, filled through the door (hook ``register_channels``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from ptah.core.registry import Registry

if TYPE_CHECKING:
    from ptah.core.report import Run
    from ptah.services.channels.base import RunPlan, Sides


class Channel(Protocol):
    """A way of ranking rows for a query, measured as a run.

    ``name`` is how it is asked for (``--channel NAME``); ``needs_vectors``
    says whether it reads a generation's vectors (so its generation must be
    built, and its embedder's libraries are the report's environment);
    ``measure`` measures one planned run, sharing sides through ``sides``.

    What else it needs it declares, each optional (False when absent): ``whole_ranking``, the
    whole exact vector ranking of every row (so the vectors are read whole, never streamed, and
    no index search can stand in); ``bare_name``, its runs are named by their generation alone
    (``docs``, where another channel's run is ``lexical:docs``); ``outside``, its runs are the
    answers of a search ptah did not build (the retriever's): the request's ``record_run`` writes
    their rankings, and a run's identity is their digest, so a report's run is measured again as it
    was when the cases both corpora hold are ranked as they were.
    """

    name: str
    needs_vectors: bool

    def measure(self, plan: RunPlan, sides: Sides) -> Run: ...


CHANNELS: Registry[Channel] = Registry("channel", hook="register_channels")


def register_channel(channel: Channel) -> Channel:
    """Add a channel; its name must be new."""
    return CHANNELS.register(channel.name, channel)


def channel(name: str) -> Channel:
    """The channel registered as ``name``; :class:`InputError` (exit 2) otherwise."""
    return CHANNELS.get(name)


def channel_names() -> tuple[str, ...]:
    return CHANNELS.names()
