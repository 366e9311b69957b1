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

import threading
from typing import TYPE_CHECKING, Iterable

from ptah.adapters.embedders.base import EmbedderKind
from ptah.core.errors import PluginError, PtahError, UnknownModelKind
from ptah.core.registry import Registry

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

    from ptah.core.spec import GenerationSettings

GROUP = "ptah.embedders"
_PTAH = "ptah"


class EmbedderRegistry:
    """Embedder kinds by name, one of them the default; ptah's and the installed plugins' loaded at first lookup.

    ``discover=False`` gives an empty registry that holds only what is
    registered on it (tests).
    """

    def __init__(self, *, discover: bool = True):
        self._kinds: Registry[EmbedderKind] = Registry("embedder kind")
        self._origins: dict[str, str] = {}
        self._default: str | None = None
        self._discovered = not discover
        self._complete = not discover  # every kind registered: lookups need not wait
        self._discovering = threading.RLock()
        self._origin: str | None = None  # who is registering now, while discovery runs
        self._failure: PluginError | None = None  # a broken plugin fails every lookup, not just the first

    def register(self, kind: EmbedderKind, *, default: bool = False) -> None:
        """Add ``kind``; ``default`` makes it handle what no other kind claims (one default at most)."""
        origin = self._origin or f"the module {type(kind).__module__}"
        if isinstance(kind, type) or not isinstance(kind, EmbedderKind):
            raise PluginError(f"{origin} registered {kind!r}, which is not an embedder kind: register an object "
                              "with name, claims(), identity_parts(), open() and versions()")
        name = kind.name
        if not isinstance(name, str) or not name.strip():
            raise PluginError(f"{origin} registered an embedder kind whose name is {name!r}; name it with some text")
        if name in self._kinds:
            raise PluginError(f'{origin} registered the embedder kind "{name}", which {self._origins[name]} '
                              "already registered; uninstall one of them")
        if default and self._default is not None:
            raise PluginError(f'{origin} registered "{name}" as the default embedder kind; '
                              f'"{self._default}" already is')
        self._kinds.register(name, kind)
        self._origins[name] = origin
        if default:
            self._default = name

    def names(self) -> list[str]:
        """The registered kinds' names, in the order registered."""
        self._discover()
        return list(self._kinds.names())

    def origin(self, name: str) -> str:
        """Who registered the kind ``name`` (``ptah``, or the plugin's entry point and distribution)."""
        self._discover()
        return self._origins[name]

    def kind_for(self, settings: GenerationSettings) -> EmbedderKind:
        """The one kind that handles ``settings.model`` (see module docs for the rule)."""
        self._discover()
        others = [kind for kind in self._kinds if kind.name != self._default]
        claiming = [kind for kind in others if self._claims(kind, settings)]
        if len(claiming) > 1:
            listed = "; ".join(f'"{kind.name}" ({self._origins[kind.name]})' for kind in claiming)
            raise PluginError(f'model "{settings.model}" is claimed by more than one embedder kind: {listed}; '
                              "uninstall all but one")
        if claiming:
            return claiming[0]
        default = self._kinds.get(self._default) if self._default is not None else None
        if default is not None and self._claims(default, settings):
            return default
        listed = ", ".join(name + (" (the default)" if name == self._default else "") for name in self._kinds.names())
        raise UnknownModelKind(
            f'generation "{settings.name}": no embedder handles model "{settings.model}"; the kinds registered '
            f"are {listed or 'none'}. Name a model one of them handles, or install the package that adds its kind."
        )

    def library_versions(self, settings: GenerationSettings) -> dict[str, str | None]:
        """ptah's version and those of the libraries the settings' kind depends on, recorded at build.

        ptah's is its own ``__version__``: the distribution is named ptah-eval, and a checkout runs uninstalled."""
        from ptah import __version__

        return {_PTAH: __version__, **self._versions(self.kind_for(settings))}

    def versions_of(self, generations: Iterable[GenerationSettings]) -> dict[str, str | None]:
        """The libraries every kind these generations use depends on (a report's environment)."""
        versions: dict[str, str | None] = {}
        for name in dict.fromkeys(self.kind_for(settings).name for settings in generations):
            versions.update(self._versions(self._kinds.get(name)))
        return versions

    def _versions(self, kind: EmbedderKind) -> dict[str, str | None]:
        versions = kind.versions()
        if not isinstance(versions, dict) or not all(
            isinstance(name, str) and isinstance(version, (str, type(None))) for name, version in versions.items()
        ):
            raise PluginError(f'the embedder kind "{kind.name}" ({self._origins[kind.name]}) gave versions '
                              f"{versions!r}; versions() returns {{library name: version or None}}")
        return versions

    def _claims(self, kind: EmbedderKind, settings: GenerationSettings) -> bool:
        try:
            return bool(kind.claims(settings))
        except PtahError:
            raise
        except Exception as exc:  # a plugin's bug, told as the plugin's, not as ptah's
            raise PluginError(f'the embedder kind "{kind.name}" ({self._origins[kind.name]}) failed to say whether '
                              f'it handles model "{settings.model}": {describe_exception(exc)}') from None

    def _discover(self) -> None:
        if self._complete:
            return
        with self._discovering:  # other threads wait for the kinds; the discovering thread may look again
            self._discover_once()

    def _discover_once(self) -> None:
        if self._failure is not None:
            raise self._failure
        if self._discovered:
            return
        self._discovered = True
        from ptah.adapters.embedders.deterministic import DeterministicKind
        from ptah.adapters.embedders.onnx_backend import OnnxKind
        from ptah.adapters.embedders.openai_compatible import OpenAICompatibleKind
        from ptah.adapters.embedders.sentence_transformers import SentenceTransformersKind

        self._origin = _PTAH
        try:
            self.register(DeterministicKind())
            self.register(OpenAICompatibleKind())
            self.register(OnnxKind())
            self.register(SentenceTransformersKind(), default=True)
            for entry in _entry_points():
                self._origin = _describe_entry(entry)
                self._load(entry)
        except PluginError as exc:
            self._failure = exc
            raise
        finally:
            self._origin = None
        self._complete = True

    def _load(self, entry: EntryPoint) -> None:
        load_plugin(entry, self, self._origin or _describe_entry(entry), EmbedderKind, "an embedder kind")


