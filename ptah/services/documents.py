"""Reading and writing the documents an evaluation uses: corpora, reports, pages, runs and qrels.

Every read is bounded and every write goes through :mod:`ptah.adapters.files`
(atomic for regular files, written through for devices and FIFOs, refused for
folders); the renderers (:mod:`ptah.render`) make the text. Imports are made
inside the functions, so ``ptah corpus …`` pays only for what it uses.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ptah.core.corpus import Corpus
    from ptah.core.report import Report


def load_corpus(path: str | os.PathLike) -> Corpus:
    """Read and validate a corpus file, with its judgement record ``NAME.judged.yaml`` when one lies beside it
    (:mod:`ptah.core.judged`); :class:`CorpusError` (exit 2) lists every problem."""
    from ptah.adapters.corpus_yaml import load_corpus as load
    from ptah.adapters.judgements_yaml import read_record

    corpus = load(path)
    record = read_record(path)
    return corpus.with_judgements(record) if len(record) else corpus


def load_report(path: str | os.PathLike) -> Report:
    """A report written earlier, checked as a baseline is (schema and self-consistency; exit 2 otherwise)."""
    from ptah.services.evaluate import load_baseline

    return load_baseline(path)


def check_output(path: str | os.PathLike, option: str | None = None) -> None:
    """Refuse (exit 2), before any work, an output path ptah would refuse to write."""
    from ptah.adapters.files import check_output as check

    check(path, option)


def write_text(path: str | os.PathLike, text: str) -> None:
    from ptah.adapters.files import write_text_atomically

    write_text_atomically(path, text)


def write_json(report: Report, path: str | os.PathLike) -> None:
    """The report as ``--output`` writes it (indented JSON), written as it is encoded, a case at a time."""
    from ptah.adapters.files import write_pieces_atomically
    from ptah.render.json import report_chunks

    write_pieces_atomically(path, report_chunks(report))


def write_html(report: Report, path: str | os.PathLike) -> None:
    """The self-contained HTML page of the report."""
    from ptah.render.html import render_html

    write_text(path, render_html(report))


def corpus_lines(corpus: Corpus) -> dict[str, int]:
    """Each case's line in its corpus file, where the loader knew it (JUnit's ``line``, the annotations' place)."""
    return {case.id: case.line for case in corpus.cases if case.line is not None}


def write_junit(report: Report, path: str | os.PathLike, corpus: Corpus | None = None) -> None:
    """The report as JUnit XML; with the ``corpus`` it measured, each case carries its file and line."""
    from ptah.render.junit import render_junit

    lines = None if corpus is None else corpus_lines(corpus)
    write_text(path, render_junit(report, lines, None if corpus is None else corpus.path))


def write_markdown(report: Report, path: str | os.PathLike) -> None:
    """The report's Markdown summary (a pull-request comment)."""
    from ptah.render.markdown import render_markdown

    write_text(path, render_markdown(report))


def append_markdown(report: Report, path: str | os.PathLike, label: str | None = None) -> None:
    """Append the Markdown summary and a blank line to ``path`` (GitHub's step summary): a regular file only,
    at most 1 MiB in all (:func:`ptah.adapters.files.append_text`)."""
    from ptah.adapters.files import append_text
    from ptah.render.markdown import render_markdown

    append_text(path, render_markdown(report) + "\n", label=label)


def write_trec_run(report: Report, path: str | os.PathLike) -> None:
    """The reference run's ranked results as a TREC run file."""
    from ptah.render.trec import run_lines

    write_text(path, "".join(line + "\n" for line in run_lines(report)))


def write_qrels(corpus: Corpus, path: str | os.PathLike, scale: float | None = None) -> int:
    """The corpus judgements as TREC qrels; returns how many lines were written."""
    from ptah.core.trec import qrels_lines

    lines = qrels_lines(corpus, scale)
    write_text(path, "".join(line + "\n" for line in lines))
    return len(lines)
