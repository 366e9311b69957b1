"""A sentence-transformers model run by onnxruntime (``backend: onnx``), its weights optionally
int8.

The kind ``sentence-transformers-onnx`` claims a local model whose generation says ``backend:
onnx``; its identity parts are the model folder's digest, :data:`EXPORT_FORMAT` and ``quantize``
(``null`` or ``int8``), so torch, ONNX and quantised are three generations. The graph is exported
here, offline, from the loaded model (the whole forward: transformer, pooling and any Normalize,
batch and sequence axes dynamic); ``int8`` is onnxruntime's dynamic quantisation per channel (per
tensor lost far more of the vectors' direction on MiniLM). Texts use the model's tokenizer and the
generation's ``max_seq_length``. sentence-transformers' own ONNX backend needs optimum, which pins
an older transformers, so it is not used.

The export is kept under ``.ptah/onnx/``, named by a digest of the identity parts, made in that
folder and renamed over the name (a link or device there is replaced, never written through). Its
SHA-256 is recorded in the user's cache folder (``onnx-exports.json``), and a cached export is run
only when it is a regular file of that SHA-256, so one swapped or committed under ``.ptah/`` is
exported again. An unwritable folder, or an ``onnx`` folder that is a link, means an export in a
temporary folder each time, never a failure.

Once the graph is exported or found, only the model's tokenizer is kept (its weights dropped), so
the session's weights are the only copy; the session runs on the CPUs this process may use, its
threads never spinning (:func:`session_options`).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ptah.adapters.embedders.base import installed_versions, l2_normalize
from ptah.adapters.embedders.registry import canonical_json
from ptah.adapters.embedders.resolve import cached_files, default_cache_dir, file_sha256
from ptah.adapters.embedders.sentence_transformers import (
    LIBRARIES,
    SentenceTransformerEmbedder,
    SentenceTransformersKind,
)
from ptah.adapters.files import replacing_entry, write_text_atomically
from ptah.core.errors import InputError, ModelUnavailable, OutputRefused, OutputUnwritable
from ptah.core.exact import usable_cpus

if TYPE_CHECKING:
    from ptah.core.spec import GenerationSettings

KIND = "sentence-transformers-onnx"
EXPORT_FORMAT = "ptah-onnx@1"  # the wrapper and options below; a change to either is a new format
CACHE_FOLDER = Path(".ptah") / "onnx"  # under the specification's folder
INSTALL = "pip install 'ptah-eval[onnx]' (or pip install onnxruntime onnx)"
OUTPUT = "sentence_embedding"
OPSET = 17
EXPORTS_FILE = (
    "onnx-exports.json"  # in the user's cache folder: each export's SHA-256 by its real path
)
EXPORTS_FORMAT = "ptah-onnx-exports@1"
MAX_EXPORTS_BYTES = 4 * 1024 * 1024  # a larger record is ignored: the exports are made again


class OnnxKind(SentenceTransformersKind):
    """A local model with ``backend: onnx``; see the module docs."""

    name = KIND

    def claims(self, settings: GenerationSettings) -> bool:
        return settings.backend == "onnx" and super().claims(settings)

    def identity_parts(
        self, settings: GenerationSettings, root: str, *, cache_dir: Path | None = None
    ) -> dict:
        return {
            **super().identity_parts(settings, root, cache_dir=cache_dir),
            "export": EXPORT_FORMAT,
            "quantize": settings.quantize,
        }

    def open(self, settings: GenerationSettings, root: str) -> OnnxEmbedder:
        try:
            import onnx  # noqa: F401 -- the exporter and the quantiser need it
            import onnxruntime  # noqa: F401
        except ImportError:
            raise InputError(
                f'generation "{settings.name}" has backend: onnx, which needs onnxruntime and onnx; '
                f"install them with {INSTALL}"
            ) from None
        return OnnxEmbedder(settings, root, self.identity_parts(settings, root))

    def versions(self) -> dict[str, str | None]:
        return installed_versions(*LIBRARIES, "onnxruntime", "onnx")


class OnnxEmbedder(SentenceTransformerEmbedder):
    """The model loaded by sentence-transformers, to export once; then only its tokenizer is
    kept (``tokenizer``, the model's input module with its weights dropped) and onnxruntime
    embeds."""

    def __init__(self, settings: GenerationSettings, root: str, parts: dict):
        super().__init__(settings, root)
        # the input module: the tokenizer, and the model config its preprocess reads
        self.tokenizer: Any = self.model[0]
        self.inputs = sorted(self._features(["ptah"]))
        folder = Path(root) / CACHE_FOLDER
        try:
            if (
                folder.is_symlink()
            ):  # a link committed or cached as .ptah/onnx: ptah writes nothing through it
                raise OutputRefused(f"{folder} is a link")
            self.session = self._session(
                self._exported(folder, parts, _Exports(default_cache_dir()))
            )
        except (
            OSError,
            OutputUnwritable,
            OutputRefused,
        ):  # export where we may, each time it is opened
            with tempfile.TemporaryDirectory(prefix="ptah-onnx-") as scratch:
                self.session = self._session(self._exported(Path(scratch), parts, None))

    def _session(self, path: Path):
        """onnxruntime's session of ``path``, opened once the torch weights are dropped: the
        session holds its own copy, and a second would only cost memory."""
        import onnxruntime

        del self.model
        self.tokenizer.to("meta")  # the weights' storage freed; the config and tokenizer kept
        try:
            return onnxruntime.InferenceSession(
                str(path), session_options(), providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime's load errors share no base class
            raise ModelUnavailable(
                f"the ONNX model {path} could not be loaded ({' '.join(str(exc).split())[:200]}); "
                "delete it and ptah exports it again"
            ) from None

    def _features(self, texts: list[str]) -> dict:
        """The model's tokenizer's tensors for ``texts`` (``preprocess`` since sentence-transformers
        6)."""
        tokenize = getattr(self.tokenizer, "preprocess", None) or self.tokenizer.tokenize
        return {name: value for name, value in tokenize(texts).items() if hasattr(value, "numpy")}

    def _exported(self, folder: Path, parts: dict, exports: _Exports | None) -> Path:
        """The file the model with ``parts`` is exported to under ``folder``, made now unless ptah
        made it there before and ``exports`` vouches for it (None: a fresh folder of this run); an
        int8 model is quantised from the fp32 one (made first, and kept too)."""
        path = folder / (hashlib.sha256(canonical_json(parts)).hexdigest()[:32] + ".onnx")
        if exports is not None and exports.vouches_for(path):
            return path
        folder.mkdir(parents=True, exist_ok=True)
        if parts["quantize"] is None:
            with replacing_entry(path) as part:
                self._export(part)
        else:
            from onnxruntime.quantization import QuantType, quantize_dynamic

            fp32 = self._exported(folder, parts | {"quantize": None}, exports)
            with replacing_entry(path) as part, _quiet():
                quantize_dynamic(str(fp32), part, weight_type=QuantType.QInt8, per_channel=True)
        if exports is not None:
            exports.made(path)
        return path

    def _export(self, path: str) -> None:
        import torch

        names = self.inputs
        model = self.model

        class Forward(
            torch.nn.Module
        ):  # the whole SentenceTransformer: tensors in, sentence embeddings out
            def __init__(self) -> None:
                super().__init__()
                self.model = model

            def forward(self, *tensors):
                return self.model(dict(zip(names, tensors)))[OUTPUT]

        sample = self._features(["ptah exports this model", "once"])
        axes = {name: {0: "batch", 1: "sequence"} for name in names} | {OUTPUT: {0: "batch"}}
        with torch.no_grad(), _quiet():
            torch.onnx.export(
                Forward().eval(),
                tuple(sample[name] for name in names),
                path,
                dynamo=False,
                input_names=names,
                output_names=[OUTPUT],
                dynamic_axes=axes,
                opset_version=OPSET,
            )

    def _encode(self, texts: Sequence[str], prefix: str) -> np.ndarray:
        vectors = np.zeros((len(texts), self.dimension), dtype=np.float32)
        order = sorted(
            range(len(texts)), key=lambda i: -len(texts[i])
        )  # as the library does: little padding
        size = self.settings.batch_size
        for start in range(0, len(order), size):
            chunk = order[start : start + size]
            features = self._features([prefix + texts[i] for i in chunk])
            vectors[chunk] = self.session.run(
                [OUTPUT], {name: features[name].numpy() for name in self.inputs}
            )[0]
        return l2_normalize(vectors) if self.settings.normalize else vectors


def session_options():
    """onnxruntime's options for a build (each measured in ``benchmarks/RESULTS.md``): one
    intra-op thread for each CPU this process may use, none of them spinning between operators (a
    spinning thread burns CPU seconds a shared runner's other work needs, and bought no wall time);
    the memory arena kept (without it the same rows cost far more CPU) but no memory pattern (a
    plan kept for each batch shape: 0.5 GB more at the peak, no CPU saved)."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = usable_cpus()
    options.inter_op_num_threads = 1  # operators run one after another (the sequential mode)
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    options.enable_mem_pattern = False
    return options


class _Exports:
    """The SHA-256 of each export ptah made, by its real path, kept in the user's cache folder
    ``folder``: what a project's ``.ptah/`` holds cannot vouch for itself. An unreadable record
    vouches for nothing (the exports are made again); one that cannot be written only costs the next
    run an export."""

    def __init__(self, folder: Path):
        self.file = folder / EXPORTS_FILE
        self.entries: dict[str, str] = cached_files(self.file, EXPORTS_FORMAT, MAX_EXPORTS_BYTES)

    def vouches_for(self, path: Path) -> bool:
        """Whether ``path`` is a regular file (no link followed) whose SHA-256 is the one recorded
        for it."""
        try:
            if not stat.S_ISREG(os.lstat(path).st_mode):
                return False
            recorded = self.entries.get(os.path.realpath(path))
            return isinstance(recorded, str) and file_sha256(path) == recorded
        except OSError:
            return False

    def made(self, path: Path) -> None:
        """Record ``path``'s SHA-256, over the record as it is now on disk: another process may
        have recorded its own exports since this one read it, and they are kept."""
        now = cached_files(self.file, EXPORTS_FORMAT, MAX_EXPORTS_BYTES)
        self.entries = now | {os.path.realpath(path): file_sha256(path)}
        kept = {name: digest for name, digest in self.entries.items() if os.path.exists(name)}
        try:
            write_text_atomically(
                self.file, json.dumps({"format": EXPORTS_FORMAT, "files": kept}, sort_keys=True)
            )
        except (OutputRefused, OutputUnwritable):
            pass


@contextmanager
def _quiet() -> Iterator[None]:
    """The exporter's tracer warnings and the quantiser's advice (logged to the root logger) drawn
    nowhere: ptah draws its own progress, and neither says anything a user of ptah could act on."""
    import logging  # only where a graph is exported or quantised

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        logging.disable(logging.WARNING)
        try:
            yield
        finally:
            logging.disable(logging.NOTSET)
