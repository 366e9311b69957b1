"""What an outside retriever answers: each case's ranked keys, scores optional, checked once.

One shape everywhere (a service's answer, a JSON Lines run, what a Python callable returns)::

    {"case": "pricing", "keys": ["42", "17"], "scores": [0.83, 0.61]}

``keys`` are the source table's keys as the corpus spells them (strings),
best first, each once; ``scores`` (optional) are finite numbers, one per
key, never rising down the list. A TREC run file
(``QID Q0 DOCNO RANK SCORE TAG``) reads as the same rankings, ordered by
rank. A ranking without scores is scored ``1 / rank`` in the report.

The digest of a run (``sha256:``) is over its rankings in case order, as
canonical JSON: a replay of the recorded file has the digest of the answers
it recorded.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ptah import InputError

MAX_KEYS = 10_000  # keys in one case's ranking
MAX_RUN_BYTES = 1024 * 1024 * 1024
LISTED = 3  # keys or cases named in a sentence


@dataclass(frozen=True)
class Ranking:
    """One case's answer: its keys, best first, and their scores (None: the retriever gave
    none)."""

    keys: tuple[str, ...]
    scores: tuple[float, ...] | None

    def ranked(self) -> list[tuple[str, float]]:
        """``(key, score)`` pairs, best first; ``1 / rank`` where no score was given."""
        if self.scores is not None:
            return list(zip(self.keys, self.scores))
        return [(key, 1.0 / rank) for rank, key in enumerate(self.keys, start=1)]

    def to_dict(self) -> dict:
        written: dict = {"keys": list(self.keys)}
        if self.scores is not None:
            written["scores"] = list(self.scores)
        return written


class BadRanking(ValueError):
    """Why an answer is refused, as the end of a sentence (``answered a score that is NaN``)."""


def ranking_of(answer: object) -> Ranking:
    """The :class:`Ranking` of one answer: ``{keys, scores?}``, a list of keys, or a list of
    ``(key, score)`` pairs; :class:`BadRanking` saying what is wrong."""
    if isinstance(answer, Mapping):
        return checked(answer.get("keys"), answer.get("scores"))
    if isinstance(answer, (list, tuple)) and answer and isinstance(answer[0], (list, tuple)):
        pairs = [item for item in answer if isinstance(item, (list, tuple)) and len(item) == 2]
        if len(pairs) != len(answer):
            raise BadRanking("answered pairs that are not each (key, score)")
        return checked([key for key, _ in pairs], [score for _, score in pairs])
    return checked(answer, None)


def checked(keys: object, scores: object) -> Ranking:
    """``keys`` and ``scores`` checked (module docs); :class:`BadRanking` otherwise."""
    if not isinstance(keys, (list, tuple)):
        raise BadRanking("answered no list of keys (write keys: [KEY, ...])")
    if len(keys) > MAX_KEYS:
        raise BadRanking(f"answered {len(keys):,} keys for one query, more than {MAX_KEYS:,}")
    bad = [key for key in keys if not isinstance(key, str)]
    if bad:
        raise BadRanking(
            f"answered the key {_shown(bad[0])}, which is not a string; write keys as the corpus "
            'spells them, e.g. "42"'
        )
    seen: set[str] = set()
    for key in keys:
        if key in seen:
            raise BadRanking(f"answered the key {_shown(key)} twice in one ranking")
        seen.add(key)
    if scores is None:
        return Ranking(tuple(keys), None)
    return Ranking(tuple(keys), _scores(scores, len(keys)))


def _scores(scores: object, count: int) -> tuple[float, ...]:
    if not isinstance(scores, (list, tuple)) or len(scores) != count:
        raise BadRanking(
            f"answered scores that are not a list of one number for each of {count} keys"
        )
    numbers = [score for score in scores if _is_number(score)]
    if len(numbers) != count:
        raise BadRanking("answered a score that is not a number")
    found = [float(score) for score in numbers]
    if not all(math.isfinite(score) for score in found):
        raise BadRanking("answered a score that is not a finite number (NaN or infinity)")
    rising = next((i for i in range(1, count) if found[i] > found[i - 1]), None)
    if rising is not None:
        raise BadRanking(
            f"answered scores that rise down the ranking (rank {rising + 1} scores above rank "
            f"{rising}); send the keys best first"
        )
    return tuple(found)


def _is_number(value: object) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float))


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def digest(rankings: Sequence[tuple[str, Ranking]]) -> str:
    """The run's digest: SHA-256 of ``[[case, {keys, scores?}], ...]`` as canonical JSON."""
    document = [[case, ranking.to_dict()] for case, ranking in rankings]
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def recorded_lines(run: str, rankings: Iterable[tuple[str, Ranking]]) -> Iterable[str]:
    """The JSON Lines ``--record-run`` writes: one line a case, named by its run."""
    for case, ranking in rankings:
        line = {"run": run, "case": case, **ranking.to_dict()}
        yield json.dumps(line, ensure_ascii=False) + "\n"


