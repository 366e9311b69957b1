"""Loading and finding ``ptah.yaml``: every problem reported as FILE:LINE: field: message."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from ptah.adapters.spec_yaml import find_spec, load_spec
from ptah.core.errors import EXIT_INPUT, SpecError, UnknownGeneration
from ptah.core.spec import GenerationSettings, SourceSpec, redact_url

VALID = """\
version: 1
source:
  database: sqlite:///support.db
  table: articles
  key_fields: [tenant, id]
  text: "{title}\\n\\n{body}"
  filter: "status = 'published'"
active: minilm
generations:
  minilm:
    model: sentence-transformers/all-MiniLM-L6-v2
    normalize: true
    max_seq_length: 256
    query_prefix: ""
    document_prefix: ""
  body-only:
    model: ptah/deterministic
    text: "{body}"
    dimension: 32
    batch_size: 8
"""


def write(folder: Path, text: str, name: str = "ptah.yaml") -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def problems(path: Path, env: dict | None = None) -> list[str]:
    with pytest.raises(SpecError) as caught:
        load_spec(path, env=env or {})
    assert caught.value.exit_code == EXIT_INPUT
    return [str(p) for p in caught.value.problems]


def test_a_valid_spec_loads_with_paths_resolved_from_its_folder(tmp_path):
    path = write(tmp_path, VALID)
    spec = load_spec(path, env={})
    assert spec.path == str(path)
    assert spec.root == str(tmp_path)
    assert spec.source == SourceSpec(
        "sqlite:///support.db",
        "articles",
        ("tenant", "id"),
        "{title}\n\n{body}",
        "status = 'published'",
    )
    assert spec.store == str(tmp_path / ".ptah" / "ptah.db")
    assert spec.active == "minilm"
    assert list(spec.generations) == ["minilm", "body-only"]
    assert spec.generations["minilm"] == GenerationSettings(
        "minilm", "sentence-transformers/all-MiniLM-L6-v2", True, 256, "", "", None, 64, None
    )
    body = spec.generation("body-only")
    assert body == GenerationSettings(
        "body-only", "ptah/deterministic", True, None, "", "", "{body}", 8, 32
    )
    assert body.template(spec.source) == "{body}"
    assert spec.generation(None).template(spec.source) == "{title}\n\n{body}"


def test_defaults_single_generation_is_active_and_deterministic_dimension_is_64(tmp_path):
    path = write(
        tmp_path,
        """\
        version: 1
        source: {database: "sqlite:////srv/x.db", table: t, key_fields: [id], text: "{a}"}
        store: data/vectors.db
        generations:
          only: {model: ptah/deterministic}
        """,
    )
    spec = load_spec(path, env={})
    assert spec.active == "only"
    assert spec.store == str(tmp_path / "data" / "vectors.db")
    assert spec.generations["only"].dimension == 64
    assert spec.source.filter is None
    assert spec.source.statement_timeout_s == 600


def test_the_statement_timeout_is_whole_seconds_from_1_to_a_day(tmp_path):
    spec = load_spec(
        write(tmp_path, VALID.replace("  filter:", "  statement_timeout_s: 30\n  filter:")), env={}
    )
    assert spec.source.statement_timeout_s == 30
    path = write(tmp_path, VALID.replace("  filter:", "  statement_timeout_s: 0.5\n  filter:"))
    assert problems(path) == [
        f"{path}:7: source.statement_timeout_s: must be a whole number from 1 to 86,400, "
        "not the number 0.5"
    ]


def test_unknown_generation_lists_the_declared_names(tmp_path):
    spec = load_spec(write(tmp_path, VALID), env={})
    with pytest.raises(UnknownGeneration) as caught:
        spec.generation("minlm")
    assert caught.value.exit_code == EXIT_INPUT
    assert (
        str(caught.value)
        == f'{spec.path}: no generation named "minlm"; the specification declares minilm, body-only'
    )


def test_every_problem_is_reported_with_line_and_field_sorted_by_line(tmp_path):
    path = write(
        tmp_path,
        """\
        version: 2
        source:
          database: sqlite:///x.db
          tabel: articles
          key_fields: []
          text: "{title:>10}"
        active: nope
        generations:
          g1:
            model: m
            normalise: true
            batch_size: 0
        """,
    )
    name = str(path)
    assert problems(path) == [
        f"{name}:1: version: the number 2 is not a supported version; write version: 1",
        f"{name}:2: source.table: missing; name the table (or view) whose rows are embedded",
        f'{name}:4: source.tabel: unknown field in source; did you mean "table"?',
        f"{name}:5: source.key_fields: must be a non-empty list of column names such as [id], not an empty list",
        f"{name}:6: source.text: the template is not valid: {{title:>10}} at character 1: only plain {{column}} "
        "placeholders are supported (no format specs, conversions, attribute or index access); write {title}",
        f"{name}:7: active: names no generation declared under generations:; declared: g1",
        f'{name}:11: generations.g1.normalise: unknown field in generations.g1; did you mean "normalize"?',
        f"{name}:12: generations.g1.batch_size: must be a whole number from 1 to 65,536, not the number 0",
    ]


def minimal(**overrides: str) -> str:
    """A valid spec, with whole lines replaced by ``overrides`` (field -> YAML line(s))."""
    lines = {
        "version": "version: 1",
        "source": "source:",
        "database": "  database: sqlite:///x.db",
        "table": "  table: articles",
        "key_fields": "  key_fields: [id]",
        "text": '  text: "{body}"',
        "generations": "generations:\n  g: {model: ptah/deterministic}",
    }
    lines.update(overrides)
    return "\n".join(line for line in lines.values() if line) + "\n"


@pytest.mark.parametrize(
    "overrides, expected",
    [
        (
            {"key_fields": "  key_fields: [id, id]"},
            '5: source.key_fields: "id" is listed twice; list each key column once',
        ),
        (
            {"key_fields": "  key_fields: id"},
            '5: source.key_fields: must be a non-empty list of column names such as [id], not the text "id"',
        ),
        (
            {"key_fields": "  key_fields: [[a]]"},
            "5: source.key_fields: each key field is a column name, not a list",
        ),
        (
            {"key_fields": ""},
            "2: source.key_fields: missing; list the column(s) that identify a row, e.g. key_fields: [id]",
        ),
        (
            {"table": '  table: ""'},
            "4: source.table: is empty; name the table (or view) whose rows are embedded",
        ),
        (
            {"database": "  database: support.db"},
            '3: source.database: "support.db" is not a database URL ptah reads; write sqlite:///FILE '
            "(relative to this file) or postgresql://USER@HOST/DATABASE",
        ),
        (
            {"database": "  database: sqlite://x.db"},
            '3: source.database: "sqlite://x.db" is not a database URL ptah reads; write sqlite:///FILE '
            "(three slashes, then a path relative to this file) or sqlite:////ABSOLUTE/PATH",
        ),
        (
            {"text": '  text: "{title"'},
            "6: source.text: the template is not valid: the { at character 1 is not closed; "
            "write {column}, or {{ for a literal brace",
        ),
        (
            {"text": '  text: "a } b"'},
            "6: source.text: the template is not valid: a single } at character 3; write }} for a literal brace",
        ),
        (
            {"text": '  text: "{ title }"'},
            "6: source.text: the template is not valid: { title } at character 1 has spaces around the column "
            "name; write {title}",
        ),
        (
            {"text": '  text: "{a.b}"'},
            "6: source.text: the template is not valid: {a.b} at character 1: only plain {column} placeholders "
            "are supported (no format specs, conversions, attribute or index access); write {a}",
        ),
        (
            {"text": '  text: "no {{columns}} here"'},
            '6: source.text: the template names no column, so every row would embed the same text; write e.g. "{title}"',
        ),
        ({"version": ""}, "1: version: missing; write version: 1 at the top"),
        (
            {"version": 'version: "1"'},
            '1: version: the text "1" is not a supported version; write version: 1',
        ),
        (
            {"generations": ""},
            "1: generations: missing; declare at least one generation under generations: with its model",
        ),
        (
            {"generations": "generations:\n  g: {model: m, dimension: 8}"},
            "8: generations.g.dimension: applies to model ptah/deterministic only (a real model's dimension comes "
            "from its weights); remove it",
        ),
        (
            {"generations": "generations:\n  g: {model: m, normalize: yes}"},
            '8: generations.g.normalize: must be true or false, not the text "yes"; leave it out for the default, '
            "true (vectors scaled to unit length)",
        ),
        (
            {"generations": "generations:\n  g: {normalize: true}"},
            "8: generations.g.model: missing; name a model, e.g. sentence-transformers/all-MiniLM-L6-v2, "
            "or ptah/deterministic",
        ),
        (
            {"generations": "generations:\n  bad name: {model: m}"},
            "8: generations.bad name: a generation name is 1 to 64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit",
        ),
        (
            {"generations": "generations:\n  g: {model: m, max_seq_length: true}"},
            "8: generations.g.max_seq_length: must be a whole number from 1 to 1,000,000, not the boolean true; "
            "leave it out for the model's own limit (256 tokens for MiniLM)",
        ),
        (
            {"generations": "generations:\n  g:\n    model: m\n  g:\n    model: n"},
            "10: generations.g: is given twice in generations (lines 8 and 10); keep one",
        ),
        (
            {"source": "source: [a]", "database": "", "table": "", "key_fields": "", "text": ""},
            "2: source: must be a mapping (database, table, key_fields, text), not a list",
        ),
        (
            {
                "generations": "generations:\n  g1: {model: ptah/deterministic}\n  g2: {model: ptah/deterministic}\n"
                "active: g11"
            },
            '10: active: names no generation declared under generations:; did you mean "g1"?',
        ),
    ],
)
def test_each_bad_input_is_one_located_problem(tmp_path, overrides, expected):
    path = write(tmp_path, minimal(**overrides))
    assert problems(path) == [f"{path}:{expected}"]


def test_not_yaml_and_not_a_mapping(tmp_path):
    broken = write(tmp_path, "version: 1\nsource: [\n", "broken.yaml")
    assert problems(broken)[0].startswith(f"{broken}:3: not valid YAML")
    scalar = write(tmp_path, "just text\n", "scalar.yaml")
    assert problems(scalar) == [
        f'{scalar}:1: a specification is a YAML mapping (version, source, generations…), not the text "just text"'
    ]
    aliased = write(
        tmp_path,
        minimal(generations="generations:\n  g: &s {model: ptah/deterministic}\n  h: *s"),
        "aliased.yaml",
    )
    assert "anchors and aliases" in problems(aliased)[0]


def test_environment_variables_are_expanded_in_database_and_store(tmp_path):
    path = write(
        tmp_path,
        minimal(database="  database: postgresql://app:${DB_PASSWORD}@db.internal/${DB}")
        + "store: ${STORE_DIR}/vectors.db\n",
    )
    spec = load_spec(path, env={"DB_PASSWORD": "s3cr3t", "DB": "support", "STORE_DIR": "/var/ptah"})
    assert spec.source.database == "postgresql://app:s3cr3t@db.internal/support"
    assert spec.source.redacted_database == "postgresql://app:***@db.internal/support"
    assert spec.store == "/var/ptah/vectors.db"


def test_an_unset_variable_is_named_and_no_secret_leaks(tmp_path):
    path = write(
        tmp_path,
        minimal(database="  database: postgresql://app:${DB_PASSWORD}@h/db")
        + "store: ${STORE_URL}\n",
    )
    assert problems(path, env={}) == [
        f"{path}:3: source.database: the environment variable DB_PASSWORD is not set; set it before running ptah, "
        "or write the value",
        f"{path}:9: store: the environment variable STORE_URL is not set; set it before running ptah, "
        "or write the value",
    ]
    bad = write(tmp_path, minimal(database="  database: mysql://app:${PW}@h/db"), "bad.yaml")
    found = problems(bad, env={"PW": "hunter2"})
    assert found == [
        f'{bad}:3: source.database: "mysql://app:***@h/db" is not a database URL ptah reads; write sqlite:///FILE '
        "(relative to this file) or postgresql://USER@HOST/DATABASE"
    ]
    assert "hunter2" not in "".join(found)


@pytest.mark.parametrize(
    "url, redacted",
    [
        ("postgresql://u:p@h:5432/db", "postgresql://u:***@h:5432/db"),
        (
            "postgresql://u:p@ss?w#rd@h/db?sslmode=require",
            "postgresql://u:***@h/db?sslmode=require",
        ),
        ("postgresql://h/db?user=u&password=p", "postgresql://h/db?user=u&password=***"),
        ("postgresql://u@h/db", "postgresql://u@h/db"),
        ("sqlite:///data/a@b.db", "sqlite:///data/a@b.db"),
        (
            "postgresql://u:s3cr/et@h:1/db",
            "postgresql://u:***@h:1/db",
        ),  # an unencoded / in the password
    ],
)
def test_passwords_are_redacted(url, redacted):
    assert redact_url(url) == redacted
    assert SourceSpec(url, "t", ("id",), "{a}").redacted_database == redacted


def test_spec_found_upward_from_the_working_directory(tmp_path):
    path = write(tmp_path, minimal())
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    assert find_spec(None, env={}, cwd=deep) == path
    elsewhere = write(deep, minimal(), "other.yaml")
    assert find_spec(None, env={"PTAH_SPEC": "other.yaml"}, cwd=deep) == elsewhere
    assert find_spec("other.yaml", env={"PTAH_SPEC": str(path)}, cwd=deep) == elsewhere
    assert find_spec(str(tmp_path), env={}, cwd=deep) == path


@pytest.mark.parametrize(
    "named, env, message",
    [
        (
            None,
            {},
            "no ptah.yaml in {tmp} or any folder above it; pass --spec PATH or set PTAH_SPEC to the specification "
            "file",
        ),
        (
            "missing.yaml",
            {},
            "{tmp}/missing.yaml: no such specification file (named by --spec missing.yaml)",
        ),
        (
            None,
            {"PTAH_SPEC": "gone.yaml"},
            "{tmp}/gone.yaml: no such specification file (named by PTAH_SPEC gone.yaml)",
        ),
    ],
)
def test_spec_not_found_says_where_it_looked(tmp_path, named, env, message):
    with pytest.raises(SpecError) as caught:
        find_spec(named, env=env, cwd=tmp_path)
    assert caught.value.exit_code == EXIT_INPUT
    assert str(caught.value) == message.format(tmp=tmp_path)


def test_load_spec_uses_the_process_environment_by_default(tmp_path, monkeypatch):
    monkeypatch.setenv("PTAH_TEST_DB", "support.db")
    spec = load_spec(write(tmp_path, minimal(database="  database: sqlite:///${PTAH_TEST_DB}")))
    assert spec.source.database == "sqlite:///support.db"
    assert os.environ["PTAH_TEST_DB"] == "support.db"
