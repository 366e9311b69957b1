"""``ptah import beir`` on a small BEIR-format directory written here: exact cases, counts, messages
and exit codes."""

from __future__ import annotations

import json
import sqlite3

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ptah.adapters.corpus_yaml import load_corpus
from ptah.adapters.sources.sqlite import SqliteSource
from ptah.adapters.spec_yaml import load_spec
from ptah.adapters.yaml_nodes import parse_document, quoted, scalar_text
from ptah.core.corpus import Case
from ptah.core.spec import GenerationSettings
from ptah.services.beir_import import import_beir
from tests.conftest import run_cli

# Written byte for byte: JSON unicode escapes (\u00e9, a surrogate pair for an
# emoji, \u2028), a missing title, an empty title, a numeric _id, a text that
# needs stripping.
CORPUS = (
    '{"_id": "d1", "title": "Caf\\u00e9 study", "text": "Effects of coffee.", "metadata": {}}\n'
    '{"_id": "0042", "text": "  No title here. ", "metadata": {}}\n'
    '{"_id": "d3", "title": "Emoji \\ud83d\\ude00", "text": "Line\\nbreak \\"quoted\\" \\\\ back", "metadata": {}}\n'
    '{"_id": 7, "title": "", "text": "Numeric id."}\n'
)
QUERIES = (
    '{"_id": "q1", "text": "What about caf\\u00e9?", "metadata": {}}\n'
    '{"_id": "q2", "text": "Never judged in this split", "metadata": {}}\n'
    '{"_id": "q3", "text": "Tab\\tand \\"quotes\\" and a \\u2028 separator", "metadata": {}}\n'
    '{"_id": "q4", "text": "Judged, but only with grade 0", "metadata": {}}\n'
)
# CRLF line endings, as BEIR ships its qrels; one repeated line; two grades of 0.
QRELS = "query-id\tcorpus-id\tscore\r\nq1\td1\t1\r\nq1\t0042\t2\r\nq3\td3\t1\r\nq3\t7\t0\r\nq4\td1\t0\r\nq1\td1\t1\r\n"


@pytest.fixture
def dataset(tmp_path):
    directory = tmp_path / "mini"
    (directory / "qrels").mkdir(parents=True)
    (directory / "corpus.jsonl").write_bytes(CORPUS.encode())
    (directory / "queries.jsonl").write_bytes(QUERIES.encode())
    (directory / "qrels" / "test.tsv").write_bytes(QRELS.encode())
    return directory


@pytest.fixture
def project(tmp_path):
    """Where an import writes its project: not there yet."""
    return tmp_path / "project"


def imported(dataset, project, capsys, *extra):
    code, out, err = run_cli(
        capsys, "import", "beir", str(dataset), "--into", str(project), "--json", *extra
    )
    assert (code, err) == (0, "")
    return json.loads(out)


# --- what an import writes ----------------------------------------------------


def test_the_import_counts_what_it_read_skipped_and_wrote(dataset, project, capsys):
    summary = imported(dataset, project, capsys)
    k10, k100 = project / "corpora" / "test-k10.yaml", project / "corpora" / "test-k100.yaml"
    assert summary["corpora"] == {
        str(k10): load_corpus(k10).digest,
        str(k100): load_corpus(k100).digest,
    }
    del summary["corpora"], summary["seconds"]
    assert summary == {
        "dataset": str(dataset),
        "split": "test",
        "project": str(project),
        "spec": str(project / "ptah.yaml"),
        "source": str(project / "source.db"),
        "documents": 4,
        "missing_titles": 1,
        "queries": 4,
        "cases": 2,
        "skipped_unjudged": 1,
        "skipped_not_relevant": 1,
        "judgements": 6,
        "relevant_judgements": 3,
        "non_positive_judgements": 2,
        "duplicate_judgements": 1,
    }
    assert sorted(p.name for p in project.iterdir()) == ["corpora", "ptah.yaml", "source.db"]


def test_the_corpora_hold_one_case_per_query_judged_above_zero(dataset, project, capsys):
    imported(dataset, project, capsys)
    for k in (10, 100):
        corpus = load_corpus(project / "corpora" / f"test-k{k}.yaml")
        assert corpus.default_k == k
        assert corpus.name == f"mini test @{k}"
        assert corpus.cases == (
            Case(id="q1", query="What about caf\u00e9?", k=k, relevant={"d1": 1.0, "0042": 2.0}),
            Case(
                id="q3", query='Tab\tand "quotes" and a \u2028 separator', k=k, relevant={"d3": 1.0}
            ),
        )
        assert list(corpus.cases[0].relevant) == ["d1", "0042"]  # qrels order, spelling kept


