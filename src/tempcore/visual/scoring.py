"""Statistics of visual-option questions (paper 002 §4, App. E, F): pure functions, then one
:func:`score_predictions` over a tidy predictions table and the built annotations.

Choices, stated once:

- **Accuracy** = correct / questions; a parse failure is wrong. **Wilson** 95% interval (no continuity
  correction, :func:`tempcore.diagnostics.stats.wilson_interval`). **Bootstrap**: percentile, seeded,
  ``B = 10,000`` by default; the resampling unit is the question (default) or the video (``unit=
  "video"``: videos are drawn with replacement and accuracy is pooled over their questions).
- **Chance** = the mean over questions of ``1 / number of options`` (25% for four options, 50% yes/no).
- **Signal detection** (CMD): signal trials = ``complete`` stimuli (expected "yes"), noise trials =
  the incomplete ones. ``H`` = "yes" on signal / signal trials (= sensitivity), ``FA`` = "yes" on
  noise / noise trials (specificity = 1 - FA); a parse failure counts as not "yes".
  ``d' = z(H) - z(FA)``, ``c = -(z(H) + z(FA)) / 2`` (``c > 0``: conservative). The paper gives no
  correction for rates of 0 or 1; here the **log-linear** correction (Hautus 1995) is used:
  ``H = (hits + 0.5) / (signal + 1)``, ``FA = (false alarms + 0.5) / (noise + 1)``, applied to both
  rates whenever either raw rate is 0 or 1 (``correction="extreme"``, the default), to every group
  (``"always"``), or never (``"none"``: d' / c are then null for extreme rates). The reported
  ``hit_rate`` / ``false_alarm_rate`` are the raw rates; ``corrected`` says whether d' / c used the
  correction.
- **Modal perplexity** of one question = ``exp(H(p))`` with ``p`` the model's probabilities over the
  option letters (natural log; 1 = certain, ``n`` = uniform); a group reports the mean over the
  questions that have probabilities (null when none has).
- **Errors by distractor type**: the share of the wrong answers that picked each option type (from
  the annotations' ``option_types``; for CMD the stimulus of the missed question, so a false alarm
  on ``incomplete_with_implication`` is told apart from one on ``..._without_implication``); parse
  failures are their own key ``parse_failure``. CMD groups also report ``false_alarm_by_stimulus``.
- **Visual vs text gap** per model, task and strategy (the visual and the text form of a question
  differ in the number of images, so their condition keys differ): ``accuracy(visual) -
  accuracy(text)`` over the pairs of questions (``pair``) both answered, with a paired percentile bootstrap interval (same B and seed).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from statistics import NormalDist
from typing import Any

import numpy as np

from tempcore.diagnostics.stats import bootstrap_mean, paired_bootstrap, wilson_interval
from tempcore.errors import TempcoreError

DEFAULT_BOOT = 10_000
CORRECTIONS = ("extreme", "always", "none")


class VisualScoreError(TempcoreError):
    """Predictions cannot be scored as visual-option questions (names the file / sample and why)."""


def _num(x: float | None) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def accuracy_interval(correct: Sequence[int], confidence: float = 0.95) -> tuple[float | None, list[float | None]]:
    c = np.asarray(correct, dtype=float)
    if c.size == 0:
        return None, [None, None]
    lo, hi = wilson_interval(c.sum(), c.size, confidence)
    return float(c.mean()), [_num(float(lo)), _num(float(hi))]


def bootstrap_accuracy(
    correct: Sequence[int],
    units: Sequence[str] | None = None,
    *,
    n_boot: int = DEFAULT_BOOT,
    seed: int = 0,
    confidence: float = 0.95,
) -> list[float | None]:
    """Percentile bootstrap interval of accuracy; ``units`` (e.g. video ids) makes it a cluster bootstrap."""
    c = np.asarray(correct, dtype=float)
    if c.size == 0:
        return [None, None]
    if units is None:
        r = bootstrap_mean(c, n_boot=n_boot, confidence=confidence, seed=seed)
        return [_num(r.low), _num(r.high)]
    keys, inverse = np.unique(np.asarray(units, dtype=object).astype(str), return_inverse=True)
    hits = np.bincount(inverse, weights=c, minlength=len(keys))
    sizes = np.bincount(inverse, minlength=len(keys)).astype(float)
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(len(keys), np.full(len(keys), 1.0 / len(keys)), size=n_boot)
    acc = (draws @ hits) / (draws @ sizes)
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(acc, [alpha, 1.0 - alpha])
    return [float(lo), float(hi)]


def z(p: float) -> float:
    """The standard normal quantile (probit)."""
    return NormalDist().inv_cdf(p)


def d_prime(hit_rate: float, false_alarm_rate: float) -> float:
    """``z(H) - z(FA)``; rates must lie strictly inside (0, 1). H = 0.57, FA = 0.37 gives 0.508."""
    return z(hit_rate) - z(false_alarm_rate)


def criterion(hit_rate: float, false_alarm_rate: float) -> float:
    """``-(z(H) + z(FA)) / 2``. H = 0.57, FA = 0.37 gives +0.078 (a slight "no" bias)."""
    return -(z(hit_rate) + z(false_alarm_rate)) / 2.0


def signal_detection(hits: int, signal: int, false_alarms: int, noise: int, correction: str = "extreme") -> dict[str, Any]:
    """Hit / false-alarm rates, sensitivity, specificity, d' and c (see the module docstring)."""
    if correction not in CORRECTIONS:
        raise VisualScoreError(f"unknown correction {correction!r}; choose from {', '.join(CORRECTIONS)}")
    h = hits / signal if signal else None
    fa = false_alarms / noise if noise else None
    out: dict[str, Any] = {"hit_rate": h, "false_alarm_rate": fa, "sensitivity": h,
                           "specificity": None if fa is None else 1.0 - fa, "d_prime": None, "criterion": None,
                           "signal": signal, "noise": noise, "correction": "log-linear (Hautus 1995)",
                           "corrected": False}
    if h is None or fa is None:
        return out
    extreme = h in (0.0, 1.0) or fa in (0.0, 1.0)
    if correction == "always" or (correction == "extreme" and extreme):
        hc, fc = (hits + 0.5) / (signal + 1), (false_alarms + 0.5) / (noise + 1)
        out["corrected"] = True
    elif extreme:
        return out
    else:
        hc, fc = h, fa
    out["d_prime"], out["criterion"] = d_prime(hc, fc), criterion(hc, fc)
    return out