def describe_exception(exc: BaseException) -> str:
    """``Type: message`` on one line, at most 300 characters."""
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return text if len(text) <= 300 else text[:297] + "..."


def load_plugin(entry: EntryPoint, registry, origin: str, kind: type, what: str) -> None:
    """Load one entry point of a plugin group into ``registry``: an object that is a ``kind`` is registered, a
    function is called with the registry; :class:`PluginError` (exit 3) naming ``origin`` and the distribution to
    reinstall or uninstall otherwise (the embedders' and the rerankers' registries share it)."""
    remedy = f"; reinstall or uninstall {_distribution(entry)}"
    try:
        target = entry.load()
    except Exception as exc:  # ImportError, SyntaxError, AttributeError, whatever its module raises
        raise PluginError(f"{origin} cannot be loaded: {describe_exception(exc)}{remedy}") from None
    if isinstance(target, kind) and not isinstance(target, type):
        registry.register(target)
        return
    if not callable(target):
        raise PluginError(f"{origin} names {target!r}; name {what} or a function register(registry)")
    try:
        target(registry)
    except PtahError:
        raise
    except Exception as exc:
        raise PluginError(f"{origin} failed while registering: {describe_exception(exc)}{remedy}") from None


def entry_points(group: str) -> list[EntryPoint]:
    """The installed entry points of ``group``, in a fixed order (name, then value)."""
    from importlib import metadata

    return sorted(metadata.entry_points(group=group), key=lambda entry: (entry.name, entry.value))


def _entry_points() -> list[EntryPoint]:
    return entry_points(GROUP)


def _distribution(entry: EntryPoint) -> str:
    dist = getattr(entry, "dist", None)
    return f"the distribution {dist.name}" if dist is not None else "the package that declares it"


def _describe_entry(entry: EntryPoint) -> str:
    dist = getattr(entry, "dist", None)
    where = f" of the distribution {dist.name} {dist.version}" if dist is not None else ""
    return f'the {GROUP} entry point "{entry.name} = {entry.value}"{where}'


REGISTRY = EmbedderRegistry()


def register(kind: EmbedderKind, *, default: bool = False) -> None:
    """Add ``kind`` to the registry ptah uses (see :meth:`EmbedderRegistry.register`)."""
    REGISTRY.register(kind, default=default)


def kind_for(settings: GenerationSettings) -> EmbedderKind:
    """The kind that handles ``settings.model`` in the registry ptah uses."""
    return REGISTRY.kind_for(settings)
