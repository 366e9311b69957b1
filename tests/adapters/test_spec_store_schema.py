"""``store: {url: postgresql://…, schema: ptah}``, as the specification reader takes it (no server
needed).

The schema travels in the URL's libpq ``options`` (``-csearch_path=SCHEMA``),
so every connection to the store starts there; the values alone never refuse
the source's database when a schema is named (the servers decide, see
``tests/contract/test_pgvector_schema_store.py``).
"""

from __future__ import annotations

import pytest

from ptah.adapters.spec_yaml import load_spec
from ptah.adapters.stores.pgvector_location import schema_of
from tests.adapters.test_spec_yaml import minimal, problems, write

SOURCE = "postgresql://reader@db.internal/support"


def store(*lines: str) -> dict:
    return {"database": f"  database: {SOURCE}", "store": "\n".join(lines)}


@pytest.mark.parametrize(
    ("url", "location"),
    [
        (SOURCE, f"{SOURCE}?options=-csearch_path%3Dptah"),
        (
            f"{SOURCE}?sslmode=require&options=-c%20statement_timeout%3D5s",
            f"{SOURCE}?sslmode=require&options=-csearch_path%3Dptah%20-c%20statement_timeout%3D5s",
        ),
        (
            "postgres://${STORE_USER}@db.internal/support?host=/run/pg/",
            "postgres://ptah@db.internal/support?host=/run/pg/&options=-csearch_path%3Dptah",
        ),
    ],
)
def test_the_schema_joins_the_url_options_and_the_source_database_is_left_to_the_servers(
    tmp_path, url, location
):
    path = write(tmp_path, minimal(**store("store:", f"  url: {url}", "  schema: ptah")))
    spec = load_spec(path, env={"STORE_USER": "ptah"})
    assert (spec.store, schema_of(spec.store)) == (location, "ptah")


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (
            ("store:", "  url: .ptah/ptah.db", "  schema: ptah"),
            "10: store.url: a schema is for a PostgreSQL store; write store: {url: postgresql://…, schema: ptah}, or write "
            "store: FILE",
        ),
        (
            ("store:", f"  url: {SOURCE}", "  schema: Ptah"),
            '11: store.schema: "Ptah" is not a schema ptah creates; a schema is a lower-case SQL name of at most 63 letters '
            "a-z, digits and _, such as ptah",
        ),
        (
            ("store:", f"  url: {SOURCE}", '  schema: "ptah; drop table articles"'),
            '11: store.schema: "ptah; drop table articles" is not a schema ptah creates; a schema is a lower-case SQL name '
            "of at most 63 letters a-z, digits and _, such as ptah",
        ),
        (
            ("store:", f"  url: {SOURCE}", "  schema: information_schema"),
            '11: store.schema: "information_schema" is a system schema of PostgreSQL; ptah writes only into a schema of '
            "its own, such as ptah",
        ),
        (
            ("store:", f"  url: {SOURCE}", "  schema: pg_catalog"),
            '11: store.schema: "pg_catalog" is a system schema',
        ),
        (
            ("store:", f"  url: {SOURCE}", "  schema: pg_toast"),
            '11: store.schema: "pg_toast" is a system schema',
        ),
        (
            ("store:", f"  url: {SOURCE}", "  schema: pg_temp_3"),
            '11: store.schema: "pg_temp_3" is a system schema',
        ),
        (
            ("store:", f"  url: {SOURCE}", "  schema: pg_ptah"),
            '11: store.schema: "pg_ptah" is a system schema',
        ),
        (
            (f"store: {SOURCE}?options=-csearch_path%3Dpg_catalog",),
            '9: store: "pg_catalog" is a system schema',
        ),
        (
            ("store:", f"  url: {SOURCE}?options=-csearch_path%3Dother", "  schema: ptah"),
            "11: store.schema: the URL's options set search_path already; name the schema once, in schema: or in the URL",
        ),
        (
            ("store:", "  schema: ptah"),
            "10: store.url: missing; write store: {url: postgresql://…, schema: ptah}",
        ),
        (
            ("store:", f"  url: {SOURCE}"),
            "10: store.schema: missing; write store: {url: postgresql://…, schema: ptah}",
        ),
        (
            ("store:", f"  url: {SOURCE}", "  schema: ptah", "  scheme: x"),
            '12: store.scheme: unknown field in store; did you mean "schema"?',
        ),
    ],
)
def test_each_mistake_in_the_mapping_is_one_located_problem(tmp_path, lines, expected):
    path = write(tmp_path, minimal(**store(*lines)))
    found = problems(path)
    assert [problem.removeprefix(f"{path}:")[: len(expected)] for problem in found][:1] == [
        expected
    ]


def test_without_a_schema_the_source_database_is_refused_from_the_values(tmp_path):
    path = write(tmp_path, minimal(**store(f"store: {SOURCE}")))
    assert problems(path) == [
        f"{path}:9: store: names the source database itself; ptah writes its own tables into the store and only ever "
        "reads the source, so give the store a database of its own (the default file .ptah/ptah.db, or another "
        "PostgreSQL database)"
    ]
