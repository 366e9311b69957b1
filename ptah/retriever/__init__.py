"""Gating the search a team already runs: the ``retriever`` channel, a plug-in through the door.

A variant declares it (docs/retriever.md)::

    variants:
      team-search:
        channels: [retriever]
        options: {run: runs/team.jsonl}     # or url: http://search.internal/rank
      team-reranked:
        channels: [retriever]
        options: {url: http://search.internal/rank, api_key_env: SEARCH_KEY}
        rerank: {kind: bi-encoder, generation: title-body, candidates: 50}

and the API hands it a function: ``project.evaluate(corpus, retriever=fn)``.
The channel is :class:`ptah.retriever.channel.RetrieverChannel`, and the
section ``retriever`` (:mod:`ptah.retriever.answers`) says when a service
answered otherwise than the baseline's run. They import
nothing of ptah beyond the extension surface's channel seam, the embedding
client's transport and the public errors.
"""

from __future__ import annotations

from collections.abc import Callable

from ptah import hookimpl


@hookimpl
def register_channels(register: Callable) -> None:
    from ptah.retriever.channel import RetrieverChannel

    register(RetrieverChannel())


@hookimpl
def register_sections(register: Callable) -> None:
    from ptah.retriever.answers import AnswersSection

    register(AnswersSection())
