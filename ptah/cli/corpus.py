"""``ptah corpus validate``, ``digest`` and ``export-qrels``: corpora without a model."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from ptah.services.files import load_corpus, write_text
from ptah.cli.display import error_text, json_text, plain
from ptah.core.errors import EXIT_INPUT, CorpusError

app = typer.Typer(help="Check evaluation corpora, print their digests, export their judgements.", no_args_is_help=True)


@app.command()
def validate(
    files: List[Path] = typer.Argument(..., help="Corpus files to check; every problem in every file is reported."),
    json_output: bool = typer.Option(False, "--json", help="Print one JSON object per run instead of text."),
) -> None:
    """Check corpus files. Exit 0 when all are valid, 2 when any is not."""
    results = []
    for path in files:
        try:
            corpus = load_corpus(path)
        except CorpusError as exc:
            results.append({"path": str(path), "valid": False, "problems": [p.as_dict() for p in exc.problems]})
            if not json_output:
                typer.echo(error_text(exc), err=True)
            continue
        results.append({"path": str(path), "valid": True, "digest": corpus.digest, "cases": len(corpus.cases), "problems": []})
        if not json_output:
            typer.echo(f"{plain(path)}: valid, {len(corpus.cases)} cases, {corpus.digest}")
    invalid = sum(not r["valid"] for r in results)
    if json_output:
        typer.echo(json_text({"valid": invalid == 0, "files": results}))
    elif invalid:
        typer.echo(f"{invalid} of {len(results)} corpus files invalid", err=True)
    if invalid:
        raise typer.Exit(EXIT_INPUT)


@app.command()
def digest(
    file: Path = typer.Argument(..., help="The corpus file."),
    json_output: bool = typer.Option(False, "--json", help='Print {"path", "digest", "cases"} as JSON.'),
) -> None:
    """Print the corpus digest (sha256:...): what --baseline comparability rests on."""
    corpus = load_corpus(file)
    if json_output:
        typer.echo(json_text({"path": str(file), "digest": corpus.digest, "cases": len(corpus.cases)}))
    else:
        typer.echo(corpus.digest)


@app.command("export-qrels")
def export_qrels(
    corpus: Path = typer.Argument(..., help="The corpus file."),
    file: str = typer.Argument(..., help="The TREC qrels file to write (replaced atomically)."),
    scale: Optional[float] = typer.Option(
        None, "--scale", help="Multiply every grade by this to make fractional grades whole (trec_eval reads integers)."
    ),
) -> None:
    """Write the corpus judgements as TREC qrels (QID 0 DOCID GRADE), for trec_eval, pytrec_eval or ranx.

    Exit 2 when a grade is fractional (give --scale) or a case id or key holds
    whitespace, which TREC files cannot carry.
    """
    from ptah.core.trec import qrels_lines

    lines = qrels_lines(load_corpus(corpus), scale)
    write_text(file, "".join(line + "\n" for line in lines))
    typer.echo(f"wrote {plain(file)} ({len(lines)} judgements)")
