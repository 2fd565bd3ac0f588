"""Does an encoder's frame selection find the planted evidence? MaxProb / MinProb vs planted windows.

For every question of a world with an evidence window (``brief_colour``: the triangle's
appearance; the visual-bias families: the circle's absence or recolouring), the real pipeline
scores every decoded frame of the video (:func:`tempcore.run.frame_scoring.score_samples`, Eq. 1, in ``mode``)
and selects K frames with the paper's MaxProb and MinProb (:mod:`tempcore.selection`). A frame is
*in the window* when its timestamp t satisfies ``start <= t < end`` (the frames that show the event).

Reported per family group (``temporally_grounded``: brief_colour; ``visual_bias``: circle_left +
circle_recoloured), as fractions of its questions:

- ``maxprob_any`` / ``minprob_any``: at least one of the K selected frames is in the window;
- ``maxprob_top1``: the first frame MaxProb picks (the best-scoring one) is in the window;
- ``maxprob_frac`` / ``minprob_frac``: mean fraction of the K frames that are in the window.

The planted design needs, for temporally grounded questions, ``maxprob_any`` near 1 and
``minprob_any`` near 0; for visual-bias questions the reverse.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tempcore.world.generator import WorldManifest

GROUPS = {"temporally_grounded": ("brief_colour",), "visual_bias": ("circle_left", "circle_recoloured")}


def _in_window(timestamps: Sequence[float], window: Sequence[float]) -> np.ndarray:
    t = np.asarray(timestamps, dtype=np.float64)
    return (t >= window[0] - 1e-6) & (t < window[1] - 1e-6)


def probe_encoder(
    encoder: Any,
    world: WorldManifest,
    *,
    k: int = 8,
    mode: str = "qa",
    fps: float = 10.0,
    cache: Any = None,
) -> dict[str, Any]:
    """In-window rates of MaxProb / MinProb frames for ``world``'s windowed questions (see module doc).

    Returns ``{"k", "mode", "encoder", "groups": {group: {"n", "maxprob_any", "maxprob_top1",
    "maxprob_frac", "minprob_any", "minprob_frac"}}, "failures": [...]}``.
    """
    from tempcore.run.frame_scoring import FrameScores, score_samples
    from tempcore.selection import maxprob, minprob, rank_frames

    samples = [s for s in world.samples() if s.metadata.get("window") is not None]
    family_group = {f: g for g, fams in GROUPS.items() for f in fams}
    rows: dict[str, list[dict[str, float]]] = {g: [] for g in GROUPS}
    failures: list[str] = []
    by_id = {s.sample_id: s for s in samples}
    for result in score_samples(samples, encoder, mode, fps=fps, cache=cache, video_root=world.root):
        if not isinstance(result, FrameScores):
            failures.append(str(result))
            continue
        sample = by_id[result.sample_id]
        group = family_group.get(sample.metadata["family"])
        if group is None:
            continue
        window = sample.metadata["window"]
        plus = maxprob(result.timestamps, result.s, k, sample_id=sample.sample_id)
        minus = minprob(result.timestamps, result.s, k, sample_id=sample.sample_id)
        top = rank_frames(result.timestamps, result.s, 1, sample_id=sample.sample_id)
        inside_plus = _in_window(plus.timestamps, window)
        inside_minus = _in_window(minus.timestamps, window)
        rows[group].append(
            {
                "maxprob_any": float(inside_plus.any()),
                "maxprob_top1": float(_in_window([result.timestamps[int(top[0])]], window)[0]),
                "maxprob_frac": float(inside_plus.mean()),
                "minprob_any": float(inside_minus.any()),
                "minprob_frac": float(inside_minus.mean()),
            }
        )
    groups: dict[str, dict[str, float | int | None]] = {}
    for g, items in rows.items():
        stats: dict[str, float | int | None] = {"n": len(items)}
        for key in ("maxprob_any", "maxprob_top1", "maxprob_frac", "minprob_any", "minprob_frac"):
            stats[key] = float(np.mean([r[key] for r in items])) if items else None
        groups[g] = stats
    return {"k": k, "mode": mode, "encoder": getattr(encoder, "name", str(encoder)), "groups": groups,
            "failures": failures}


def format_probe(result: dict[str, Any]) -> str:
    """The probe as text."""
    lines = [f"encoder {result['encoder']}, K={result['k']}, {result['mode']}-mode "
             f"(fraction of questions / of frames inside the planted window)"]
    head = f"{'group':<22}{'n':>5}{'max any':>9}{'max top1':>10}{'max frac':>10}{'min any':>9}{'min frac':>10}"
    lines += [head, "-" * len(head)]
    for g, s in result["groups"].items():
        def f(key: str, s: dict[str, Any] = s) -> str:
            v = s[key]
            return "-" if v is None else f"{v:.3f}"

        lines.append(f"{g:<22}{s['n']:>5}{f('maxprob_any'):>9}{f('maxprob_top1'):>10}{f('maxprob_frac'):>10}"
                     f"{f('minprob_any'):>9}{f('minprob_frac'):>10}")
    if result["failures"]:
        lines.append(f"{len(result['failures'])} sample(s) could not be scored; first: {result['failures'][0]}")
    return "\n".join(lines)


__all__ = ["GROUPS", "format_probe", "probe_encoder"]
