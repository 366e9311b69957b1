"""The extension surface: what an add-on may use of ptah beyond the public API (``import ptah``).

An add-on is a distribution that plugs into the door (:mod:`ptah.core.plugins`: its module in the
entry point group ``ptah``, its functions named after the hooks). :data:`SURFACE` names each module
an add-on may import and the names it may import from it; :data:`MEMBERS` the members of a class
that its name alone does not make public (a store's own connection, a source's query parts), which
an add-on of the same storage uses. Each name keeps its meaning across the releases of one minor
version (0.1.x). ``docs/extending.md`` writes the surface down; ptah's tests check that every name
exists, and an add-on's tests check with :func:`outside_the_surface` that it imports nothing else
of ptah.
"""

from __future__ import annotations

import ast
from pathlib import Path

SURFACE: dict[str, tuple[str, ...]] = {
    "ptah.adapters.corpus_yaml": ("parse_corpus",),
    "ptah.adapters.embedders": ("open_embedder",),
    "ptah.adapters.embedders.base": ("usage_of",),
    "ptah.adapters.embedders.http_client": ("Connection", "Policy", "ServiceClient"),
    "ptah.adapters.files": ("read_bounded", "write_pieces_atomically"),
    "ptah.adapters.postgres": ("secrets_of",),
    "ptah.adapters.sources.base": ("source_kind",),
    "ptah.adapters.sources.postgres": ("PostgresSource",),
    "ptah.adapters.sources.rows": ("key_components",),
    "ptah.adapters.spec_yaml": ("refuse_store_in_source",),
    "ptah.adapters.spec_fields": ("base_url_problem",),
    "ptah.adapters.stores.pgvector": ("PgvectorStore",),
    "ptah.adapters.stores.pgvector_lock": ("advisory_lock",),
    "ptah.adapters.stores.pgvector_schema": ("generation_lock_key",),
    "ptah.adapters.stores.records": ("now",),
    "ptah.adapters.stores.registry": ("open_store", "store_kind"),
    "ptah.adapters.stores.sqlite_lock": ("exclusive_lock",),
    "ptah.cli.display": ("SPEC_HELP",),
    "ptah.core.corpus": ("COMPOSITE_KEY_SEPARATOR",),
    "ptah.core.errors": (
        "CapabilityUnavailable",
        "CredentialMissing",
        "ReportError",
        "SourceUnavailable",
        "StoreDamaged",
    ),
    "ptah.core.provenance": ("text_digest",),
    "ptah.core.measures": ("registry_order",),
    "ptah.core.registry": ("Option", "declared"),
    "ptah.core.report": ("make_run", "measure_case", "ranking_depth"),
    "ptah.core.parts": ("read_only",),
    "ptah.core.spec": ("redact_url",),
    "ptah.core.visible": ("abbreviated", "visible"),
    "ptah.render.html": ("render_html",),
    "ptah.render.layout": ("number",),
    "ptah.render.timeaxis": ("time_axis",),
    "ptah.services.build": ("embed_batch", "library_versions", "register_generation"),
    "ptah.services.channels": ("RunPlan", "Sides", "plan_runs"),
    "ptah.services.engines": ("Engine", "EngineOption"),
    "ptah.services.project": ("Opened", "probe_for_build", "refuse_build", "stored_probe"),
    "ptah.services.verify": ("in_blocks", "lacking"),
}

MEMBERS: dict[str, tuple[str, ...]] = {
    # a store's own connection and what turns its failures into ptah's errors
    "ptah.adapters.stores.sqlite.SqliteStore": ("_connection", "_guarded"),
    "ptah.adapters.stores.pgvector.PgvectorStore": ("_connection", "_guarded", "_table"),
    "ptah.adapters.stores.pgvector_snapshot.PgvectorSnapshot": ("_connection",),
    # the parts of a PostgreSQL source's query, for a subclass that narrows it
    "ptah.adapters.sources.postgres.PostgresSource": (
        "_execute",
        "_key_columns",
        "_key_expressions",
        "_keys",
        "_kinds",
        "_order",
        "_table",
        "_where",
    ),
}


def outside_the_surface(path: Path) -> list[str]:
    """``FILE: what`` for each import of ptah, and each private member read on an object not made
    in ``path``, that the surface does not hold."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    own = {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
    }
    own |= {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
    own |= {  # a dataclass's fields
        node.target.id
        for node in ast.walk(tree)
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
    }
    import ptah

    private = {member for members in MEMBERS.values() for member in members}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "ptah":
            allowed = ptah.__all__ if node.module == "ptah" else SURFACE.get(node.module, ())
            found += [f"{node.module}.{a.name}" for a in node.names if a.name not in allowed]
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith("ptah.")]
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "ptah"
            and node.attr not in ptah.__all__
        ):
            found.append(f"ptah.{node.attr}")
        elif (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and node.attr not in own
            and node.attr not in private
        ):
            found.append(f".{node.attr}")
    return [f"{path.name}: {what}" for what in found]
