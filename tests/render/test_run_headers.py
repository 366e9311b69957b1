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
