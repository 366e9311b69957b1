"""A real project in a tmp folder: a SQLite source table, a ptah.yaml and (after a build) a
store."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ptah.services.project import open_project
from tests.conftest import spec_yaml

DOCS = [
    (1, "Cancel a subscription", "Open billing and press cancel.", "published"),
    (2, "Reset a password", "Use the forgot password link.", "published"),
    (3, "Export invoices", "Invoices export as PDF from billing.", "published"),
    (4, "Invite a teammate", "Admins invite people from settings.", "published"),
    (5, "Delete an account", "Contact support to delete an account.", "published"),
    (6, "Change the plan", "Upgrade or downgrade under billing.", "published"),
    (7, "Two-factor login", "Enable 2FA with an authenticator app.", "published"),
    (8, "API tokens", "Create tokens under developer settings.", "published"),
    (9, "Draft: roadmap", "Unreleased features.", "draft"),
    (10, "Webhooks", "Webhooks post JSON to your endpoint.", "published"),
]


class Workspace:
    """One tmp folder holding ``source.db`` and ``ptah.yaml``."""

    docs = DOCS

    def __init__(self, folder: Path):
        self.folder = folder
        self.database = folder / "source.db"
        self.spec_path = folder / "ptah.yaml"

    def execute(self, sql: str, parameters=()) -> None:
        connection = sqlite3.connect(self.database)
        with connection:
            if isinstance(parameters, list):
                connection.executemany(sql, parameters)
            else:
                connection.execute(sql, parameters)
        connection.close()

    def write_spec(self, **fields) -> Path:
        """ptah.yaml made by ``tests.conftest.spec_yaml(**fields)``; by default generation ``docs``,
        32 dimensions."""
        fields.setdefault(
            "generations",
            {"docs": {"model": "ptah/deterministic", "dimension": 32, "batch_size": 4}},
        )
        self.spec_path.write_text(spec_yaml(**fields))
        return self.spec_path

    def project(self):
        return open_project(str(self.spec_path))

    @property
    def store_path(self) -> Path:
        return self.folder / ".ptah" / "ptah.db"

    @staticmethod
    def text(row) -> str:
        """The text template ``{title}\\n\\n{body}`` rendered for a DOCS row."""
        return f"{row[1]}\n\n{row[2]}"

    @staticmethod
    def judging_text(row) -> str:
        """A DOCS row's judging text under the default spec: every column a template uses,
        labelled."""
        return f"title: {row[1]}\nbody: {row[2]}"


@pytest.fixture
def workspace(tmp_path) -> Workspace:
    """The ten DOCS in table ``articles`` (id, title, body, status) and a deterministic generation
    ``docs``."""
    space = Workspace(tmp_path)
    space.execute(
        "CREATE TABLE articles (id INTEGER PRIMARY KEY, title TEXT, body TEXT, status TEXT)"
    )
    space.execute("INSERT INTO articles VALUES (?, ?, ?, ?)", DOCS)
    space.write_spec()
    return space


def request(*, names=None, baseline_path=None, thresholds=None, **options):
    """An EvaluationRequest from the keywords these tests spell: ``names``, ``baseline_path``,
    ``thresholds``."""
    from ptah.core.request import EvaluationRequest

    return EvaluationRequest(
        generations=tuple(names or ()),
        baseline=baseline_path,
        max_drop={name: value for name, value in (thresholds or {}).items() if value is not None},
        **{
            key: tuple(value) if isinstance(value, list) else value
            for key, value in options.items()
        },
    )