def read_run(path: str, data: bytes, run: str) -> dict[str, Ranking]:
    """The rankings of a run file by case: JSON Lines (a first character ``{``) or TREC; a file
    that records several runs gives those of ``run``. :class:`InputError` naming the file and
    line."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{path}: is not UTF-8 text (a TREC run or JSON Lines)") from None
    if text.lstrip().startswith("{"):
        return _json_lines(path, text, run)
    return _trec(path, text)


def recorded_runs(path: str, data: bytes) -> dict[str, dict[str, Ranking]]:
    """The rankings a ``--record-run`` file holds, by run and case."""
    return _runs(path, data.decode("utf-8"))


def _json_lines(path: str, text: str, run: str) -> dict[str, Ranking]:
    found = _runs(path, text)
    if len(found) <= 1:
        return next(iter(found.values()), {})
    if run not in found:
        raise InputError(
            f"{path}: records the runs {', '.join(sorted(found))}, none named {run!r}; replay one "
            "run a file"
        )
    return found[run]


def _runs(path: str, text: str) -> dict[str, dict[str, Ranking]]:
    found: dict[str, dict[str, Ranking]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line, parse_constant=_constant)
        except ValueError:
            raise InputError(f"{path}:{number}: is not a JSON object") from None
        if not isinstance(entry, dict) or not isinstance(entry.get("case"), str):
            raise InputError(f'{path}:{number}: write {{"case": ID, "keys": [...]}} on each line')
        named = entry.get("run")
        mine = found.setdefault(named if isinstance(named, str) else "", {})
        if entry["case"] in mine:
            raise InputError(f"{path}:{number}: case {entry['case']!r} is ranked twice")
        try:
            mine[entry["case"]] = ranking_of(entry)
        except BadRanking as exc:
            raise InputError(f"{path}:{number}: {_as_file(exc)}") from None
    return found


def _constant(name: str) -> float:
    return float(name)  # NaN and Infinity read, to be refused as scores in one sentence


def _trec(path: str, text: str) -> dict[str, Ranking]:
    rows: dict[str, list[tuple[int, str, float, int]]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 6:
            raise InputError(
                f"{path}:{number}: a TREC run line is QID Q0 DOCNO RANK SCORE TAG, six fields"
            )
        case, _, key, rank, score, _ = fields
        try:
            place, value = int(rank), float(score)
        except ValueError:
            raise InputError(
                f"{path}:{number}: RANK must be a whole number, SCORE a number"
            ) from None
        rows.setdefault(case, []).append((place, key, value, number))
    found = {}
    for case, lines in rows.items():
        lines.sort(key=lambda row: (row[0], -row[2], row[1]))
        try:
            found[case] = checked([row[1] for row in lines], [row[2] for row in lines])
        except BadRanking as exc:
            raise InputError(f"{path}:{lines[0][3]}: case {case!r}: {_as_file(exc)}") from None
    return found


def _as_file(exc: BadRanking) -> str:
    """A refusal told of a file: ``holds ...`` where a service ``answered ...``."""
    return str(exc).replace("answered", "holds", 1)
