"""Schemathesis over ``/openapi.json``: every endpoint, valid and invalid inputs, with a manage
token and without: never a 500, never a traceback, every error a problem+json. Bounded in examples
and time."""

from __future__ import annotations

import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

schemathesis = pytest.importorskip("schemathesis")

EXAMPLES = 40  # per operation and token
DEADLINE_S = 240  # the whole fuzz


@pytest.fixture(scope="module")
def schema(server):
    return schemathesis.openapi.from_url(f"{server.url}/openapi.json")


def test_no_input_makes_the_server_fail_or_leak_a_traceback(project, server, schema):
    started = time.monotonic()
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) == 7
    seen: dict[str, set[int]] = {}
    for operation in operations:
        for token in (project.tokens["manage"], None):
            headers = {"Authorization": f"Bearer {token}"} if token else {}

            @settings(
                max_examples=EXAMPLES,
                deadline=None,
                database=None,
                suppress_health_check=list(HealthCheck),
            )
            @given(case=operation.as_strategy(), data=st.data())
            def call(case, data):
                if time.monotonic() - started > DEADLINE_S:
                    return
                response = case.call(base_url=server.url, headers=headers, timeout=60)
                seen.setdefault(operation.label, set()).add(response.status_code)
                assert response.status_code < 500, (
                    operation.label,
                    response.status_code,
                    response.text[:500],
                )
                assert "Traceback" not in response.text
                if response.status_code >= 400:
                    kind = response.headers["content-type"]
                    assert (
                        kind[0] if isinstance(kind, list) else kind
                    ) == "application/problem+json", response.text[:200]

            call()
    assert set(seen) == {operation.label for operation in operations}
