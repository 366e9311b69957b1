"""Which embedder kind handles a generation's model: a registry that installed packages extend.

ptah registers four kinds: ``ptah/deterministic`` (the model of that name),
``openai`` (a generation with ``provider: openai``: an embedding service),
``sentence-transformers-onnx`` (a local model with ``backend: onnx``) and
``sentence-transformers``, the *default*: it handles any model no other kind
claims, except names under ``ptah/``, which are ptah's own. The local kinds
never claim a generation that names a provider. A package adds a
kind by declaring an entry point in the group ``ptah.embedders``::

    [project.entry-points."ptah.embedders"]
    toy = "toy_embedder:register"

The entry point names either an :class:`~ptah.adapters.embedders.base.EmbedderKind`
object or a function ``register(registry)`` that calls
``registry.register(kind)`` once per kind. Entry points are loaded once, at
the first lookup (so ``ptah --help`` and the corpus commands never load
them), after ptah's own kinds.

Choosing a kind for a model: the kinds other than the default that claim it;
exactly one wins, two or more are a conflict between installed packages
(:class:`PluginError`, exit 3) rather than an order nobody declared; none
leaves the default, if it claims the model; else :class:`UnknownModelKind`
(exit 2) names the registered kinds. A plugin that cannot be imported,
raises while registering, registers something that is not a kind, or reuses
a kind's name is a :class:`PluginError` naming its distribution and entry
point.

The identity of a generation: a digest of everything its vectors depend on.

Canonical form (``ptah-generation@1``): the JSON document ::

    {"document_prefix": DOCUMENT_PREFIX,
     "format": "ptah-generation@1",
     "max_seq_length": N or null,
     "model": MODEL,
     "normalize": true|false,
     "query_prefix": QUERY_PREFIX,
     "text_template": TEMPLATE}

where MODEL is ``{"kind": NAME, ...}``: the name of the embedder kind that
handles the model (:mod:`ptah.adapters.embedders.registry`) and the parts its
``identity_parts`` gives -- for ``sentence-transformers``, ``{"digest":
"sha256:…"}`` (the model folder's digest,
:func:`ptah.adapters.embedders.resolve.model_digest`, which covers weights,
configs, tokenizer and pooling); for ``ptah/deterministic``, ``{"algorithm":
"ptah-deterministic@1", "dimension": D}``. TEMPLATE is the *effective*
template (the generation's ``text`` else ``source.text``). It is serialised
with object keys sorted, separators ``,`` and ``:``, non-ASCII written as
itself, encoded as UTF-8; the identity is ``sha256:`` + its hex SHA-256.

Outside the identity: the generation's display name, the model's *name* (the
same weights found in a folder or in a package are the same model),
``batch_size``, the source's database, table, keys and filter (they choose
rows, not vectors), and library versions (recorded beside, not hashed).

An external generation (``vectors: {column: …}``: the table holds the
vectors) has the canonical form ``ptah-external@1`` instead ::

    {"format": "ptah-external@1",
     "max_seq_length": N or null,
     "model": MODEL,
     "normalize": true|false,
     "query_prefix": QUERY_PREFIX,
     "vectors": {"column": COLUMN, "table": TABLE}}

MODEL being the query embedder's parts as above. The database URL stays out
(it may hold a password); the table and column say which vectors these are,
the rest how queries are embedded against them -- so the query cache kept
under this identity is never used for another model or prefix.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ptah.adapters.embedders.base import EmbedderKind
from ptah.core import plugins
from ptah.core.errors import PluginError, PtahError, UnknownModelKind
from ptah.core.plugins import describe_exception
from ptah.core.registry import KindRegistry
from ptah.core.spec import GenerationSettings, SourceSpec

if TYPE_CHECKING:
    from ptah.core.spec import GenerationSettings


GROUP = "ptah.embedders"


class EmbedderRegistry(KindRegistry[EmbedderKind]):
    """Embedder kinds by name, one of them the default; ptah's and the installed plugins' loaded at
    first lookup.

    ``discover=False`` gives an empty registry that holds only what is
    registered on it (tests).
    """

    hook, group, what, protocol = "register_embedders", GROUP, "embedder kind", EmbedderKind
    shape = "name, claims(), identity_parts(), open() and versions()"

    def __init__(self, *, discover: bool = True):
        super().__init__(discover=discover)
        self._default: str | None = None

    def register(self, kind: EmbedderKind, *, default: bool = False) -> None:
        """Add ``kind``; ``default`` makes it handle what no other kind claims (one default at
        most)."""
        if default and self._default is not None:
            origin = plugins.origin() or f"the module {type(kind).__module__}"
            raise PluginError(
                f'{origin} registered "{getattr(kind, "name", kind)}" as the default embedder kind; '
                f'"{self._default}" already is'
            )
        super().register(kind)
        if default:
            self._default = kind.name

    def kind_for(self, settings: GenerationSettings) -> EmbedderKind:
        """The one kind that handles ``settings.model`` (see module docs for the rule)."""
        self._discover()
        others = [kind for kind in self._kinds if kind.name != self._default]
        claiming = [kind for kind in others if self._claims(kind, settings)]
        if len(claiming) > 1:
            listed = "; ".join(f'"{kind.name}" ({self._origins[kind.name]})' for kind in claiming)
            raise PluginError(
                f'model "{settings.model}" is claimed by more than one embedder kind: {listed}; '
                "uninstall all but one"
            )
        if claiming:
            return claiming[0]
        default = self._kinds.get(self._default) if self._default is not None else None
        if default is not None and self._claims(default, settings):
            return default
        listed = ", ".join(
            name + (" (the default)" if name == self._default else "")
            for name in self._kinds.names()
        )
        raise UnknownModelKind(
            f'generation "{settings.name}": no embedder handles model "{settings.model}"; the kinds registered '
            f"are {listed or 'none'}. Name a model one of them handles, or install the package that adds its kind."
        )

    def library_versions(self, settings: GenerationSettings) -> dict[str, str | None]:
        """ptah's version and those of the libraries the settings' kind depends on, recorded at
        build.

        ptah's is its own ``__version__``: the distribution is named ptah-eval, and a checkout runs
        uninstalled."""
        from ptah import __version__

        return {"ptah": __version__, **self._versions(self.kind_for(settings))}

    def versions_of(self, generations: Iterable[GenerationSettings]) -> dict[str, str | None]:
        """The libraries every kind these generations use depends on (a report's environment)."""
        versions: dict[str, str | None] = {}
        for name in dict.fromkeys(self.kind_for(settings).name for settings in generations):
            versions.update(self._versions(self._kinds.get(name)))
        return versions

    def _versions(self, kind: EmbedderKind) -> dict[str, str | None]:
        versions = kind.versions()
        if not isinstance(versions, dict) or not all(
            isinstance(name, str) and isinstance(version, (str, type(None)))
            for name, version in versions.items()
        ):
            raise PluginError(
                f'the embedder kind "{kind.name}" ({self._origins[kind.name]}) gave versions '
                f"{versions!r}; versions() returns {{library name: version or None}}"
            )
        return versions

    def _claims(self, kind: EmbedderKind, settings: GenerationSettings) -> bool:
        try:
            return bool(kind.claims(settings))
        except PtahError:
            raise
        except Exception as exc:  # a plugin's bug, told as the plugin's, not as ptah's
            raise PluginError(
                f'the embedder kind "{kind.name}" ({self._origins[kind.name]}) failed to say whether '
                f'it handles model "{settings.model}": {describe_exception(exc)}'
            ) from None


REGISTRY = EmbedderRegistry()


def register(kind: EmbedderKind, *, default: bool = False) -> None:
    """Add ``kind`` to the registry ptah uses (see :meth:`EmbedderRegistry.register`)."""
    REGISTRY.register(kind, default=default)


def kind_for(settings: GenerationSettings) -> EmbedderKind:
    """The kind that handles ``settings.model`` in the registry ptah uses."""
    return REGISTRY.kind_for(settings)


IDENTITY_FORMAT = "ptah-generation@1"
EXTERNAL_FORMAT = "ptah-external@1"


@dataclass(frozen=True)
class GenerationIdentity:
    """``identity`` (``sha256:…``) and ``parts``, the exact document it hashes."""

    identity: str
    parts: dict

    @property
    def model_digest(self) -> str | None:
        """The model folder's digest; ``None`` for the deterministic embedder."""
        return self.parts["model"].get("digest")


def canonical_json(document: dict) -> bytes:
    """The canonical serialisation the identity hashes (see module docs)."""
    text = json.dumps(
        document, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
    return text.encode("utf-8")


def generation_identity(
    settings: GenerationSettings,
    source: SourceSpec,
    root: str,
    *,
    cache_dir: str | Path | None = None,
) -> GenerationIdentity:
    """The identity of ``settings`` over ``source``; asks the model's kind what of it counts (no
    torch import).

    Raises :class:`UnknownModelKind` when no kind handles the model and
    :class:`ModelUnavailable` when the model cannot be found offline.
    """
    kind = kind_for(settings)
    parts = {
        "format": IDENTITY_FORMAT,
        "model": {"kind": kind.name, **_model_parts(kind, settings, root, cache_dir)},
        "normalize": settings.normalize,
        "max_seq_length": settings.max_seq_length,
        "query_prefix": settings.query_prefix,
    }
    if (
        settings.vectors is not None
    ):  # the table's vectors: which ones, and how queries are embedded against them
        parts |= {
            "format": EXTERNAL_FORMAT,
            "vectors": {"table": source.table, "column": settings.vectors},
        }
    else:
        parts |= {
            "document_prefix": settings.document_prefix,
            "text_template": settings.template(source),
        }
    return GenerationIdentity("sha256:" + hashlib.sha256(canonical_json(parts)).hexdigest(), parts)


def _model_parts(
    kind: EmbedderKind, settings: GenerationSettings, root: str, cache_dir: str | Path | None
) -> dict:
    parts = kind.identity_parts(
        settings, root, cache_dir=Path(cache_dir) if cache_dir is not None else None
    )
    problem = None
    if not isinstance(parts, dict) or "kind" in parts:
        problem = "a mapping without the key kind (ptah adds it)"
    else:
        try:
            canonical_json(parts)
        except (TypeError, ValueError):
            problem = "JSON values only (text, numbers that are finite, true/false, null, lists, mappings)"
    if problem is not None:
        raise PluginError(
            f'the embedder kind "{kind.name}" gave identity parts {parts!r} for model '
            f'"{settings.model}"; identity_parts() returns {problem}'
        )
    return parts
