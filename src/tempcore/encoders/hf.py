"""transformers adapter: SigLIP, SigLIP2 (NaFlex) and CLIP checkpoints as a :class:`FrameTextEncoder`.

A checkpoint is a hub id or a local folder laid out like one. The model loads through
``AutoModel.from_pretrained(..., use_safetensors=True)`` (only safetensors weights, never pickles),
the tokenizer through ``AutoTokenizer`` and the image preprocessing through ``AutoImageProcessor``
(never one combined ``AutoProcessor``: each family has a trap there, handled here);
``trust_remote_code`` stays off unless the caller asks.

Per family (the reasons in ``docs/design/models.md``):

- SigLIP / SigLIP2: every text is lower-cased (``str.lower``) and padded to ``max_length``, so a
  text's embedding never depends on its batch; the model receives exactly what the tokenizer returns.
- SigLIP2 (NaFlex): the image processor is called with the checkpoint's saved ``patch_size`` /
  ``max_num_patches``; a ``patch_size`` that disagrees with the vision tower is a load error. Its
  config resolves to ``Siglip2Tokenizer`` whatever class the folder declares.
- CLIP: the tokenizer's EOS id must be the one the config pools at (checked at load time).

Text limit: ``max_length`` = the text tower's ``max_position_embeddings`` (64 for SigLIP / SigLIP2,
77 for CLIP), or the tokenizer's ``model_max_length`` when that is smaller. Longer texts are cut by
the tokenizer (``truncation=True``) and reported in :class:`TextEncoding.truncated`.

Device: ``cuda`` when available, else ``mps``, else ``cpu``. Dtype: ``bfloat16`` on CUDA devices
that support it, else ``float16`` on CUDA / MPS, ``float32`` on CPU. Both are overridable.
Embeddings are L2-normalised in float32 whatever the compute dtype.

Loading is quiet without muting anything: the config is built from its dict with its family's
config class and handed to the model, tokenizer and image processor (no spurious vocabulary
warnings); ``progress=False`` (``--no-progress``) turns off transformers' "Loading weights" bars for
the load, and :func:`progress_bars` does the same around any block (e.g.
:func:`tempcore.encoders.load_encoder`).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tempcore.encoders.base import (
    EncoderError,
    EncoderLoadError,
    TextEncoding,
    UnsupportedEncoderError,
    check_frames,
)

FAMILIES = ("siglip", "siglip2", "clip")
"""``model_type`` values this adapter supports."""

_DTYPES = {
    "float32": "float32",
    "fp32": "float32",
    "float": "float32",
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
    "float16": "float16",
    "fp16": "float16",
    "half": "float16",
}
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_HASH_CHUNK = 8 << 20


@dataclass
class EncoderStats:
    """Work an encoder instance has done (for tests and run summaries); :meth:`add` counts from
    any thread (videos are scored several at once)."""

    images: int = 0
    image_batches: int = 0
    texts: int = 0
    text_batches: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, *, images: int = 0, image_batches: int = 0, texts: int = 0, text_batches: int = 0) -> None:
        with self._lock:
            self.images += images
            self.image_batches += image_batches
            self.texts += texts
            self.text_batches += text_batches


@contextmanager
def progress_bars(enabled: bool) -> Iterator[None]:
    """Within the block, transformers' progress bars ("Loading weights") are on only if ``enabled``;
    the previous setting is restored afterwards. ``enabled=True`` leaves the setting as it is."""
    if enabled:
        yield
        return
    from transformers.utils import logging as hf_logging

    was = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call, unused-ignore]  # transformers: unannotated
    try:
        yield
    finally:
        if was:
            hf_logging.enable_progress_bar()  # type: ignore[no-untyped-call, unused-ignore]  # transformers: unannotated


def resolve_device(device: str | None = None) -> Any:
    """``None`` / ``"auto"``: cuda, else mps, else cpu. Any torch device string is accepted."""
    import torch

    if device is None or device == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        mps = getattr(torch.backends, "mps", None)
        if mps is not None and mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    try:
        return torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise EncoderLoadError(f"invalid device {device!r}: {exc}") from exc


def resolve_dtype(dtype: str | Any | None, device: Any) -> Any:
    """``None`` / ``"auto"``: bf16 on CUDA when supported, else fp16 on CUDA / MPS; fp32 on CPU."""
    import torch

    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype is None or dtype == "auto":
        if device.type == "cuda":
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        if device.type == "mps":
            return torch.float16
        return torch.float32
    name = _DTYPES.get(str(dtype).lower())
    if name is None:
        raise EncoderLoadError(f"unknown dtype {dtype!r}; choose one of {sorted(set(_DTYPES))} or auto")
    return getattr(torch, name)


def _file_sha256(path: Path) -> str:
    """sha256 of a weights file. Hub-cache files are blobs named by their sha256 (the LFS oid): reused."""
    real = path.resolve()
    if path.is_symlink() and _HEX64.match(real.name):
        return real.name
    h = hashlib.sha256()
    with open(real, "rb") as f:
        while chunk := f.read(_HASH_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def weights_identity(folder: Path) -> dict[str, Any]:
    """Content identity of a checkpoint folder: sha256 of ``config.json`` and of every ``*.safetensors``."""
    files = sorted(folder.glob("*.safetensors"))
    out: dict[str, Any] = {"safetensors": {f.name: _file_sha256(f) for f in files}}
    config = folder / "config.json"
    if config.is_file():
        out["config.json"] = hashlib.sha256(config.read_bytes()).hexdigest()
    return out


def _checkpoint_folder(id_or_path: str, revision: str | None) -> Path:
    """The local folder holding the checkpoint (a hub snapshot folder for hub ids)."""
    local = Path(id_or_path).expanduser()
    if local.is_dir():
        return local
    from transformers.utils.hub import cached_file

    found = cached_file(id_or_path, "config.json", revision=revision)
    if found is None:  # not raised for a missing entry only when asked not to; kept explicit
        raise FileNotFoundError(f"{id_or_path}: no config.json")
    return Path(found).parent


def _pooled(output: Any) -> Any:
    """transformers 5 returns a model output from ``get_*_features``; 4.x returned the tensor."""
    import torch

    if isinstance(output, torch.Tensor):
        return output
    pooled = getattr(output, "pooler_output", None)
    if pooled is None:
        raise EncoderError("the model's get_*_features returned no pooled output")
    return pooled


class HFFrameTextEncoder:
    """A SigLIP / SigLIP2 / CLIP checkpoint as a :class:`~tempcore.encoders.base.FrameTextEncoder`.

    Use :meth:`from_pretrained` (or :func:`tempcore.encoders.load_encoder`). ``batch_size`` frames go
    through the vision tower at once; ``text_batch_size`` texts through the text tower.
    ``stats`` counts the images and texts actually encoded.
    """

    def __init__(
        self,
        *,
        model: Any,
        tokenizer: Any,
        image_processor: Any,
        family: str,
        name: str,
        device: Any,
        dtype: Any,
        max_length: int,
        fingerprint: str,
        batch_size: int = 32,
        text_batch_size: int = 256,
        image_kwargs: dict[str, Any] | None = None,
    ) -> None:
        if batch_size <= 0 or text_batch_size <= 0:
            raise ValueError("batch sizes must be positive")
        self.model = model
        self.tokenizer = tokenizer
        self.image_processor = image_processor
        self.family = family
        self.name = name
        self.device = device
        self.dtype = dtype
        self.max_length = int(max_length)
        self.fingerprint = fingerprint
        self.batch_size = int(batch_size)
        self.text_batch_size = int(text_batch_size)
        self.image_kwargs = dict(image_kwargs or {})
        self.padding = "longest" if family == "clip" else "max_length"
        self.lowercase = family in ("siglip", "siglip2")
        self.stats = EncoderStats()

    def __repr__(self) -> str:
        return (
            f"HFFrameTextEncoder(name={self.name!r}, family={self.family}, device={self.device}, "
            f"dtype={self.dtype}, max_length={self.max_length}, fingerprint={self.fingerprint[:12]})"
        )

    # --- loading ---------------------------------------------------------------------------

    @classmethod
    def _config(cls, source: str, family_check: Any, **common: Any) -> Any:
        """The checkpoint's config, built from its dict by the family's config class (see the module doc)."""
        from transformers import PretrainedConfig
        from transformers.models.auto.configuration_auto import CONFIG_MAPPING

        config_dict, _ = PretrainedConfig.get_config_dict(source, **common)
        family = config_dict.get("model_type")
        family_check(family)
        # what AutoConfig.from_pretrained -> from_dict does, less the log line that builds a default config
        return CONFIG_MAPPING[str(family)](**{**config_dict, "name_or_path": source})  # a FAMILIES str

    @classmethod
    def from_pretrained(
        cls,
        id_or_path: str | Path,
        *,
        device: str | None = None,
        dtype: str | Any | None = None,
        revision: str | None = None,
        trust_remote_code: bool = False,
        batch_size: int = 32,
        text_batch_size: int = 256,
        name: str | None = None,
        progress: bool = True,
    ) -> HFFrameTextEncoder:
        """Load a checkpoint (hub id or folder). Raises :class:`EncoderLoadError` naming it and the reason.

        ``progress=False`` hides transformers' weight-loading bars (see the module doc)."""
        with progress_bars(progress):
            return cls._load(id_or_path, device=device, dtype=dtype, revision=revision,
                             trust_remote_code=trust_remote_code, batch_size=batch_size,
                             text_batch_size=text_batch_size, name=name)

    @classmethod
    def _load(
        cls,
        id_or_path: str | Path,
        *,
        device: str | None,
        dtype: str | Any | None,
        revision: str | None,
        trust_remote_code: bool,
        batch_size: int,
        text_batch_size: int,
        name: str | None,
    ) -> HFFrameTextEncoder:
        try:
            from transformers import AutoImageProcessor, AutoModel, AutoTokenizer
        except ImportError as exc:  # pragma: no cover - depends on the installation
            raise EncoderLoadError(
                f"loading {id_or_path}: transformers and torch are needed (pip install 'tempcore[hf]'): {exc}"
            ) from exc

        ident = str(id_or_path)
        local = Path(ident).expanduser()
        source = str(local) if local.is_dir() else ident
        common: dict[str, Any] = {"revision": revision, "trust_remote_code": trust_remote_code}

        def supported(family: Any) -> None:
            if family not in FAMILIES:
                raise UnsupportedEncoderError(
                    f"encoder {ident}: model_type {family!r} is not supported (supported: {', '.join(FAMILIES)})"
                )

        from tempcore.models.hub import hub_problem

        problem = hub_problem(f"encoder {name or ident}", source, revision, key="encoder")
        if problem is not None:  # fail now, not after transformers' retries
            raise EncoderLoadError(problem)
        try:
            config = cls._config(source, supported, **common)
        except (OSError, ValueError, TypeError) as exc:
            raise EncoderLoadError(f"encoder {ident}: cannot read its config: {exc}") from exc
        family = config.model_type
        torch_device = resolve_device(device)
        torch_dtype = resolve_dtype(dtype, torch_device)
        try:
            model = AutoModel.from_pretrained(source, config=config, use_safetensors=True, dtype=torch_dtype,
                                              **common)
        except (OSError, ValueError) as exc:
            raise EncoderLoadError(
                f"encoder {ident}: cannot load safetensors weights (only safetensors are loaded): {exc}"
            ) from exc
        if not (hasattr(model, "get_image_features") and hasattr(model, "get_text_features")):
            raise UnsupportedEncoderError(f"encoder {ident}: {type(model).__name__} is not a dual encoder")
        model = model.to(torch_device).eval()
        try:
            tokenizer = AutoTokenizer.from_pretrained(source, config=config, **common)
            image_processor = AutoImageProcessor.from_pretrained(  # type: ignore[no-untyped-call, unused-ignore]  # transformers
                source, config=config, **common
            )
        except (OSError, ValueError, ImportError) as exc:
            raise EncoderLoadError(
                f"encoder {ident}: cannot load its tokenizer / image processor: {exc}"
            ) from exc

        text_config = config.text_config
        max_length = int(text_config.max_position_embeddings)
        tok_max = getattr(tokenizer, "model_max_length", None)
        if isinstance(tok_max, int) and 0 < tok_max < max_length:
            max_length = tok_max

        image_kwargs: dict[str, Any] = {}
        if family == "siglip2":
            patch = getattr(image_processor, "patch_size", None)
            max_patches = getattr(image_processor, "max_num_patches", None)
            if patch is None or max_patches is None:
                raise EncoderLoadError(
                    f"encoder {ident}: the SigLIP2 image processor has no patch_size / max_num_patches"
                )
            if int(patch) != int(config.vision_config.patch_size):
                raise EncoderLoadError(
                    f"encoder {ident}: image processor patch_size {patch} disagrees with the vision "
                    f"tower's patch_size {config.vision_config.patch_size}"
                )
            image_kwargs = {"patch_size": int(patch), "max_num_patches": int(max_patches)}
        if family == "clip":
            eos = getattr(text_config, "eos_token_id", None)
            # eos_token_id == 2 is the legacy config: CLIP then pools at the highest token id (the EOT).
            if eos != 2 and tokenizer.eos_token_id != eos:
                raise EncoderLoadError(
                    f"encoder {ident}: the tokenizer's EOS id {tokenizer.eos_token_id} is not the id "
                    f"{eos} the CLIP text tower pools at; every text would be pooled at a wrong position"
                )

        try:
            folder = _checkpoint_folder(source, revision)
            weights = weights_identity(folder)
        except OSError as exc:
            raise EncoderLoadError(f"encoder {ident}: cannot locate its weight files: {exc}") from exc
        fingerprint_doc = {
            "family": family,
            "weights": weights,
            "revision": getattr(config, "_commit_hash", None) or revision,
            "image_processor": {"class": type(image_processor).__name__, "config": image_processor.to_dict()},
            "image_kwargs": image_kwargs,
            "dtype": str(torch_dtype).removeprefix("torch."),
        }
        fingerprint = hashlib.sha256(
            json.dumps(fingerprint_doc, sort_keys=True, default=str).encode()
        ).hexdigest()
        return cls(
            model=model,
            tokenizer=tokenizer,
            image_processor=image_processor,
            family=family,
            name=name or ident,
            device=torch_device,
            dtype=torch_dtype,
            max_length=max_length,
            fingerprint=fingerprint,
            batch_size=batch_size,
            text_batch_size=text_batch_size,
            image_kwargs=image_kwargs,
        )

    # --- images ----------------------------------------------------------------------------

    @property
    def dim(self) -> int:
        """Embedding dimension."""
        config = self.model.config
        if self.family == "clip":
            return int(config.projection_dim)
        return int(config.vision_config.hidden_size)

    def prepare_images(self, frames: np.ndarray) -> Any:
        """CPU preprocessing of a frame batch with the checkpoint's own image processor."""
        frames = check_frames(frames, self.name)
        if len(frames) == 0:
            return None
        return self.image_processor(images=list(frames), return_tensors="pt", **self.image_kwargs)

    def encode_prepared(self, prepared: Any) -> np.ndarray:
        """Vision tower on a prepared batch -> (N, D) float32, rows L2-normalised."""
        import torch

        if prepared is None:
            return np.zeros((0, self.dim), dtype=np.float32)
        tensors = {k: v for k, v in prepared.items() if isinstance(v, torch.Tensor)}
        n = next(iter(tensors.values())).shape[0]
        out = []
        for lo in range(0, n, self.batch_size):
            chunk = {
                k: v[lo : lo + self.batch_size].to(
                    self.device, dtype=self.dtype if v.is_floating_point() else None
                )
                for k, v in tensors.items()
            }
            with torch.inference_mode():
                feats = _pooled(self.model.get_image_features(**chunk))
            out.append(self._normalise(feats))
            self.stats.add(image_batches=1)
        self.stats.add(images=n)
        return np.concatenate(out, axis=0)

    def encode_images(self, frames: np.ndarray) -> np.ndarray:
        """(N, H, W, 3) uint8 RGB frames -> (N, D) float32, rows L2-normalised; batched internally."""
        frames = check_frames(frames, self.name)
        if len(frames) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = [
            self.encode_prepared(self.prepare_images(frames[lo : lo + self.batch_size]))
            for lo in range(0, len(frames), self.batch_size)
        ]
        return np.concatenate(parts, axis=0)

    # --- texts -----------------------------------------------------------------------------

    def _texts(self, texts: Sequence[str]) -> list[str]:
        out = list(texts)
        for i, t in enumerate(out):
            if not isinstance(t, str):
                raise EncoderError(f"encoder {self.name}: text {i} is {type(t).__name__}, not str")
        return [t.lower() for t in out] if self.lowercase else out

    def token_counts(self, texts: Sequence[str]) -> np.ndarray:
        """Tokens of each text without truncation, special tokens included."""
        texts = self._texts(texts)
        ids = self.tokenizer(list(texts), add_special_tokens=True, truncation=False, verbose=False)[
            "input_ids"
        ]
        return np.array([len(x) for x in ids], dtype=np.int64)

    def encode_texts(self, texts: Sequence[str]) -> TextEncoding:
        """Texts -> :class:`TextEncoding`; texts over ``max_length`` tokens are truncated and flagged."""
        import torch

        texts = self._texts(texts)
        if not texts:
            empty = np.zeros(0, dtype=np.int64)
            return TextEncoding(
                np.zeros((0, self.dim), np.float32), empty.astype(bool), empty, self.max_length
            )
        counts = self.token_counts(texts)
        out = []
        for lo in range(0, len(texts), self.text_batch_size):
            batch = self.tokenizer(
                texts[lo : lo + self.text_batch_size],
                padding=self.padding,
                truncation=True,
                max_length=self.max_length,
                return_tensors="pt",
            )
            # Exactly what the tokenizer returns for the model (as ``model(**processor(text=...))``).
            inputs = {k: batch[k].to(self.device) for k in ("input_ids", "attention_mask") if k in batch}
            with torch.inference_mode():
                feats = _pooled(self.model.get_text_features(**inputs))
            out.append(self._normalise(feats))
            self.stats.add(text_batches=1)
        self.stats.add(texts=len(texts))
        return TextEncoding(
            embeddings=np.concatenate(out, axis=0),
            truncated=counts > self.max_length,
            token_counts=counts,
            max_length=self.max_length,
        )

    # --- helpers ---------------------------------------------------------------------------

    def _normalise(self, feats: Any) -> np.ndarray:
        import torch

        feats = feats.float()
        norms = torch.linalg.vector_norm(feats, dim=-1, keepdim=True)
        if not bool(torch.all(torch.isfinite(norms))) or bool(torch.any(norms == 0)):
            raise EncoderError(
                f"encoder {self.name}: non-finite or zero embedding (dtype {self.dtype}); try --dtype float32"
            )
        unit: np.ndarray = (feats / norms).cpu().numpy().astype(np.float32, copy=False)
        return unit


__all__ = ["FAMILIES", "EncoderStats", "HFFrameTextEncoder", "resolve_device", "resolve_dtype"]