def test_the_source_table_embeds_title_space_text_stripped(dataset, project, capsys):
    imported(dataset, project, capsys)
    with sqlite3.connect(project / "source.db") as db:
        rows = db.execute("SELECT id, title, text, document FROM documents ORDER BY id").fetchall()
        declared = db.execute("SELECT sql FROM sqlite_master WHERE name = 'documents'").fetchone()[
            0
        ]
    assert rows == [
        ("0042", "", "  No title here. ", "No title here."),
        ("7", "", "Numeric id.", "Numeric id."),
        ("d1", "Caf\u00e9 study", "Effects of coffee.", "Caf\u00e9 study Effects of coffee."),
        (
            "d3",
            "Emoji \U0001f600",
            'Line\nbreak "quoted" \\ back',
            'Emoji \U0001f600 Line\nbreak "quoted" \\ back',
        ),
    ]
    assert declared.startswith(
        "CREATE TABLE documents (id TEXT PRIMARY KEY, title TEXT NOT NULL, text TEXT NOT NULL"
    )


def test_the_specification_loads_and_its_source_reads_the_documents(dataset, project, capsys):
    imported(dataset, project, capsys)
    spec = load_spec(project / "ptah.yaml")
    assert (spec.source.database, spec.source.table, spec.source.key_fields, spec.source.text) == (
        "sqlite:///source.db",
        "documents",
        ("id",),
        "{document}",
    )
    assert spec.active == "minilm"
    assert spec.generations == {
        "minilm": GenerationSettings(
            name="minilm",
            model="sentence-transformers/all-MiniLM-L6-v2",
            normalize=True,
            max_seq_length=256,
            query_prefix="",
            document_prefix="",
        )
    }
    with SqliteSource(spec.source, spec.root) as source:
        texts = {row.key: row.text for row in source.rows(spec.source.text)}
    assert texts == {
        "0042": "No title here.",
        "7": "Numeric id.",
        "d1": "Caf\u00e9 study Effects of coffee.",
        "d3": 'Emoji \U0001f600 Line\nbreak "quoted" \\ back',
    }


def test_the_text_summary_and_progress(dataset, tmp_path, project, cli):
    code, out, err = cli("import", "beir", str(dataset), "--into", str(project))
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[1:4] == [
        "  documents  4 (1 without a title)",
        "  queries    4 read, 2 made into cases, 1 without judgements in this split skipped, "
        "1 judged but graded 0 or below skipped",
        "  qrels      6 judgements, 3 graded above 0, 1 repeated lines",
    ]
    assert (
        lines[-1]
        == f"next: cd {project} && ptah inference build && ptah inference evaluate --corpus corpora/test-k10.yaml"
    )

    calls = []
    import_beir(dataset, "test", tmp_path / "other", lambda *call: calls.append(call))
    sizes = {
        name: len(text.encode())
        for name, text in (
            ("corpus.jsonl", CORPUS),
            ("queries.jsonl", QUERIES),
            ("test.tsv", QRELS),
        )
    }
    assert [call for call in calls if call[1] == call[2]] == [
        ("queries.jsonl", sizes["queries.jsonl"], sizes["queries.jsonl"]),
        ("test.tsv", sizes["test.tsv"], sizes["test.tsv"]),
        ("corpus.jsonl", sizes["corpus.jsonl"], sizes["corpus.jsonl"]),
    ]


# --- refusals: exact messages, exit 2, nothing written ------------------------------


def refused(dataset, project, capsys, *extra):
    code, out, err = run_cli(capsys, "import", "beir", str(dataset), "--into", str(project), *extra)
    assert (code, out) == (2, "")
    return err


@pytest.mark.parametrize(
    ("lines", "what", "named"),
    [
        (
            "q1\tnope\t1\nq3\tgone\t1\nq4\tnope\t0\n",
            "3 judgement(s) name 2 document id(s) that {corpus}",
            '"nope" (line 8), "gone" (line 9)',
        ),
        ("q9\td1\t1\n", "1 judgement(s) name 1 query id(s) that {queries}", '"q9" (line 8)'),
    ],
)
def test_qrels_naming_unknown_documents_or_queries_are_refused_naming_them(
    dataset, project, capsys, lines, what, named
):
    with open(dataset / "qrels" / "test.tsv", "a") as handle:
        handle.write(lines)
    what = what.format(corpus=dataset / "corpus.jsonl", queries=dataset / "queries.jsonl")
    assert (
        refused(dataset, project, capsys)
        == f"{dataset / 'qrels' / 'test.tsv'}: {what} does not hold: {named}\n"
    )
    assert not project.exists()


def test_a_malformed_line_is_refused_with_its_line_number_and_nothing_is_replaced(
    dataset, project, capsys
):
    imported(dataset, project, capsys)
    before = {p: p.read_bytes() for p in project.rglob("*") if p.is_file()}
    lines = CORPUS.splitlines(keepends=True)
    lines[2] = '{"_id": "d3", "title": "x" "text": "y"}\n'
    (dataset / "corpus.jsonl").write_text("".join(lines))
    err = refused(dataset, project, capsys, "--force")
    assert (
        err
        == f"{dataset / 'corpus.jsonl'}:3: not valid JSON: Expecting ',' delimiter (column 28)\n"
    )
    assert {p: p.read_bytes() for p in project.rglob("*") if p.is_file()} == before


