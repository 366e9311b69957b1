"""A run's header says what scored it, never "None" and never a lexical run's "model bm25"."""

from __future__ import annotations

from tests.render.reports import document, plain_lines, report


def header(generation: dict, channel: str) -> str:
    data = document()
    data["runs"][0]["generation"] |= generation
    data["runs"][0]["search"]["channel"] = channel
    (line,) = [line for line in plain_lines(report(data)) if line.startswith("generation base ")]
    return line


def test_a_lexical_run_is_bm25_and_has_no_model():
    line = header(
        {
            "model": "bm25 (lucene, k1=1.5, b=0.75)",
            "settings": {"text": "{title}", "method": "lucene", "k1": 1.5, "b": 0.75},
        },
        "lexical",
    )
    assert (
        line
        == "generation base sha256:0123456789ab… BM25 (lexical: lucene, k1=1.5, b=0.75), 3 rows, exact cosine"
    )


def test_a_run_without_a_model_says_so_and_a_hybrid_run_names_both():
    assert "no model recorded, 3 rows" in header({"model": None}, "vector")
    assert "None" not in header({"model": None}, "vector")
    assert "model ptah/deterministic fused with BM25 (lexical), 3 rows" in header({}, "hybrid")


NOTE = "coverage | not <verified>"  # a channel's note, with what Markdown and HTML must escape


def noted() -> dict:
    data = document()
    data["runs"][0]["generation"]["verification"]["note"] = NOTE
    return data


def test_a_channels_note_is_a_typed_member_and_reads_back_the_same():
    typed = report(noted())
    verification = typed.runs[0].generation.verification
    assert verification.note == NOTE
    assert "note" not in verification.checks
    assert typed.to_dict()["runs"][0]["generation"]["verification"]["note"] == NOTE
    assert report(document()).runs[0].generation.verification.note is None


def test_every_renderer_prints_a_channels_note_under_its_run():
    from ptah.render.html import render_html
    from ptah.render.markdown import render_markdown

    typed = report(noted())
    lines = plain_lines(typed)
    header = next(i for i, line in enumerate(lines) if line.startswith("generation base "))
    assert lines[header + 1] == f"  {NOTE}"
    assert "\n- `base (vector)`: `coverage | not <verified>`\n" in render_markdown(typed)
    assert (
        '<p class="meta" data-note="base">base: coverage | not &lt;verified&gt;</p>'
        in render_html(typed)
    )
    plain = report(document())
    assert "data-note" not in render_html(plain)
    assert "verified" not in render_markdown(plain)
