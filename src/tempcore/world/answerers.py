"""The embedded answerer zoo: small models trained on the synthetic world, behind the :class:`Model` interface.

The synthetic world (:mod:`tempcore.world.generator`) plants what each question needs; a panel of
answerers that *learned* the world lets an audit (FSS, LIS, the taxonomy) be scored against that
truth on any laptop. The panel mirrors the paper's: models that differ in how they use frames, one
that sees no frames at all, and one real generative VLM architecture (:mod:`tempcore.world.hf_answerer`).

Members (``ModelSpec(backend="zoo", model=NAME)``; weights in ``tempcore/world/zoo/answerers/``):

``zoo-text``
    Sees only the prompt text: bag of words of the question and of each option. It learns the world's
    text priors (the sides of a polygon, the one option that is a colour) and nothing else, so it is
    at chance on every visual question.
``zoo-mean``
    Bag of frames: each frame's features, conditioned on the question, are averaged. Order-blind;
    evidence in few frames is diluted.
``zoo-max``
    The same, max-pooled over frames: one frame that shows the evidence is enough.
``zoo-attn``
    Attention over frames conditioned on the question *and each option* (one attention per option):
    the option "red" looks for red frames.
``zoo-order``
    Order-aware: the frame features plus an embedding of each frame's rank in the order shown, mixed
    by a one-layer transformer encoder, then averaged. Shuffling or reversing the frames changes its
    input (the other members are invariant to the order).

Frames are read by a small CNN, the :class:`FrameEncoder`, trained first on its own to say which
colour and which shape each quadrant of a frame shows (the world puts at most one object per
quadrant), then frozen; every frame member carries its own copy of it, as real VLMs carry a
pretrained vision tower. Per frame, a member conditions the encoder's features on the question
(``g_t = MLP([f_t, q, f_t * q])``), pools them as above into ``h``, and scores each option with
``score_i = MLP([h_i, q, o_i, h_i * o_i, q * o_i])`` (``q`` the question, ``o_i`` the option).
It answers with ``option_logprobs = log_softmax(scores)`` over the options and ``text`` = the argmax
letter; the response is the same for ``method="generate"`` and ``"option_scores"`` (the letter
parses with the shared answer extractor). Options are scored independently with shared weights,
so a member is equivariant to option order (circular evaluation rotates its probabilities with the
options).

Input conventions (choices, stated once):

- Text. The question is the prompt minus its option lines (``"A. ..."`` / ``"(A) ..."`` up to the
  number of options), the ``Options:`` header and the ``Frame timestamps`` line; it is encoded as the
  mean embedding of its lower-cased words and hashed word bigrams (CRC-32 into :data:`BIGRAM_BUCKETS`
  buckets), over the closed vocabulary seen in training (unknown words share one id). Options are
  encoded the same way, with the same embedding table.
- Frames. Any size: each image is resized to 32 x 32 (bilinear, antialiased), scaled to [-2, 2].
  Frames are used in the order given; timestamps are ignored. A request without images (a text-only
  probe) is answered as if shown one mid-grey frame, the no-frame condition's input.
- Inference runs on CPU in float32 unless the spec names another device; it is deterministic.

Training (:func:`train_answerers`, :func:`train_all`; ``tempcore world train`` calls the latter):
questions of a world planned from the training seed (never a demo world: the demo's worlds use small
seeds, training uses ``TRAIN_SEED_BASE + seed``), rendered in memory. First the frame encoder
(:func:`train_frame_encoder`); then the features of every frame of the training world are computed
once (:func:`feature_bank`), and the members' heads train on them with a *mix of frame picks* per
example, so that no member learns a shortcut that breaks on MaxProb / MinProb frames:

- ``uniform`` (segment centres), ``random`` (distinct frames);
- ``dense``: K consecutive frames (stride 1 or 2) around a point inside an event window of the scene
  (the question's own window when it has one, 70% of the time), as the oracle windows show;
- ``mixed``: 1-3 frames inside an event window plus frames from distinct seconds outside it, the
  shape of QA-mode MaxProb frames for a temporally grounded question (and of MinProb frames for a
  visual-bias one);
- ``outside``: frames from distinct seconds outside the question's window (outside every event
  window for questions without one), the shape of MinProb frames for a temporally grounded question;
- ``grey``: uniform grey images (the no-frame condition), so that without frames a member falls back
  on the text prior: trivial questions stay answerable, visual ones go to chance.

K is drawn per batch from :data:`K_CHOICES`. 70% of the videos are degraded like H.264 4:2:0 video
(chroma averaged over 2 x 2 pixels, rounding, slight noise), since audited frames are decoded from
encoded files. All members train on the same batches, each from its own seed, with AdamW and
cross-entropy over the options. Prompts are rendered with :data:`TEMPLATES`, with the frame
timestamps shown half of the time.

This module imports torch; it is imported only when a zoo member is loaded (the model registry
imports backends lazily) or trained, never by ``import tempcore`` or ``import tempcore.world``.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import re
import time
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from tempcore.errors import TempcoreError
from tempcore.models._batching import run_with_fallback
from tempcore.models.base import (
    ModelConfigError,
    ModelError,
    ModelRequest,
    ModelResponse,
    ModelSpec,
    check_method,
)
from tempcore.records import LETTERS

FORMAT = "tempcore-zoo-answerer/1"
ZOO_DIR = Path(__file__).parent / "zoo"
ANSWERER_DIR = ZOO_DIR / "answerers"

MEMBERS: dict[str, str] = {
    "zoo-text": "text",
    "zoo-mean": "mean",
    "zoo-max": "max",
    "zoo-attn": "attn",
    "zoo-order": "order",
}
"""Member name -> architecture kind (see the module docstring)."""

KINDS = ("text", "mean", "max", "attn", "order")
IMAGE_SIDE = 32
DIM = 64
BIGRAM_BUCKETS = 256
GREY = 128
TRAIN_SEED_BASE = 1_000_003
"""Training worlds use ``TRAIN_SEED_BASE + seed``: disjoint from the small seeds demo worlds use."""

PICKS: dict[str, float] = {
    "uniform": 0.2,
    "random": 0.15,
    "dense": 0.15,
    "mixed": 0.2,
    "outside": 0.15,
    "grey": 0.15,
}
"""Frame picks of the training mix and their probabilities."""

K_CHOICES = (1, 4, 8, 8, 8, 16)
"""Frames per training batch, drawn per batch (8, the demo's K, most often)."""

TEMPLATES = ("default", "default", "default", "letter_only", "lmms_eval")
"""Prompt templates of the training mix (drawn per example); timestamps are shown half of the time."""


class ZooError(TempcoreError):
    """A zoo answerer cannot be built, loaded or trained (names the file or member and the reason)."""


# --- text ---------------------------------------------------------------------------------------

_WORD = re.compile(r"[a-z0-9]+")
_OPTION_LINE = re.compile(r"^\s*\(?([A-Z])[.):]\s")


def words(text: str) -> list[str]:
    """Lower-cased alphanumeric words of ``text``."""
    return _WORD.findall(text.lower())


def question_text(prompt: str, n_options: int) -> str:
    """The prompt without its option lines (letters below ``n_options``), ``Options:`` and timestamps."""
    keep = []
    for line in prompt.splitlines():
        m = _OPTION_LINE.match(line)
        if m and LETTERS.index(m.group(1)) < n_options:
            continue
        if line.strip().lower().startswith(("options:", "frame timestamps")):
            continue
        keep.append(line)
    return "\n".join(keep)


@dataclass(frozen=True)
class TextCodec:
    """Word and hashed-bigram ids over a closed vocabulary (id 0: unknown word)."""

    vocab: tuple[str, ...]
    buckets: int = BIGRAM_BUCKETS

    @functools.cached_property
    def _index(self) -> dict[str, int]:
        return {w: i for i, w in enumerate(self.vocab)}

    @property
    def size(self) -> int:
        """Rows of the embedding table: the vocabulary, then the bigram buckets."""
        return len(self.vocab) + self.buckets

    def ids(self, text: str) -> list[int]:
        """Word ids then bigram ids of ``text`` (``[0]`` for a text without words)."""
        toks = words(text)
        index = self._index
        uni = [index.get(w, 0) for w in toks]
        base = len(self.vocab)
        bi = [base + zlib.crc32(f"{a} {b}".encode()) % self.buckets for a, b in zip(toks, toks[1:])]
        return (uni + bi) or [0]

    @classmethod
    def build(cls, texts: Iterable[str], buckets: int = BIGRAM_BUCKETS) -> TextCodec:
        """A codec whose vocabulary is every word of ``texts`` (sorted), after ``<unk>``."""
        vocab = sorted({w for t in texts for w in words(t)})
        return cls(("<unk>", *vocab), buckets)


def _bag(codec: TextCodec, texts: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """(flat ids, offsets) for ``nn.EmbeddingBag``."""
    ids = [codec.ids(t) for t in texts]
    offsets = np.cumsum([0] + [len(i) for i in ids[:-1]])
    flat = [x for i in ids for x in i]
    return torch.tensor(flat, dtype=torch.long), torch.tensor(offsets, dtype=torch.long)


# --- frames -------------------------------------------------------------------------------------


def frames_tensor(images: Sequence[np.ndarray], side: int = IMAGE_SIDE) -> torch.Tensor:
    """``(N, 3, side, side)`` float32 of uint8 RGB images of any sizes (bilinear, antialiased), in [-2, 2]."""
    groups: list[list[np.ndarray]] = []
    for image in images:  # consecutive images of one size are resized together
        if groups and groups[-1][0].shape == image.shape:
            groups[-1].append(image)
        else:
            groups.append([image])
    out = []
    for group in groups:
        x = torch.from_numpy(np.ascontiguousarray(np.stack(group))).permute(0, 3, 1, 2).float()
        if x.shape[-2:] != (side, side):
            x = F.interpolate(x, size=(side, side), mode="bilinear", antialias=True, align_corners=False)
        out.append(x)
    return (torch.cat(out) / 255.0 - 0.5) * 4.0


def rank_features(k: int) -> torch.Tensor:
    """``(k, 8)`` sinusoidal features of each frame's rank fraction ``r / (k - 1)`` (0 for k = 1)."""
    pos = torch.arange(k, dtype=torch.float32) / max(k - 1, 1)
    freqs = torch.tensor([1.0, 2.0, 4.0, 8.0])
    angles = math.pi * pos[:, None] * freqs[None, :]
    return torch.cat([torch.sin(angles), torch.cos(angles)], dim=1)


def vocabulary() -> tuple[list[str], list[str]]:
    """The colours and shapes the frame encoder reads (the world's, in :mod:`tempcore.world.scene` order)."""
    from tempcore.world.scene import COLOURS, SHAPES

    return list(COLOURS), list(SHAPES)


def quadrant_targets(scene: Any, times: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """``(colours, shapes)``, each ``(N, 4)`` int: per frame and quadrant (slot 0..3: top-left,
    top-right, bottom-left, bottom-right), 1 + the index of the colour / shape shown there, 0 if empty."""
    colours, shapes = vocabulary()
    col = np.zeros((len(times), 4), dtype=np.int64)
    shp = np.zeros((len(times), 4), dtype=np.int64)
    for obj in scene.objects:
        for row, t in enumerate(times):
            if obj.visible_at(float(t)):
                col[row, obj.slot] = 1 + colours.index(obj.colour_at(float(t)))
                shp[row, obj.slot] = 1 + shapes.index(obj.shape)
    return col, shp


# --- networks -----------------------------------------------------------------------------------


def _conv(c_in: int, c_out: int, kernel: int, stride: int, padding: int) -> list[nn.Module]:
    return [nn.Conv2d(c_in, c_out, kernel, stride=stride, padding=padding, bias=False), nn.BatchNorm2d(c_out), nn.ReLU()]


class FrameEncoder(nn.Module):
    """A small CNN that reads a 32 x 32 frame quadrant by quadrant: which colour and which shape (or
    nothing) each quadrant shows.

    The world puts at most one object in each quadrant, so this is a tiny object detector. It is trained
    first, on its own (cross-entropy per quadrant), then frozen and shared by every frame member, as real
    VLMs share a pretrained vision tower. Its output per frame (``out_dim`` = 96 for the world's 9 colours
    and 4 shapes): the colour probabilities of each quadrant (4 x 10, "empty" first), the shape
    probabilities (4 x 5), and the presence of every colour-shape pair, ``max_q p(colour c at q) *
    p(shape s at q)`` (9 x 4).
    """

    def __init__(self, n_colours: int, n_shapes: int) -> None:
        super().__init__()
        self.n_colours = n_colours
        self.n_shapes = n_shapes
        self.conv = nn.Sequential(
            *_conv(3, 24, 4, 2, 1),  # 16 x 16
            *_conv(24, 32, 3, 2, 1),  # 8 x 8
            *_conv(32, 48, 3, 1, 1),
            *_conv(48, 64, 4, 4, 0),  # 2 x 2: one cell per quadrant
        )
        self.colour = nn.Conv2d(64, n_colours + 1, 1)
        self.shape = nn.Conv2d(64, n_shapes + 1, 1)
        self.out_dim = 4 * (n_colours + 1) + 4 * (n_shapes + 1) + n_colours * n_shapes

    def logits(self, frames: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Colour and shape logits per quadrant: ``(N, 4, n_colours + 1)``, ``(N, 4, n_shapes + 1)``."""
        h = self.conv(frames)
        return self.colour(h).flatten(2).transpose(1, 2), self.shape(h).flatten(2).transpose(1, 2)

    def forward(self, frames: torch.Tensor) -> torch.Tensor:
        colour, shape = self.logits(frames)
        p_colour, p_shape = colour.softmax(-1), shape.softmax(-1)
        pairs = (p_colour[:, :, 1:, None] * p_shape[:, :, None, 1:]).amax(dim=1).flatten(1)
        return torch.cat([p_colour.flatten(1), p_shape.flatten(1), pairs], dim=1)


class AnswererNet(nn.Module):
    """One zoo member: scores per option from (frames, question, options). See the module docstring.

    Frame members own a copy of the (frozen) :class:`FrameEncoder`; ``forward`` takes either the
    frames or their precomputed encoder features (training uses a feature bank).
    """

    def __init__(self, kind: str, n_tokens: int, n_colours: int, n_shapes: int, dim: int = DIM) -> None:
        super().__init__()
        if kind not in KINDS:
            raise ZooError(f"unknown answerer kind {kind!r} (known: {', '.join(KINDS)})")
        self.kind = kind
        self.dim = dim
        self.n_colours = n_colours
        self.n_shapes = n_shapes
        self.text = nn.EmbeddingBag(n_tokens, dim, mode="mean")
        self.text_norm = nn.LayerNorm(dim)
        if kind != "text":
            self.encoder = FrameEncoder(n_colours, n_shapes)
            self.frame_in = nn.Linear(self.encoder.out_dim, dim)
            self.condition = nn.Sequential(nn.Linear(3 * dim, 2 * dim), nn.ReLU(), nn.Linear(2 * dim, dim), nn.ReLU())
        if kind == "attn":
            self.query = nn.Linear(2 * dim, dim)
            self.key = nn.Linear(dim, dim)
        if kind == "order":
            self.rank = nn.Linear(8, dim)
            self.mix = nn.TransformerEncoderLayer(
                dim, nhead=4, dim_feedforward=2 * dim, dropout=0.0, batch_first=True
            )
        n_in = 3 * dim if kind == "text" else 5 * dim
        self.scorer = nn.Sequential(
            nn.Linear(n_in, 2 * dim), nn.ReLU(), nn.Linear(2 * dim, dim), nn.ReLU(), nn.Linear(dim, 1)
        )

    def encode_text(self, flat: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        return self.text_norm(self.text(flat, offsets))

    def train(self, mode: bool = True) -> AnswererNet:
        """Train mode for the head; the frozen frame encoder always stays in eval mode."""
        super().train(mode)
        if self.kind != "text":
            self.encoder.eval()
        return self

    def head_parameters(self) -> list[nn.Parameter]:
        """Everything but the frame encoder (what member training updates)."""
        return [p for name, p in self.named_parameters() if not name.startswith("encoder.")]

    def forward(
        self,
        frames: torch.Tensor | None,
        q_ids: tuple[torch.Tensor, torch.Tensor],
        o_ids: tuple[torch.Tensor, torch.Tensor],
        n_options: int,
        *,
        features: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Scores ``(B, n_options)``; ``frames`` is ``(B, K, 3, 32, 32)`` or ``features`` is
        ``(B, K, encoder.out_dim)`` (both ignored by ``text``)."""
        q = self.encode_text(*q_ids)
        b, d = q.shape
        o = self.encode_text(*o_ids).view(b, n_options, d)
        qe = q[:, None, :].expand(b, n_options, d)
        if self.kind == "text":
            return self.scorer(torch.cat([qe, o, qe * o], dim=-1)).squeeze(-1)
        if features is None:
            if frames is None:
                raise ZooError(f"answerer kind {self.kind!r} needs frames")
            features = self.encoder(frames.flatten(0, 1)).view(b, frames.shape[1], -1)
        k = features.shape[1]
        f = self.frame_in(features)
        qk = q[:, None, :].expand(b, k, d)
        g = self.condition(torch.cat([f, qk, f * qk], dim=-1))
        if self.kind == "mean":
            h = g.mean(dim=1)[:, None, :].expand(b, n_options, d)
        elif self.kind == "max":
            h = g.amax(dim=1)[:, None, :].expand(b, n_options, d)
        elif self.kind == "order":
            mixed = self.mix(g + self.rank(rank_features(k).to(g.device))[None])
            h = mixed.mean(dim=1)[:, None, :].expand(b, n_options, d)
        else:  # attn: one attention over frames per option
            query = self.query(torch.cat([qe, o], dim=-1))
            weights = torch.softmax(query @ self.key(g).transpose(1, 2) / math.sqrt(d), dim=-1)
            h = weights @ g
        return self.scorer(torch.cat([h, qe, o, h * o, qe * o], dim=-1)).squeeze(-1)


# --- a loaded member ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Answerer:
    """A member's network, text codec and configuration (what :func:`load_answerer` returns)."""

    name: str
    kind: str
    net: AnswererNet
    codec: TextCodec
    config: dict[str, Any]
    weights_sha256: str

    def scores(self, requests: Sequence[ModelRequest]) -> torch.Tensor:
        """Option scores ``(B, n)`` for requests with the same number of options and of images."""
        n = len(requests[0].options)
        questions = [question_text(r.prompt, n) for r in requests]
        options = [o for r in requests for o in r.options]
        frames = None
        if self.kind != "text":
            stacks = [frames_tensor(r.images or (_grey_image(),)) for r in requests]
            frames = torch.stack(stacks)
        with torch.inference_mode():
            return self.net(frames, _bag(self.codec, questions), _bag(self.codec, options), n)


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


class ZooModel:
    """A zoo member behind :class:`tempcore.models.Model` (backend ``zoo``).

    ``spec.model`` is a member name (:data:`MEMBERS`, looked up in ``spec.extra["zoo_dir"]`` or the
    shipped zoo) or a path to a member's ``.safetensors``. ``revision`` is ``spec.revision`` or the
    first 12 hex digits of the weights' SHA-256. ``device="auto"`` means CPU (the members are tiny).
    """

    supports_option_scores = True

    def __init__(self, spec: ModelSpec) -> None:
        self.spec = spec
        self.name = spec.display_name
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
        self.revision = spec.revision or self.answerer.weights_sha256[:12]

    @classmethod
    def from_spec(cls, spec: ModelSpec) -> ZooModel:
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

        def run(batch: list[int]) -> list[ModelResponse]:
            start = time.perf_counter()
            scores = answerer.scores([requests[i] for i in batch])
            logprobs = torch.log_softmax(scores.double(), dim=-1)
            latency = (time.perf_counter() - start) / len(batch)
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
    specs = [ModelSpec(backend="zoo", model=name, extra=extra) for name in MEMBERS]
    hf_dir = None if zoo_dir is None else Path(zoo_dir)
    if include_hf or (include_hf is None and hf_path(hf_dir).is_dir()):
        specs.append(hf_spec(hf_dir))
    return specs


# --- training data ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Example:
    """One training / evaluation item: frames as shown, the rendered prompt, options and answer."""

    frames: np.ndarray
    timestamps: tuple[float, ...]
    prompt: str
    options: tuple[str, ...]
    answer: int
    family: str
    planted: str
    pick: str
    sample_id: str = ""

    def request(self) -> ModelRequest:
        """The :class:`ModelRequest` a model is shown for this example."""
        return ModelRequest(
            images=tuple(self.frames), prompt=self.prompt, options=self.options,
            timestamps=self.timestamps, key=self.sample_id,
        )


@dataclass(frozen=True)
class Draw:
    """A planned example: the question, the frames to show (``indices``; ``None``: ``k`` grey images of
    level ``grey``), the rendered prompt."""

    question: int
    video_id: str
    indices: tuple[int, ...] | None
    grey: int
    k: int
    timestamps: tuple[float, ...]
    prompt: str
    options: tuple[str, ...]
    answer: int
    family: str
    planted: str
    pick: str
    sample_id: str
    template: str = "default"
    shown_timestamps: bool = False


def _scene_windows(scene: Any) -> list[Any]:
    out = []
    for obj in scene.objects:
        out += [w for w in (obj.appear, obj.absent, obj.recolour) if w is not None]
    return out


def _frames_in(scene: Any, window: Any) -> np.ndarray:
    idx = np.arange(scene.n_frames)
    times = idx / scene.fps
    return idx[(times + 1e-9 >= window.start) & (times + 1e-9 < window.end)]


def _by_distinct_seconds(candidates: np.ndarray, fps: float, k: int, rng: np.random.Generator) -> list[int]:
    """Up to ``k`` frames of ``candidates``, one per randomly chosen second first, then any others."""
    if k <= 0 or candidates.size == 0:
        return []
    seconds = np.floor(candidates / fps + 1e-9).astype(int)
    chosen: list[int] = []
    for s in rng.permutation(np.unique(seconds))[:k]:
        pool = candidates[seconds == s]
        chosen.append(int(pool[rng.integers(pool.size)]))
    if len(chosen) < k:
        rest = np.setdiff1d(candidates, chosen)
        chosen += [int(x) for x in rng.choice(rest, size=min(k - len(chosen), rest.size), replace=False)]
    return chosen


def pick_indices(
    scene: Any, window: Any, pick: str, k: int, rng: np.random.Generator
) -> list[int] | None:
    """Frame indices (sorted) of a pick of ``k`` frames of ``scene`` (``None`` for ``grey``).

    ``window`` is the question's evidence window (or None); see the module docstring for the picks.
    Fewer than ``k`` indices come back only when the video has fewer than ``k`` frames.
    """
    n = scene.n_frames
    k_eff = min(k, n)
    fps = scene.fps
    if pick == "grey":
        return None
    if pick == "uniform":
        return [int((j + 0.5) * n / k_eff) for j in range(k_eff)]
    if pick == "random":
        return sorted(int(x) for x in rng.choice(n, size=k_eff, replace=False))
    windows = _scene_windows(scene)
    if pick == "dense":
        target = window if (window is not None and rng.random() < 0.7) else None
        if target is None and windows:
            target = windows[int(rng.integers(len(windows)))]
        stride = int(rng.integers(1, 3))
        if (k_eff - 1) * stride + 1 > n:
            stride = 1
        span = (k_eff - 1) * stride + 1
        inside = _frames_in(scene, target) if target is not None else np.empty(0, dtype=int)
        centre = int(inside[rng.integers(inside.size)]) if inside.size else int(rng.integers(n))
        start = int(np.clip(centre - span // 2, 0, n - span))
        return list(range(start, start + span, stride))
    if pick == "mixed":
        target = window
        if target is None and windows:
            target = windows[int(rng.integers(len(windows)))]
        if target is None:
            return pick_indices(scene, window, "random", k, rng)
        inside = _frames_in(scene, target)
        m = int(rng.integers(1, min(3, k_eff, inside.size) + 1)) if inside.size else 0
        chosen = _by_distinct_seconds(inside, fps, m, rng)
        outside = np.setdiff1d(np.arange(n), inside)
        chosen += _by_distinct_seconds(outside, fps, k_eff - len(chosen), rng)
        return sorted(chosen)
    if pick == "outside":
        mask = np.ones(n, dtype=bool)
        for w in [window] if window is not None else windows:
            mask[_frames_in(scene, w)] = False
        candidates = np.arange(n)[mask]
        if candidates.size < k_eff:
            return pick_indices(scene, window, "random", k, rng)
        return sorted(_by_distinct_seconds(candidates, fps, k_eff, rng))
    raise ZooError(f"unknown frame pick {pick!r} (known: {', '.join(PICKS)})")


def degrade(frames: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Frames degraded like H.264 4:2:0 video: chroma averaged over 2 x 2 pixels, slight noise."""
    x = frames.astype(np.float32)
    r, g, b = x[..., 0], x[..., 1], x[..., 2]
    y = 0.299 * r + 0.587 * g + 0.114 * b
    u, v = (b - y) * 0.564, (r - y) * 0.713
    n, h, w = y.shape
    if h % 2 == 0 and w % 2 == 0:
        def sub(c: np.ndarray) -> np.ndarray:
            c2 = c.reshape(n, h // 2, 2, w // 2, 2).mean(axis=(2, 4))
            return np.repeat(np.repeat(c2, 2, axis=1), 2, axis=2)

        u, v = sub(u), sub(v)
    r = y + 1.403 * v
    b = y + 1.773 * u
    g = (y - 0.299 * r - 0.114 * b) / 0.587
    out = np.stack([r, g, b], axis=-1) + rng.normal(0.0, rng.uniform(0.0, 3.0), size=x.shape)
    return np.clip(np.round(out), 0, 255).astype(np.uint8)


class ExampleSampler:
    """Training / evaluation examples from a planned world (frames rendered in memory); ``families``
    restricts the questions to those families."""

    def __init__(
        self,
        world: Any,
        *,
        picks: Mapping[str, float] | None = None,
        templates: Sequence[str] = TEMPLATES,
        degrade_p: float = 0.7,
        timestamps_p: float = 0.5,
        families: Sequence[str] | None = None,
    ) -> None:
        self.world = world
        self.scenes = world.scene_map()
        self.questions = [q for q in world.questions if families is None or q.question.family in families]
        if not self.questions:
            raise ZooError(f"no question of the world belongs to the families {list(families or [])}")
        self.picks = dict(PICKS if picks is None else picks)
        unknown = sorted(set(self.picks) - set(PICKS))
        if unknown:
            raise ZooError(f"unknown frame picks {unknown} (known: {', '.join(PICKS)})")
        self.templates = tuple(templates)
        self.degrade_p = degrade_p
        self.timestamps_p = timestamps_p

    def prompts(self) -> Iterable[str]:
        """Every question text (:func:`question_text` of a rendered prompt) and option text the sampler
        can produce: the vocabulary's source."""
        from tempcore.prompts import render_prompt

        for wq in self.questions:
            q = wq.question
            for template in sorted(set(self.templates)):
                yield question_text(render_prompt(q.question, q.options, template), len(q.options))
            yield from q.options

    def draw(self, index: int, pick: str, k: int, rng: np.random.Generator) -> Draw:
        """Plan the example of question ``index`` under ``pick`` with ``k`` frames."""
        from tempcore.prompts import render_prompt

        wq = self.questions[index]
        scene = self.scenes[wq.video_id]
        q = wq.question
        idx = pick_indices(scene, q.window, pick, k, rng)
        grey = GREY if rng.random() < 0.7 else int(rng.integers(96, 161))
        if idx is None:
            times = tuple(float(t) for t in np.linspace(0, scene.duration, k, endpoint=False))
        else:
            times = tuple(i / scene.fps for i in idx)
        template = self.templates[int(rng.integers(len(self.templates)))]
        shown = times if rng.random() < self.timestamps_p else None
        prompt = render_prompt(q.question, q.options, template, timestamps=shown)
        return Draw(
            index, wq.video_id, None if idx is None else tuple(idx), grey, k, times, prompt, q.options,
            q.answer, q.family, q.planted, pick, wq.sample_id, template, shown is not None,
        )

    def rotations(self, draw: Draw) -> list[Draw]:
        """The draw with its options rotated cyclically by 0 .. n-1 (prompt re-rendered, answer moved)."""
        from tempcore.prompts import render_prompt, rotate_index, rotate_options

        question = self.questions[draw.question].question.question
        out = []
        for r in range(len(draw.options)):
            options, _ = rotate_options(draw.options, r)
            shown = draw.timestamps if draw.shown_timestamps else None
            out.append(
                dataclasses.replace(
                    draw, options=options, answer=rotate_index(draw.answer, r, len(options)),
                    prompt=render_prompt(question, options, draw.template, timestamps=shown),
                )
            )
        return out

    def render(self, draw: Draw, rng: np.random.Generator) -> Example:
        """The frames of a draw (rendered; degraded with probability ``degrade_p``)."""
        from tempcore.world.scene import render_frames

        scene = self.scenes[draw.video_id]
        if draw.indices is None:
            w, h = scene.size
            frames = np.full((draw.k, h, w, 3), draw.grey, dtype=np.uint8)
        else:
            frames = render_frames(scene, np.asarray(draw.timestamps))
            if rng.random() < self.degrade_p:
                frames = degrade(frames, rng)
        return Example(
            frames, draw.timestamps, draw.prompt, draw.options, draw.answer, draw.family, draw.planted,
            draw.pick, draw.sample_id,
        )

    def draw_pick(self, rng: np.random.Generator) -> str:
        names = list(self.picks)
        p = np.array([self.picks[x] for x in names], dtype=np.float64)
        return names[int(rng.choice(len(names), p=p / p.sum()))]

    def draws(self, n: int, k: int, rng: np.random.Generator) -> list[Draw]:
        """``n`` draws of random questions, each with its own random pick, ``k`` frames each."""
        return [self.draw(int(rng.integers(len(self.questions))), self.draw_pick(rng), k, rng) for _ in range(n)]

    def batch(self, n: int, k: int, rng: np.random.Generator) -> list[Example]:
        """``n`` rendered examples (see :meth:`draws`)."""
        return [self.render(d, rng) for d in self.draws(n, k, rng)]


def text_inputs(
    codec: TextCodec, prompts: Sequence[str], options: Sequence[Sequence[str]]
) -> tuple[tuple[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor], int]:
    """Question and option bags of a batch (every item with the same number of options)."""
    n = len(options[0])
    if any(len(o) != n for o in options):
        raise ZooError("a batch needs the same number of options in every item")
    questions = _bag(codec, [question_text(p, n) for p in prompts])
    return questions, _bag(codec, [o for opts in options for o in opts]), n


# --- training -----------------------------------------------------------------------------------


def training_world(seed: int, n_questions: int) -> Any:
    """The world the answerers train on: ``plan_world(n_questions, TRAIN_SEED_BASE + seed)``."""
    from tempcore.world.generator import plan_world

    return plan_world(n_questions, TRAIN_SEED_BASE + seed)


def _cosine(lr: float, step: int, steps: int) -> float:
    warm = max(1, steps // 20)
    if step < warm:
        return lr * (step + 1) / warm
    return lr * 0.5 * (1 + math.cos(math.pi * (step - warm) / max(1, steps - warm)))


def train_frame_encoder(
    world: Any,
    seed: int = 0,
    *,
    steps: int = 600,
    batch_size: int = 128,
    lr: float = 3e-3,
    log_every: int = 100,
    log: Callable[[str], None] | None = print,
) -> tuple[FrameEncoder, list[float]]:
    """Train the shared :class:`FrameEncoder` to read each quadrant's colour and shape (cross-entropy
    per quadrant, "empty" included). Each batch: frames of random scenes, half of them inside an event
    window (so brief, absent and recoloured states are common), 70% of the scenes degraded like video,
    4% of the frames grey (every quadrant empty). Returns the encoder (in eval mode) and the mean loss
    of each logged interval."""
    torch.manual_seed(seed * 1000 + 999)
    colours, shapes = vocabulary()
    encoder = FrameEncoder(len(colours), len(shapes))
    opt = torch.optim.AdamW(encoder.parameters(), lr=lr, weight_decay=1e-4)
    rng = np.random.default_rng([TRAIN_SEED_BASE, seed, 5])
    scenes = list(world.scenes)
    per_scene = 8
    losses: list[float] = []
    running: list[float] = []
    exact: list[float] = []
    encoder.train()
    start = time.perf_counter()
    for step in range(steps):
        for group in opt.param_groups:
            group["lr"] = _cosine(lr, step, steps)
        frames, col, shp = _encoder_batch(scenes, max(1, batch_size // per_scene), per_scene, rng)
        lc, ls = encoder.logits(frames_tensor(frames))
        loss = F.cross_entropy(lc.reshape(-1, lc.shape[-1]), col.reshape(-1)) + F.cross_entropy(
            ls.reshape(-1, ls.shape[-1]), shp.reshape(-1)
        )
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        running.append(float(loss.detach()))
        exact.append(float(((lc.argmax(-1) == col) & (ls.argmax(-1) == shp)).all(dim=1).float().mean()))
        if (step + 1) % log_every == 0 or step + 1 == steps:
            losses.append(float(np.mean(running)))
            if log is not None:
                log(
                    f"frame encoder step {step + 1}/{steps} ({time.perf_counter() - start:.0f}s) "
                    f"loss {losses[-1]:.4f} frames read exactly {np.mean(exact):.3f}"
                )
            running.clear()
            exact.clear()
    return encoder.eval(), losses


def _encoder_batch(
    scenes: Sequence[Any], n_scenes: int, per_scene: int, rng: np.random.Generator
) -> tuple[list[np.ndarray], torch.Tensor, torch.Tensor]:
    from tempcore.world.scene import render_frames

    frames: list[np.ndarray] = []
    cols, shps = [], []
    for i in rng.integers(len(scenes), size=n_scenes):
        scene = scenes[int(i)]
        windows = _scene_windows(scene)
        idx = rng.integers(scene.n_frames, size=per_scene)
        for j in range(per_scene // 2):
            if windows:
                inside = _frames_in(scene, windows[int(rng.integers(len(windows)))])
                if inside.size:
                    idx[j] = inside[rng.integers(inside.size)]
        times = idx / scene.fps
        shown = render_frames(scene, times)
        if rng.random() < 0.7:
            shown = degrade(shown, rng)
        col, shp = quadrant_targets(scene, times)
        grey = rng.random(per_scene) < 0.04
        shown[grey] = int(rng.integers(96, 161))
        col[grey] = 0
        shp[grey] = 0
        frames += list(shown)
        cols.append(col)
        shps.append(shp)
    return frames, torch.from_numpy(np.concatenate(cols)), torch.from_numpy(np.concatenate(shps))


def feature_bank(
    world: Any, encoder: FrameEncoder, seed: int = 0, *, degrade_p: float = 0.7, chunk: int = 2048
) -> dict[str, torch.Tensor]:
    """Encoder features (float16) of every frame of every scene of ``world``: ``{video_id: (n_frames, F)}``.

    A scene's frames are degraded like video with probability ``degrade_p`` (one draw per scene)."""
    from tempcore.world.scene import render_frames

    rng = np.random.default_rng([TRAIN_SEED_BASE, seed, 9])
    bank: dict[str, torch.Tensor] = {}
    with torch.inference_mode():
        for scene in world.scenes:
            frames = render_frames(scene, np.arange(scene.n_frames) / scene.fps)
            if rng.random() < degrade_p:
                frames = degrade(frames, rng)
            parts = [encoder(frames_tensor(frames[i : i + chunk])) for i in range(0, len(frames), chunk)]
            bank[scene.video_id] = torch.cat(parts).half()
    return bank


def grey_features(encoder: FrameEncoder) -> torch.Tensor:
    """``(256, F)``: encoder features of a uniform grey frame of each level 0..255."""
    levels = np.arange(256, dtype=np.uint8)[:, None, None, None] * np.ones((1, IMAGE_SIDE, IMAGE_SIDE, 3), np.uint8)
    with torch.inference_mode():
        return encoder(frames_tensor(list(levels)))


def gather_features(draws: Sequence[Draw], bank: Mapping[str, torch.Tensor], grey: torch.Tensor) -> torch.Tensor:
    """``(B, K, F)`` float32 features of a batch of draws (all with the same K)."""
    rows = []
    for d in draws:
        if d.indices is None:
            rows.append(grey[d.grey][None].expand(d.k, -1))
        else:
            rows.append(bank[d.video_id][list(d.indices)].float())
    return torch.stack(rows)


def build_nets(
    codec: TextCodec, seed: int, members: Sequence[str], encoder: FrameEncoder | None = None
) -> dict[str, AnswererNet]:
    """Freshly initialised members (member ``i`` from torch seed ``seed * 1000 + i``); frame members get a
    frozen copy of ``encoder``'s weights when given."""
    nets = {}
    colours, shapes = vocabulary()
    for i, name in enumerate(members):
        if name not in MEMBERS:
            raise ZooError(f"unknown zoo member {name!r} (known: {', '.join(MEMBERS)})")
        torch.manual_seed(seed * 1000 + i)
        net = AnswererNet(MEMBERS[name], codec.size, len(colours), len(shapes))
        if net.kind != "text":
            if encoder is not None:
                net.encoder.load_state_dict(encoder.state_dict())
            net.encoder.requires_grad_(False)
        nets[name] = net
    return nets


@dataclass
class TrainLog:
    """Mean training loss of each logged interval, per member (and ``"frame-encoder"``)."""

    losses: dict[str, list[float]]
    steps: int
    seconds: float


def train_members(
    nets: Mapping[str, AnswererNet],
    sampler: ExampleSampler,
    codec: TextCodec,
    bank: Mapping[str, torch.Tensor],
    grey: torch.Tensor,
    seed: int = 0,
    *,
    steps: int = 3000,
    batch_size: int = 128,
    lr: float = 3e-3,
    log_every: int = 100,
    log: Callable[[str], None] | None = print,
) -> dict[str, list[float]]:
    """Train the members' heads (the frame encoder stays frozen) on one shared stream of batches.

    Each step draws K from :data:`K_CHOICES` and ``batch_size`` examples, and takes one AdamW step per
    member (cosine decay after a 5% warm-up, gradient norm clipped at 1). Returns the mean loss of each
    logged interval per member."""
    opts = {m: torch.optim.AdamW(net.head_parameters(), lr=lr, weight_decay=1e-4) for m, net in nets.items()}
    rng = np.random.default_rng([TRAIN_SEED_BASE, seed, 7])
    losses: dict[str, list[float]] = {m: [] for m in nets}
    running: dict[str, list[float]] = {m: [] for m in nets}
    correct: dict[str, list[float]] = {m: [] for m in nets}
    for net in nets.values():
        net.train()
    start = time.perf_counter()
    for step in range(steps):
        k = int(K_CHOICES[int(rng.integers(len(K_CHOICES)))])
        draws = sampler.draws(batch_size, k, rng)
        features = gather_features(draws, bank, grey)
        questions, options, n = text_inputs(codec, [d.prompt for d in draws], [d.options for d in draws])
        answers = torch.tensor([d.answer for d in draws], dtype=torch.long)
        for name, net in nets.items():
            for group in opts[name].param_groups:
                group["lr"] = _cosine(lr, step, steps)
            scores = net(None, questions, options, n, features=features)
            loss = F.cross_entropy(scores, answers)
            opts[name].zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(net.head_parameters(), 1.0)
            opts[name].step()
            running[name].append(float(loss.detach()))
            correct[name].append(float((scores.detach().argmax(-1) == answers).float().mean()))
        if (step + 1) % log_every == 0 or step + 1 == steps:
            parts = []
            for name in nets:
                losses[name].append(float(np.mean(running[name])))
                parts.append(f"{name} {losses[name][-1]:.3f}/{np.mean(correct[name]):.2f}")
                running[name].clear()
                correct[name].clear()
            if log is not None:
                log(f"step {step + 1}/{steps} ({time.perf_counter() - start:.0f}s) loss/acc: " + "  ".join(parts))
    for net in nets.values():
        net.eval()
    return losses


def train_answerers(
    out_dir: str | Path | None,
    seed: int = 0,
    *,
    steps: int = 3000,
    encoder_steps: int = 600,
    members: Sequence[str] = tuple(MEMBERS),
    n_questions: int = 8000,
    batch_size: int = 128,
    log_every: int = 100,
    log: Callable[[str], None] | None = print,
    world: Any = None,
) -> tuple[dict[str, AnswererNet], TextCodec, TrainLog]:
    """Train the whole zoo (frame encoder, then every member) from ``seed``; save into ``out_dir`` if given.

    Deterministic for a seed on a given machine and torch thread count."""
    start = time.perf_counter()
    world = world if world is not None else training_world(seed, n_questions)
    sampler = ExampleSampler(world)
    codec = TextCodec.build(sampler.prompts())
    losses: dict[str, list[float]] = {}
    encoder = None
    if any(MEMBERS.get(m) != "text" for m in members):
        encoder, losses["frame-encoder"] = train_frame_encoder(
            world, seed, steps=encoder_steps, log_every=log_every, log=log
        )
        t0 = time.perf_counter()
        bank = feature_bank(world, encoder, seed)
        grey = grey_features(encoder)
        if log is not None:
            frames = sum(int(v.shape[0]) for v in bank.values())
            log(f"feature bank: {frames} frames of {len(bank)} videos ({time.perf_counter() - t0:.0f}s)")
    else:
        bank, grey = {}, torch.zeros(256, 1)
    nets = build_nets(codec, seed, members, encoder)
    losses.update(
        train_members(nets, sampler, codec, bank, grey, seed, steps=steps, batch_size=batch_size,
                      log_every=log_every, log=log)
    )
    train_log = TrainLog(losses, steps, time.perf_counter() - start)
    if out_dir is not None:
        for name, net in nets.items():
            save_answerer(
                out_dir, name, net, codec,
                {"trained": {"seed": seed, "steps": steps, "encoder_steps": encoder_steps,
                             "n_questions": len(sampler.questions), "train_world_seed": world.config.seed,
                             "final_loss": losses[name][-1] if losses.get(name) else None}},
            )
    return nets, codec, train_log


def train_all(
    out_dir: str | Path,
    seed: int = 0,
    *,
    steps: int = 3000,
    encoder_steps: int = 600,
    hf_steps: int | None = None,
    include_hf: bool = True,
    log: Callable[[str], None] | None = print,
) -> dict[str, Any]:
    """Rebuild every answerer from ``seed`` into ``out_dir``: ``answerers/`` (the zoo members) and the
    HF answerer's folder (:data:`tempcore.world.hf_answerer.HF_NAME`). Returns a summary (seconds,
    final losses, paths)."""
    out = Path(out_dir)
    start = time.perf_counter()
    _, _, zoo_log = train_answerers(out / "answerers", seed, steps=steps, encoder_steps=encoder_steps, log=log)
    summary: dict[str, Any] = {
        "answerers": str(out / "answerers"),
        "answerer_seconds": round(zoo_log.seconds, 1),
        "final_loss": {m: v[-1] for m, v in zoo_log.losses.items() if v},
    }
    if include_hf:
        from tempcore.world.hf_answerer import HF_NAME, train_hf_answerer

        kwargs = {} if hf_steps is None else {"steps": hf_steps}
        hf_log = train_hf_answerer(out / HF_NAME, seed, log=log, **kwargs)
        summary["hf"] = str(out / HF_NAME)
        summary["hf_seconds"] = round(hf_log.seconds, 1)
        summary["final_loss"][HF_NAME] = hf_log.losses[-1] if hf_log.losses else None
    summary["seconds"] = round(time.perf_counter() - start, 1)
    return summary


# --- evaluation ---------------------------------------------------------------------------------


def evaluate(
    models: Mapping[str, Any],
    world: Any,
    *,
    picks: Sequence[str] = ("uniform", "grey", "dense_in_window"),
    k: int = 8,
    seed: int = 0,
    frames: Callable[[Any, list[int]], np.ndarray] | None = None,
    batch_size: int = 32,
) -> dict[str, dict[str, dict[str, dict[str, float]]]]:
    """Per model x pick x family: accuracy (argmax) and mean probability on the correct option.

    ``picks`` are :data:`PICKS` names plus ``dense_in_window`` (K consecutive frames centred in the
    question's window; a uniform pick for questions without one). ``frames(scene, indices)`` supplies
    frames (default: rendered in memory; pass a decoder to evaluate on the encoded videos). Every model
    sees the same frames. Returns ``{model: {pick: {family: {"acc", "p_correct", "n"}}}}`` with an
    ``"all"`` family too.
    """
    from tempcore.prompts import render_prompt
    from tempcore.world.scene import render_frames

    scenes = world.scene_map()
    out: dict[str, dict[str, dict[str, dict[str, float]]]] = {m: {} for m in models}
    for pick in picks:
        rng = np.random.default_rng([seed, zlib.crc32(pick.encode())])
        examples = []
        for wq in world.questions:
            scene = scenes[wq.video_id]
            q = wq.question
            if pick == "dense_in_window":
                if q.window is None:
                    idx: list[int] | None = pick_indices(scene, None, "uniform", k, rng)
                else:
                    inside = _frames_in(scene, q.window)
                    centre = int(inside[inside.size // 2])
                    start = int(np.clip(centre - k // 2, 0, max(0, scene.n_frames - k)))
                    idx = list(range(start, min(scene.n_frames, start + k)))
            else:
                idx = pick_indices(scene, q.window, pick, k, rng)
            if idx is None:
                w, h = scene.size
                images = np.full((k, h, w, 3), GREY, dtype=np.uint8)
            else:
                images = frames(scene, idx) if frames is not None else render_frames(scene, np.array(idx) / scene.fps)
            prompt = render_prompt(q.question, q.options, "default")
            examples.append(
                Example(images, (), prompt, q.options, q.answer, q.family, q.planted, pick, wq.sample_id)
            )
        requests = [
            ModelRequest(images=tuple(e.frames), prompt=e.prompt, options=e.options, key=e.sample_id)
            for e in examples
        ]
        for name, model in models.items():
            responses: list[ModelResponse] = []
            for i in range(0, len(requests), batch_size):
                responses += model.answer(requests[i : i + batch_size], method="option_scores")
            out[name][pick] = _per_family(examples, responses)
    return out


def _per_family(examples: Sequence[Example], responses: Sequence[ModelResponse]) -> dict[str, dict[str, float]]:
    acc: dict[str, list[float]] = {}
    prob: dict[str, list[float]] = {}
    for e, r in zip(examples, responses):
        if not r.ok or r.option_probs is None:
            raise ZooError(f"sample {e.sample_id}: the model failed: {r.error}")
        probs = r.option_probs
        right = float(int(np.argmax(probs)) == e.answer)
        for fam in (e.family, "all"):
            acc.setdefault(fam, []).append(right)
            prob.setdefault(fam, []).append(float(probs[e.answer]))
    return {
        fam: {"acc": float(np.mean(acc[fam])), "p_correct": float(np.mean(prob[fam])), "n": len(acc[fam])}
        for fam in acc
    }


def format_table(results: Mapping[str, Mapping[str, Mapping[str, Mapping[str, float]]]], key: str = "acc") -> str:
    """A Markdown table: one row per model x pick, one column per family (``key``: acc or p_correct)."""
    families: list[str] = []
    for per_pick in results.values():
        for per_family in per_pick.values():
            for fam in per_family:
                if fam not in families and fam != "all":
                    families.append(fam)
    families.append("all")
    lines = ["| model | frames | " + " | ".join(families) + " |", "|" + "---|" * (len(families) + 2)]
    for model, per_pick in results.items():
        for pick, per_family in per_pick.items():
            cells = [f"{per_family[f][key]:.2f}" if f in per_family else "" for f in families]
            lines.append(f"| {model} | {pick} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


__all__ = [
    "ANSWERER_DIR",
    "FORMAT",
    "K_CHOICES",
    "MEMBERS",
    "PICKS",
    "Answerer",
    "AnswererNet",
    "Draw",
    "Example",
    "ExampleSampler",
    "FrameEncoder",
    "TextCodec",
    "TrainLog",
    "ZooError",
    "ZooModel",
    "quadrant_targets",
    "evaluate",
    "feature_bank",
    "format_table",
    "frames_tensor",
    "load_answerer",
    "pick_indices",
    "question_text",
    "save_answerer",
    "train_all",
    "train_answerers",
    "train_frame_encoder",
    "train_members",
    "vocabulary",
    "training_world",
    "zoo_specs",
]