@pytest.mark.parametrize(
    "line, message",
    [
        ('["d9", "text"]', "each line must be a JSON object, not a list"),
        ('{"title": "t", "text": "x"}', "_id: missing; every line needs an id"),
        ('{"_id": "d9", "title": "t"}', "text: missing; every document needs its text"),
        ('{"_id": "d9", "title": 5, "text": "x"}', "title: must be text, not a number"),
        (
            '{"_id": "d9", "text": "bad \\ud800 half"}',
            "text: holds the unpaired surrogate escape \\ud800, which is not Unicode text",
        ),
        (
            '{"_id": "d1", "text": "again"}',
            '_id: "d1" is used by an earlier line too; document ids must be unique',
        ),
    ],
)
def test_bad_corpus_lines_are_refused_with_file_line_and_field(
    dataset, project, capsys, line, message
):
    with open(dataset / "corpus.jsonl", "a") as handle:
        handle.write(line + "\n")
    assert refused(dataset, project, capsys) == f"{dataset / 'corpus.jsonl'}:5: {message}\n"


@pytest.mark.parametrize(
    "qrels, message",
    [
        (
            "query-id\tdoc\tscore\nq1\td1\t1\n",
            '1: the first line must be the header query-id<TAB>corpus-id<TAB>score, not "query-id\\tdoc\\tscore"',
        ),
        (
            "query-id\tcorpus-id\tscore\nq1 d1 1\n",
            "2: a judgement is query-id<TAB>corpus-id<TAB>score; this line has 1 tab-separated field(s)",
        ),
        ("query-id\tcorpus-id\tscore\nq1\td1\t1.5\n", '2: score: "1.5" is not a whole number'),
        (
            "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td1\t2\n",
            ': query "q1" judges document "d1" 2, but line 2 judged it 1; keep one',
        ),
    ],
)
def test_bad_qrels_are_refused(dataset, project, capsys, qrels, message):
    path = dataset / "qrels" / "test.tsv"
    path.write_text(qrels)
    prefix = f"{path}:" if message[0].isdigit() else f"{path}:3"
    assert refused(dataset, project, capsys) == prefix + message + "\n"


def test_a_non_empty_project_needs_force(dataset, project, capsys):
    project.mkdir()
    (project / "notes.txt").write_text("mine")
    err = refused(dataset, project, capsys)
    assert err == (
        f"{project}: exists and is not empty; pass --force to replace its ptah.yaml, source.db and corpora/ files, "
        "or choose another --into\n"
    )
    imported(dataset, project, capsys, "--force")
    assert (project / "notes.txt").read_text() == "mine"
    assert load_corpus(project / "corpora" / "test-k10.yaml").cases[0].id == "q1"


def test_a_missing_split_names_the_splits_there(dataset, project, capsys):
    err = refused(dataset, project, capsys, "--split", "dev")
    assert err == f"{dataset / 'qrels' / 'dev.tsv'}: no such file; the splits here are test\n"


def test_a_split_without_relevant_judgements_is_refused(dataset, project, capsys):
    path = dataset / "qrels" / "test.tsv"
    path.write_text("query-id\tcorpus-id\tscore\nq1\td1\t0\n")
    err = refused(dataset, project, capsys)
    assert (
        err == f"{path}: no query has a judgement graded above 0, so there is nothing to evaluate\n"
    )


def test_a_query_over_the_corpus_limit_is_refused_before_anything_is_written(
    dataset, project, capsys
):
    with open(dataset / "queries.jsonl", "a") as handle:
        handle.write(json.dumps({"_id": "q5", "text": "x" * 8193}) + "\n")
    with open(dataset / "qrels" / "test.tsv", "a") as handle:
        handle.write("q5\td1\t1\n")
    err = refused(dataset, project, capsys)
    assert (
        err.splitlines()[0]
        == f"{dataset / 'qrels' / 'test.tsv'}: the test split cannot be written as a ptah corpus:"
    )
    assert err.splitlines()[1].startswith("corpora/test-k10.yaml:")
    assert err.splitlines()[1].endswith(
        'case "q5": query: is 8,193 characters, above the limit of 8,192'
    )
    assert not project.exists()


# --- quoting -------------------------------------------------------------------------


@given(st.text())
def test_quoted_reads_back_exactly(text):
    root = parse_document(
        f"value: {quoted(text)}\n".encode(), name="t", max_bytes=1 << 20, what="test"
    )
    ((_key, node),) = root.value
    assert scalar_text(node) == text


def test_quoted_escapes_what_yaml_would_fold_or_refuse():
    assert (
        quoted('a "b" \\ \t\n\u2028\x85\ufeff\x7f é 😀')
        == '"a \\"b\\" \\\\ \\x09\\x0a\\u2028\\x85\\ufeff\\x7f é 😀"'
    )


# --- the CLI's surface -----------------------------------------------------------------


def test_without_into_the_project_is_named_after_the_dataset_here(
    dataset, tmp_path, capsys, cli, monkeypatch
):
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    code, out, err = cli("import", "beir", str(dataset), "--json")
    assert (code, err) == (0, "")
    assert json.loads(out)["project"] == str(tmp_path / "elsewhere" / "mini")
    monkeypatch.chdir(tmp_path)
    assert (
        refused(dataset, dataset, capsys)
        == f"{dataset}: is the dataset directory itself; choose another --into\n"
    )
