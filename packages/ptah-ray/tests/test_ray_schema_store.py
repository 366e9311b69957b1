"""A Ray build into a schema of the source's own database: every actor's connections start in that
schema.

The schema travels in the store's URL (its libpq ``options``), so the
actors, which open the store from the URL alone, write where the driver does.
"""

from __future__ import annotations

import psycopg
import pytest
from distributed import build, check, equals_a_local_build

pytestmark = pytest.mark.slow


def test_a_ray_build_into_a_schema_of_the_source_database_equals_a_local_build(
    ray_local, databases
):
    spec = databases.spec("schema", store={"url": databases.source, "schema": "ptah"})
    summary = build(spec, partitions=3)
    assert (summary.rows, summary.embedded, summary.unchanged) == (272, 272, 0)
    assert check(spec).ok
    equals_a_local_build(databases, spec)
    with psycopg.connect(databases.source) as connection:
        found = connection.execute(
            "SELECT schemaname, count(*) FILTER (WHERE tablename LIKE 'ptah\\_%'), count(*) FROM pg_tables "
            "WHERE schemaname NOT IN ('pg_catalog', 'information_schema') GROUP BY 1 ORDER BY 1"
        ).fetchall()
    assert found == [
        ("ptah", 6, 6),
        ("public", 0, 1),
    ]  # five of ptah's tables and the generation's; items alone
