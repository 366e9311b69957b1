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
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ptah.adapters.embedders.base import EmbedderKind
from ptah.adapters.kinds import KindRegistry
from ptah.core import plugins
from ptah.core.errors import PluginError, PtahError, UnknownModelKind
from ptah.core.plugins import describe_exception

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
