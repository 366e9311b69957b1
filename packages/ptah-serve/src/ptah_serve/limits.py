"""What the server admits: request bodies, searches per evaluation and report sizes -- refused,
never truncated.

The defaults follow the evaluation service the issue cites: at most 1,024
case x run searches per evaluation and a report of at most 64 MiB, both
checked at admission (``LIMIT_EXCEEDED``) before a job is accepted. The
report's size is estimated generously before the job runs
(:func:`report_bytes_estimate`: every case's fields, and k results per case
with keys as long as the longest the corpus names, at least 64 characters)
and measured again once the report is made: a report past the limit fails
its job with the same code (a table whose keys are far longer than the
corpus's can get there); no report is ever cut. A manage token may have at
most ``max_queued`` evaluations waiting for a worker: past it ``POST
/v1/evaluations`` is 429 ``QUEUE_FULL`` with ``Retry-After``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ptah import Corpus, InputError

MIB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """The server's admission limits (``ptah serve --max-…``, at least 1 each)."""

    max_searches: int = 1024  # cases x runs per evaluation
    max_report_bytes: int = 64 * MIB  # the report as --output writes it
    max_corpus_bytes: int = 16 * MIB  # POST /v1/corpora: the corpus file limit
    max_json_bytes: int = 64 * 1024  # every other request body
    max_queued: int = (
        64  # evaluations one manage token may have queued (not yet running); past it 429
    )


class LimitExceeded(InputError):
    """An evaluation past an admission limit: refused whole (``LIMIT_EXCEEDED``)."""

    code = "LIMIT_EXCEEDED"


class BodyTooLarge(InputError):
    """A request body past its byte bound (413)."""


# What one case adds to one run in the report, generously: its fields and measures, and per ranked
# result its key (JSON-escaped: at most 6 bytes a character) and score.
_CASE_BYTES = 4096
_RESULT_BYTES = 96


def report_bytes_estimate(corpus: Corpus, runs: int, measures: int) -> int:
    """A generous estimate of the report's size for ``runs`` runs over ``corpus`` (see the module
    docs)."""
    longest_key = max(
        (len(key) for case in corpus.cases for key in case.expected_keys()), default=0
    )
    longest_key = max(longest_key, 64)
    per_run = 0
    for case in corpus.cases:
        listed = len(case.required) + len(case.relevant) + len(case.forbidden)
        text = len(case.id) + len(case.query) + sum(len(key) for key in case.expected_keys())
        per_run += (
            _CASE_BYTES
            + 64 * measures
            + 6 * text
            + 16 * listed
            + case.k * (_RESULT_BYTES + 6 * longest_key)
        )
    return 64 * 1024 + runs * (per_run + 4096) + (runs - 1) * len(corpus.cases) * 512


def admit(limits: Limits, corpus: Corpus, runs: int, measures: int) -> None:
    """Refuse (LimitExceeded) an evaluation of ``runs`` runs on ``corpus`` past the searches or
    report limit."""
    searches = len(corpus.cases) * runs
    if searches > limits.max_searches:
        raise LimitExceeded(
            f"this evaluation needs {searches:,} searches ({len(corpus.cases):,} cases x {runs} "
            f"runs), more than the limit of {limits.max_searches:,}."
        )
    bound = report_bytes_estimate(corpus, runs, measures)
    if bound > limits.max_report_bytes:
        raise LimitExceeded(
            f"this evaluation's report could reach {bound:,} bytes, more than the limit of "
            f"{limits.max_report_bytes:,}."
        )
