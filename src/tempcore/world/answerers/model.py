"""A loaded zoo member (safetensors I/O) and :class:`ZooModel`, the ``zoo`` backend of the model registry.

This is the module a run imports; training code lives in :mod:`.training` and is not imported here.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from tempcore.models._batching import run_with_fallback
from tempcore.models.base import (
    METHOD_OPTION_SCORES,
    ModelConfigError,
    ModelError,
    ModelRequest,
    ModelResponse,
    ModelSpec,
    check_method,
    spec_key,
)
from tempcore.models.specs import expect_spec
from tempcore.records import LETTERS
from tempcore.registry import did_you_mean
from tempcore.world.answerers.constants import ANSWERER_DIR, FORMAT, GREY, IMAGE_SIDE, MEMBERS, ZooError

if TYPE_CHECKING:  # torch is imported where a member runs, so a driver that only checks specs stays light
    import torch

    from tempcore.world.answerers.nets import AnswererNet
    from tempcore.world.answerers.text import TextCodec


@dataclass(frozen=True)
class Answerer:
    """A member's network, text codec and configuration (what :func:`load_answerer` returns)."""

    name: str
    kind: str
    net: AnswererNet
    codec: TextCodec
    config: dict[str, Any]
    weights_sha256: str

    def scores(
        self, requests: Sequence[ModelRequest], features: Sequence[torch.Tensor] | None = None
    ) -> torch.Tensor:
        """Option scores ``(B, n)`` for requests with the same number of options and of images.

        ``features``: each request's frame-encoder features ``(K, out_dim)`` (:meth:`frame_features`);
        without them a frame member encodes the requests' frames itself.

        A request's scores do not depend on the requests scored with it, to the last bit (on the x86-64
        CPUs tested, whose kernels this was measured on; the test is what catches another): torch's CPU
        matrix products round a small batch, and the last rows of a batch whose row count is not a
        multiple of a block, otherwise than the rows of a large one (seen: four-option requests in
        batches of 1-3; two-option ones in batches of 17, 19, 21, ...), so the batch is filled with
        copies of its first request, whose scores are dropped, up to a multiple of
        :data:`_HEAD_ROW_BLOCK` requests, at least :data:`_MIN_HEAD_ROWS` (tested:
        ``test_member_scores_do_not_depend_on_the_requests_scored_with_them``)."""
        import torch

        from tempcore.world.answerers.text import _bag, question_text

        size = len(requests)
        if not size:
            raise ZooError(f"answerer {self.name!r}: no requests to score")
        fill = max(_MIN_HEAD_ROWS, -(-size // _HEAD_ROW_BLOCK) * _HEAD_ROW_BLOCK) - size
        if fill:
            requests = [*requests, *[requests[0]] * fill]
            if features is not None:
                features = [*features, *[features[0]] * fill]
        n = len(requests[0].options)
        questions = [question_text(r.prompt, n) for r in requests]
        options = [o for r in requests for o in r.options]
        stacked = None
        if self.kind != "text":
            stacked = torch.stack(list(features) if features is not None else self.frame_features(requests))
        with torch.inference_mode():
            scores: torch.Tensor = self.net(None, _bag(self.codec, questions), _bag(self.codec, options), n,
                                            features=stacked)
        return scores[:size]

    def frame_features(self, requests: Sequence[ModelRequest]) -> list[torch.Tensor]:
        """The frame encoder's features of each request's images, ``(K, out_dim)`` per request (a
        request without images shows one grey frame).

        An image shown by several requests (a sample's frames under every option rotation, the
        windows that overlap its selections) is encoded once: the distinct images, in order of first
        appearance, go through the encoder together. An image's features do not depend on the images
        encoded with it, so a resumed run, whose calls hold other requests, answers exactly as an
        uninterrupted one: torch's CPU convolutions give the first and the last row of a batch, and
        every row of a batch under 16, other roundings than the rows inside a batch of 16 or more,
        so the images go in between :data:`_EDGE_ROWS` blank rows, at least :data:`_MIN_ROWS` rows in
        all (tested: ``test_frame_features_do_not_depend_on_the_other_frames``)."""
        import torch

        from tempcore.world.answerers.nets import frames_tensor

        if self.kind == "text":
            raise ZooError(f"answerer {self.name!r} (kind text) has no frame encoder")
        distinct: dict[tuple[Any, ...], int] = {}
        images: list[np.ndarray] = []
        rows: list[list[int]] = []
        for request in requests:
            row = []
            for image in request.images or (_grey_image(),):
                key = (image.shape, image.dtype.str, image.tobytes())
                if key not in distinct:
                    distinct[key] = len(images)
                    images.append(image)
                row.append(distinct[key])
            rows.append(row)
        frames = frames_tensor(images)
        blank = torch.zeros((1, *frames.shape[1:]), dtype=frames.dtype)
        tail = max(_EDGE_ROWS, _MIN_ROWS - _EDGE_ROWS - len(images))
        with torch.inference_mode():
            padded = torch.cat([blank.expand(_EDGE_ROWS, *frames.shape[1:]), frames,
                                blank.expand(tail, *frames.shape[1:])])
            encoded = self.net.encoder(padded)[_EDGE_ROWS : _EDGE_ROWS + len(images)]
        return [encoded[torch.tensor(row)] for row in rows]


_EDGE_ROWS = 1  # blank frames before and after the images a member encodes at once
_MIN_ROWS = 16  # ... and the fewest rows of such a batch
_MIN_HEAD_ROWS = 16  # the fewest requests the heads score at once (see Answerer.scores) ...
_HEAD_ROW_BLOCK = 8  # ... and a multiple of how many they score at once


def _grey_image(side: int = IMAGE_SIDE) -> np.ndarray:
    return np.full((side, side, 3), GREY, dtype=np.uint8)


def member_paths(name_or_path: str | Path, zoo_dir: str | Path | None = None) -> tuple[Path, Path]:
    """``(weights.safetensors, config.json)`` of a member name (in ``zoo_dir``, default the shipped
    zoo) or of a path to a member's ``.safetensors`` file (its config is the ``.json`` beside it)."""
    text = str(name_or_path)
    if text in MEMBERS or not text.endswith(".safetensors"):
        folder = Path(zoo_dir) if zoo_dir is not None else ANSWERER_DIR
        weights = folder / f"{text}.safetensors"
    else:
        weights = Path(text)
    return weights, weights.with_suffix(".json")


def load_answerer(name_or_path: str | Path, zoo_dir: str | Path | None = None, device: str = "cpu") -> Answerer:
    """Load a member (see :func:`member_paths`); raises :class:`ZooError` naming the missing file."""
    from safetensors.torch import load_file

    from tempcore.world.answerers.nets import AnswererNet
    from tempcore.world.answerers.text import TextCodec

    weights, config_path = member_paths(name_or_path, zoo_dir)
    for path in (weights, config_path):
        if not path.is_file():
            known = ", ".join(MEMBERS)
            raise ZooError(f"zoo answerer {name_or_path!r}: {path} not found (shipped members: {known})")
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ZooError(f"{config_path}: unreadable: {exc}") from exc
    if config.get("format") != FORMAT:
        raise ZooError(f"{config_path}: format {config.get('format')!r}, expected {FORMAT!r}")
    codec = TextCodec(tuple(config["vocab"]), int(config["buckets"]))
    net = AnswererNet(
        config["kind"], codec.size, len(config["colours"]), len(config["shapes"]), int(config["dim"])
    )
    try:
        net.load_state_dict(load_file(str(weights)), strict=True)
    except (RuntimeError, OSError) as exc:
        raise ZooError(f"{weights}: weights do not fit a {config['kind']!r} answerer: {exc}") from exc
    digest = hashlib.sha256(weights.read_bytes()).hexdigest()
    return Answerer(str(config["name"]), config["kind"], net.to(device).eval(), codec, config, digest)


def save_answerer(
    folder: str | Path, name: str, net: AnswererNet, codec: TextCodec, extra: Mapping[str, Any] | None = None
) -> Path:
    """Write ``<name>.safetensors`` and ``<name>.json`` into ``folder``; returns the weights path."""
    from safetensors.torch import save_file

    from tempcore.world.answerers.text import vocabulary

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    weights = folder / f"{name}.safetensors"
    state = {k: v.detach().contiguous().cpu() for k, v in net.state_dict().items()}
    # one metadata key: safetensors writes a map's keys in no fixed order, and rebuilds must be byte-identical
    save_file(state, str(weights), metadata={"format": FORMAT})
    weights.chmod(0o644)  # safetensors writes owner-only files; package data must be world-readable
    config = {
        "format": FORMAT,
        "name": name,
        "kind": net.kind,
        "dim": net.dim,
        "image_side": IMAGE_SIDE,
        "buckets": codec.buckets,
        "vocab": list(codec.vocab),
        "colours": vocabulary()[0],
        "shapes": vocabulary()[1],
        **dict(extra or {}),
    }
    weights.with_suffix(".json").write_text(json.dumps(config, indent=1) + "\n", encoding="utf-8")
    return weights


@dataclass(frozen=True)
class ZooSpec(ModelSpec):
    """``backend: zoo``: a zoo member of the synthetic world (tiny CPU networks scoring the options).

    The world registers the ``zoo`` backend through the ``tempcore.models`` entry-point group; this
    spec comes with it as :attr:`ZooModel.spec_class`. Members answer by option scores, so there is no
    generation key (``max_new_tokens``, ``system_prompt``, ...).
    """

    device: str = spec_key("auto", doc="auto (cpu: the members are tiny) or a torch device")
    dtype: str = spec_key("auto", doc="auto or float32 (the members run in float32)")
    batch_size: int = spec_key(_MIN_HEAD_ROWS, doc=f"requests per forward pass (a batch is filled up to a multiple of "
                               f"{_HEAD_ROW_BLOCK}, at least {_MIN_HEAD_ROWS}, with copies, so that no answer "
                               "depends on its batch)")
    max_frames: int | None = spec_key(None, doc="the most images per request (more: that request fails)")

    EXTRA_KEYS: ClassVar[Mapping[str, str] | None] = {"zoo_dir": "the folder of the members (default the shipped zoo)"}
    answers_by: ClassVar[str | None] = METHOD_OPTION_SCORES

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.dtype not in ("auto", "float32"):
            raise ModelConfigError(f"model {self.display_name}: zoo answerers run in float32, not {self.dtype!r}")

    def preflight(self) -> list[str]:
        """The member's weights and config exist (what :func:`load_answerer` needs first)."""
        weights, config = member_paths(self.model, self.extra.get("zoo_dir"))
        missing = [str(p) for p in (weights, config) if not p.is_file()]
        if not missing:
            return []
        hint = did_you_mean(self.model, list(MEMBERS), quote=True) if self.model not in MEMBERS else ""
        return [f"zoo answerer {self.model!r}: {', '.join(missing)} not found{hint} "
                f"(shipped members: {', '.join(MEMBERS)})"]


class ZooModel:
    """A zoo member behind :class:`tempcore.models.Model` (backend ``zoo``).

    ``spec.model`` is a member name (:data:`MEMBERS`, looked up in ``spec.extra["zoo_dir"]`` or the
    shipped zoo) or a path to a member's ``.safetensors``. ``revision`` is ``spec.revision`` or the
    first 12 hex digits of the weights' SHA-256. ``device="auto"`` means CPU (the members are tiny).
    """

    supports_option_scores = True
    spec_class: ClassVar[type[ModelSpec]] = ZooSpec

    def __init__(self, spec: ZooSpec) -> None:
        expect_spec(spec, ZooSpec, "backend zoo")
        self.spec = spec
        self.name = spec.display_name
        import torch

        device = "cpu" if spec.device == "auto" else spec.device
        try:
            torch.device(device)
        except (RuntimeError, TypeError) as exc:
            raise ModelConfigError(f"model {self.name}: unknown torch device {device!r}") from exc
        if spec.dtype not in ("auto", "float32"):
            raise ModelConfigError(f"model {self.name}: zoo answerers run in float32, not {spec.dtype!r}")
        try:
            self.answerer: Answerer | None = load_answerer(spec.model, spec.extra.get("zoo_dir"), device)
        except ZooError as exc:
            raise ModelError(f"model {self.name}: {exc}") from exc
        self.revision: str | None = spec.revision or self.answerer.weights_sha256[:12]  # Model's field type

    @classmethod
    def from_spec(cls, spec: ZooSpec) -> ZooModel:
        return cls(spec)

    def _problem(self, request: ModelRequest) -> str | None:
        if len(request.options) < 2:
            return f"request {request.key!r}: zoo answerers need at least two options"
        if self.spec.max_frames is not None and len(request.images) > self.spec.max_frames:
            return (
                f"request {request.key!r}: {len(request.images)} images exceed this model's "
                f"max_frames={self.spec.max_frames}"
            )
        return None

    def answer(self, requests: Sequence[ModelRequest], *, method: str = "generate") -> list[ModelResponse]:
        """One response per request: the argmax letter and the log-softmax over the options."""
        import torch

        check_method(self, method)
        if self.answerer is None:
            raise ModelError(f"model {self.name}: closed")
        answerer = self.answerer
        results: dict[int, ModelResponse] = {}
        groups: dict[tuple[int, int], list[int]] = {}
        for i, request in enumerate(requests):
            problem = self._problem(request)
            if problem is not None:
                results[i] = ModelResponse.failure(problem)
                continue
            n_images = 0 if answerer.kind == "text" else max(1, len(request.images))
            groups.setdefault((len(request.options), n_images), []).append(i)

        # frame members encode the frames of every request of this call at once, each distinct
        # image once (a sample's frames recur under every rotation); the heads run per batch
        framed = [] if answerer.kind == "text" else [i for indices in groups.values() for i in indices]
        features: dict[int, torch.Tensor] = {}
        shared_s = 0.0  # the shared encoding's time, spread over the requests' latencies
        if framed:
            start = time.perf_counter()
            features = dict(zip(framed, answerer.frame_features([requests[i] for i in framed])))
            shared_s = (time.perf_counter() - start) / len(framed)

        def run(batch: list[int]) -> list[ModelResponse]:
            start = time.perf_counter()
            scores = answerer.scores([requests[i] for i in batch],
                                     [features[i] for i in batch] if features else None)
            logprobs = torch.log_softmax(scores.double(), dim=-1)
            latency = (time.perf_counter() - start) / len(batch) + shared_s
            out = []
            for row in logprobs:
                values = tuple(float(x) for x in row)
                out.append(ModelResponse(LETTERS[int(torch.argmax(row))], values, latency))
            return out

        for indices in groups.values():
            results.update(run_with_fallback(indices, run, self.spec.batch_size))
        return [results[i] for i in range(len(requests))]

    def close(self) -> None:
        self.answerer = None

    def __repr__(self) -> str:
        return f"ZooModel(name={self.name!r}, revision={self.revision!r})"


def zoo_specs(zoo_dir: str | Path | None = None, *, include_hf: bool | None = None) -> list[ModelSpec]:
    """The panel: a :class:`ModelSpec` per member (backend ``zoo``) and the HF answerer (backend ``hf``).

    ``include_hf=None`` includes the HF answerer when its weights are there (``tempcore world train``
    builds them; the package ships the ``zoo`` members and the encoder).
    """
    from tempcore.world.hf_answerer import hf_path, hf_spec

    extra = {} if zoo_dir is None else {"zoo_dir": str(Path(zoo_dir) / "answerers")}
    specs: list[ModelSpec] = [ZooSpec(backend="zoo", model=name, extra=extra) for name in MEMBERS]
    hf_dir = None if zoo_dir is None else Path(zoo_dir)
    if include_hf or (include_hf is None and hf_path(hf_dir).is_dir()):
        specs.append(hf_spec(hf_dir))
    return specs
