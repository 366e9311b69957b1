"""Build the SQLite database for the bundled support-articles example.

Usage::

    python examples/support/make_db.py [OUT_DB]

Reads ``articles.jsonl`` (next to this script; one JSON object per line with
``id``, ``title``, ``body``, ``category`` and ``status``) and (re)creates the
table::

    articles(id INTEGER PRIMARY KEY, title TEXT NOT NULL, body TEXT NOT NULL,
             category TEXT NOT NULL, status TEXT NOT NULL)

``OUT_DB`` defaults to ``support.db`` in this script's folder, whatever the
current directory is; an explicit ``OUT_DB`` is used as given (relative to the
current directory). The database is written to a temporary file in the
destination folder and moved into place with ``os.replace``, so readers never
see a half-written file. Rows are inserted in id order, so the same input
always yields the same table. Standard library only.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "articles.jsonl")
DEFAULT_OUT = "support.db"

SCHEMA = """
CREATE TABLE articles (
    id INTEGER PRIMARY KEY,
    title TEXT NOT NULL,
    body TEXT NOT NULL,
    category TEXT NOT NULL,
    status TEXT NOT NULL
)
"""

FIELDS = ("id", "title", "body", "category", "status")
STATUSES = ("published", "draft")


def load_articles(path: str = SOURCE) -> list[tuple]:
    """Read and validate the JSONL file; return rows sorted by id."""
    rows: dict[int, tuple] = {}
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            obj = json.loads(line)
            missing = [f for f in FIELDS if f not in obj]
            if missing:
                raise ValueError(f"{path}:{lineno}: missing {', '.join(missing)}")
            art_id = obj["id"]
            if not isinstance(art_id, int) or isinstance(art_id, bool) or art_id < 1:
                raise ValueError(f"{path}:{lineno}: id must be a positive integer")
            if art_id in rows:
                raise ValueError(f"{path}:{lineno}: duplicate id {art_id}")
            for field in FIELDS[1:]:
                if not isinstance(obj[field], str) or not obj[field].strip():
                    raise ValueError(f"{path}:{lineno}: {field} must be a non-empty string")
            if obj["status"] not in STATUSES:
                raise ValueError(f"{path}:{lineno}: status must be one of {STATUSES}")
            rows[art_id] = tuple(obj[f] for f in FIELDS)
    return [rows[k] for k in sorted(rows)]


def build(out_path: str, rows: list[tuple]) -> None:
    """Write ``rows`` into a fresh database at ``out_path``, atomically."""
    folder = os.path.dirname(os.path.abspath(out_path))
    os.makedirs(folder, exist_ok=True)
    tmp = os.path.join(folder, f".{os.path.basename(out_path)}.{os.getpid()}.tmp")
    if os.path.exists(tmp):
        os.unlink(tmp)
    try:
        conn = sqlite3.connect(tmp)
        try:
            conn.execute(SCHEMA)
            conn.executemany(
                "INSERT INTO articles (id, title, body, category, status) VALUES (?, ?, ?, ?, ?)",
                rows,
            )
            conn.commit()
        finally:
            conn.close()
        os.replace(tmp, out_path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def main(argv: list[str]) -> int:
    if len(argv) > 1 or (argv and argv[0] in ("-h", "--help")):
        print(__doc__.strip(), file=sys.stderr if len(argv) > 1 else sys.stdout)
        return 2 if len(argv) > 1 else 0
    out_path = argv[0] if argv else os.path.join(HERE, DEFAULT_OUT)
    rows = load_articles()
    build(out_path, rows)
    published = sum(1 for r in rows if r[4] == "published")
    print(f"wrote {len(rows)} articles ({published} published) to {out_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