def modal_perplexity(probs: Sequence[float]) -> float:
    """``exp(entropy)`` of a distribution over the options (renormalised; 1 = certain, n = uniform)."""
    p = np.asarray(probs, dtype=float)
    if p.size == 0 or np.any(p < 0) or not p.sum() > 0:
        raise VisualScoreError(f"not a probability vector: {list(probs)}")
    p = p / p.sum()
    nz = p[p > 0]
    return float(np.exp(-(nz * np.log(nz)).sum()))


def error_shares(chosen_types: Iterable[str]) -> dict[str, float]:
    """Share of each chosen (wrong) option type among the errors, sorted by type."""
    items = list(chosen_types)
    if not items:
        return {}
    return {t: items.count(t) / len(items) for t in sorted(set(items))}


# --- the table ------------------------------------------------------------------------------


def _rows(table: Any) -> list[dict[str, Any]]:
    cols = [c for c in ("benchmark", "sample_id", "model", "condition", "strategy", "correct", "answer",
                        "option_probs", "parse_error") if c in table.column_names]
    rows: list[dict[str, Any]] = table.select(cols).to_pylist()
    return rows


def score_predictions(
    table: Any,
    samples: Mapping[str, Any],
    *,
    unit: str = "question",
    n_boot: int = DEFAULT_BOOT,
    seed: int = 0,
    confidence: float = 0.95,
    correction: str = "extreme",
) -> dict[str, Any]:
    """``{"groups": [...], "gaps": [...], "unmatched": n}`` for a tidy predictions table.

    ``samples`` maps sample id -> the built row's metadata (``task``, ``option_modality``,
    ``option_types``, ``question_type``, ``video_id``, ``pair``, ``stimulus``, ...) plus ``answer``
    and ``n_options``. Groups are (model, task, option modality, condition).
    """
    import json as _json

    if unit not in ("question", "video"):
        raise VisualScoreError(f"unit must be question or video, not {unit!r}")
    groups: dict[tuple[str, str, str, str], list[dict[str, Any]]] = {}
    unmatched = 0
    for r in _rows(table):
        meta = samples.get(r["sample_id"])
        if meta is None:
            unmatched += 1
            continue
        cond = r.get("condition") or r.get("strategy") or ""
        groups.setdefault((r["model"], meta["task"], meta.get("option_modality", "visual"), cond), []).append(
            {**r, "meta": meta})
    out = []
    correct_of: dict[tuple[str, str, str], dict[str, int]] = {}
    for (model, task, modality, cond), rows in sorted(groups.items()):
        correct = [int(r["correct"]) for r in rows]
        acc, wil = accuracy_interval(correct, confidence)
        units = [str(r["meta"].get("video_id") or r["sample_id"]) for r in rows] if unit == "video" else None
        errors = []
        for r in rows:
            if r["correct"]:
                continue
            a = r.get("answer")
            types = r["meta"].get("option_types") or []
            if a is None:
                errors.append("parse_failure")
            elif task == "cmd":  # the distractor of a yes/no question is its stimulus
                errors.append(str(r["meta"].get("stimulus")))
            else:
                errors.append(types[a] if a < len(types) else f"option_{a}")
        ppl = []
        for r in rows:
            probs = r.get("option_probs")
            if isinstance(probs, str):
                probs = _json.loads(probs)
            if probs:
                ppl.append(modal_perplexity(probs))
        sdt = None
        if task == "cmd":
            yes = [r.get("answer") == 0 for r in rows]  # options are ("Yes", "No")
            signal = [r["meta"].get("stimulus") == "complete" for r in rows]
            sdt = signal_detection(sum(y and s for y, s in zip(yes, signal)), sum(signal),
                                   sum(y and not s for y, s in zip(yes, signal)), len(rows) - sum(signal),
                                   correction)
            sdt["false_alarm_by_stimulus"] = {
                st: sum(y for y, r in zip(yes, rows) if r["meta"].get("stimulus") == st)
                / sum(r["meta"].get("stimulus") == st for r in rows)
                for st in sorted({r["meta"].get("stimulus") for r in rows} - {"complete", None})
            }
        by_type: dict[str, Any] = {}
        for qt in sorted({r["meta"].get("question_type") for r in rows} - {None}):
            sub = [int(r["correct"]) for r in rows if r["meta"].get("question_type") == qt]
            a, w = accuracy_interval(sub, confidence)
            by_type[qt] = {"n": len(sub), "accuracy": a, "wilson": w}
        out.append({
            "model": model, "task": task, "options": modality, "condition": cond, "n": len(rows),
            "accuracy": acc, "wilson": wil,
            "bootstrap": bootstrap_accuracy(correct, units, n_boot=n_boot, seed=seed, confidence=confidence),
            "bootstrap_unit": unit, "chance": float(np.mean([1.0 / r["meta"]["n_options"] for r in rows])),
            "errors": len(errors), "errors_by_distractor": error_shares(errors), "sdt": sdt,
            "perplexity": float(np.mean(ppl)) if ppl else None, "perplexity_n": len(ppl),
            "by_question_type": by_type,
        })
        for r in rows:  # pairs are matched by strategy: the visual and text forms differ in k
            mine = correct_of.setdefault((model, task, str(r.get("strategy") or cond)), {})
            if r["sample_id"] in mine:
                raise VisualScoreError(
                    f"model {model}: sample {r['sample_id']} has several predictions of strategy "
                    f"{r.get('strategy')!r}; score one condition at a time"
                )
            mine[r["sample_id"]] = int(r["correct"])
    gaps = []
    for (model, task, cond), by_id in sorted(correct_of.items()):
        vis, txt = [], []
        for sid, c in sorted(by_id.items()):
            meta = samples[sid]
            pair = meta.get("pair")
            if meta.get("option_modality") == "visual" and pair and pair in by_id:
                vis.append(c)
                txt.append(by_id[pair])
        if not vis:
            continue
        pb = paired_bootstrap(txt, vis, n_boot=n_boot, confidence=confidence, seed=seed)
        gaps.append({"model": model, "task": task, "strategy": cond, "n_pairs": len(vis),
                     "visual": float(np.mean(vis)), "text": float(np.mean(txt)),
                     "gap": _num(pb.estimate), "bootstrap": [_num(pb.low), _num(pb.high)]})
    return {"groups": out, "gaps": gaps, "unmatched": unmatched, "n_boot": n_boot, "seed": seed}


def samples_from_annotations(path: Any) -> dict[str, dict[str, Any]]:
    """Sample id -> metadata (+ ``answer``, ``n_options``) of a built ``annotations.jsonl`` (generic loader)."""
    from tempcore.benchmarks import load_benchmark

    loaded = load_benchmark("generic", path)
    out = {}
    for s in loaded.samples:
        if "task" not in s.metadata:
            raise VisualScoreError(f"{path}: sample {s.sample_id} has no 'task': not a visual-option build")
        out[s.sample_id] = {**s.metadata, "answer": s.answer, "n_options": len(s.options)}
    return out


__all__ = [
    "CORRECTIONS",
    "DEFAULT_BOOT",
    "VisualScoreError",
    "accuracy_interval",
    "bootstrap_accuracy",
    "criterion",
    "d_prime",
    "error_shares",
    "modal_perplexity",
    "samples_from_annotations",
    "score_predictions",
    "signal_detection",
]
