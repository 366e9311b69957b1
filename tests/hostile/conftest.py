"""Shared by the hostile tests: the real PostgreSQL of the contract tests."""

from __future__ import annotations

from tests.contract.conftest import postgres_database, postgres_server, postgres_url  # noqa: F401 (fixtures)
