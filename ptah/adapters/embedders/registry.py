"""Which embedder kind handles a generation's model, and the generation's identity.

ptah registers ``ptah/deterministic``, ``openai`` (``provider: openai``: an embedding service),
``sentence-transformers-onnx`` (``backend: onnx``) and the default, ``sentence-transformers``: any
model no other kind claims, except names under ``ptah/``. Local kinds never claim a generation
that names a provider. A package adds kinds through the entry-point group ``ptah.embedders``
(an :class:`~ptah.adapters.embedders.base.EmbedderKind`, or ``register(registry)``), loaded once
at the first lookup, after ptah's own. Of the kinds other than the default that claim a model
exactly one wins; two are a :class:`PluginError` (exit 3); none leaves the default, else
:class:`UnknownModelKind` (exit 2). A plugin that cannot be imported, raises while registering,
registers a non-kind or reuses a name is a :class:`PluginError` naming its distribution and entry
point.

A generation's identity is ``sha256:`` + the hex SHA-256 of its canonical JSON (keys sorted,
separators ``,`` and ``:``, non-ASCII as itself, UTF-8)::

    {"document_prefix": …, "format": "ptah-generation@1", "max_seq_length": N or null,
     "model": MODEL, "normalize": true|false, "query_prefix": …, "text_template": TEMPLATE}

MODEL is ``{"kind": NAME, ...}`` plus the kind's ``identity_parts`` (``sentence-transformers``: the
model folder's ``digest``, :func:`~ptah.adapters.embedders.resolve.model_digest`;
``ptah/deterministic``: ``algorithm`` and ``dimension``); TEMPLATE is the effective template. The
display name, the model's name, ``batch_size``, the rows chosen and library versions stay out. An
external generation (``vectors: {column: …}``) is ``{"format": "ptah-external@1",
"max_seq_length", "model", "normalize", "query_prefix", "vectors": {"column", "table"}}``: the
database URL stays out (it may hold a password), and its query cache is never used for another
model or prefix.
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
