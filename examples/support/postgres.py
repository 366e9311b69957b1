"""A throwaway PostgreSQL holding the bundled example's articles, to try the pgvector store in a schema.

Usage::

    python examples/support/postgres.py start FOLDER
    python examples/support/postgres.py stop FOLDER

``start`` runs PostgreSQL 16 with pgvector (the ``pgserver`` package, in
ptah's test extra) on a Unix socket, with its data in a temporary folder; loads
``articles`` (``make_db.py``'s rows) into its database ``support``; and writes
``FOLDER/ptah.yaml``: the example's ``title-body`` generation over that table,
with the store in the schema ``ptah`` of the very same database. ``stop``
stops the server and deletes its data (``FOLDER`` keeps the specification).
"""

from __future__ import annotations

import os
import sys
import tempfile
import warnings
from pathlib import Path
from urllib.parse import quote

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_db import FIELDS, load_articles  # noqa: E402  (this folder's own script)

SPEC = """\
# The bundled example in PostgreSQL, with ptah's tables in a schema of the source's own database.
version: 1
source:
  database: {url}
  table: articles
  key_fields: [id]
  text: "{{title}}\\n\\n{{body}}"
  filter: "status = 'published'"
store:
  url: {url}   # the source's database: allowed, with a schema that is not the table's
  schema: ptah          # created on the first build; ptah's tables go here and nowhere else
generations:
  title-body:
    model: sentence-transformers/all-MiniLM-L6-v2
    normalize: true
    max_seq_length: 256
"""


def server(data: str, cleanup_mode: str | None):
    with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset
        warnings.simplefilter("ignore")
        import pgserver

        return pgserver.get_server(data, cleanup_mode=cleanup_mode)


def start(folder: Path) -> None:
    import psycopg

    # a short socket path in /tmp: a Unix socket's path is limited to about 100 bytes
    data = tempfile.mkdtemp(prefix="ptah-pg-")
    server(data, None)
    admin = f"postgresql://postgres@/postgres?host={quote(data)}"
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute("CREATE DATABASE support")
    url = f"postgresql://postgres@/support?host={quote(data)}"
    with psycopg.connect(url) as connection:
        connection.execute(
            "CREATE TABLE articles (id integer PRIMARY KEY, title text NOT NULL, body text NOT NULL, "
            "category text NOT NULL, status text NOT NULL)"
        )
        columns = ", ".join(FIELDS)
        connection.cursor().executemany(
            f"INSERT INTO articles ({columns}) VALUES (%s, %s, %s, %s, %s)", load_articles()
        )
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "server").write_text(data + "\n")
    (folder / "ptah.yaml").write_text(SPEC.format(url=url))
    print(f"PostgreSQL runs on {data}; wrote {folder / 'ptah.yaml'}")


def stop(folder: Path) -> None:
    data = (folder / "server").read_text().strip()
    server(data, "delete").cleanup()
    (folder / "server").unlink()
    print(f"stopped PostgreSQL on {data} and deleted its data")


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("start", "stop"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    (start if argv[0] == "start" else stop)(Path(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
