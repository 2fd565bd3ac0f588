"""How well an audit recovers the categories planted in a synthetic world.

``recovery(planted, recovered)`` compares, per sample id, the category planted by the generator with
the category the diagnosis assigned (:func:`tempcore.diagnostics.diagnose`, ``Diagnosis.category``):

- ``confusion[planted][recovered]``: counts, every planted category (trivial, frame_agnostic,
  temporally_grounded, visual_bias) x every recovered category (the same four + ``incomplete``),
  zeros included, so the shape never changes;
- ``temporally_sensitive``: precision and recall of "Temporally Sensitive" (temporally grounded or
  visual bias, the paper's TempCore subset) as a binary decision;
- ``trivial``: precision and recall of "Trivial".

Choices (the paper defines none of this; it cannot observe the truth):

- A planted sample with no recovered category, or recovered as ``incomplete`` (some model lacks a
  needed prediction), is counted in the ``incomplete`` column: it is *not* predicted positive, so it
  lowers recall, never precision.
- precision = TP / (TP + FP) over the samples recovered as positive; recall = TP / (TP + FN) over the
  samples planted positive. With no recovered positives precision is undefined and reported as
  ``None`` (JSON ``null``), never as 0 or 1; likewise recall with no planted positives.
- A recovered sample id that was never planted, or an unknown category name, is an error
  (:class:`RecoveryError`): predictions of another world must not be scored against this one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tempcore.errors import TempcoreError

PLANTED = ("trivial", "frame_agnostic", "temporally_grounded", "visual_bias")
RECOVERED_CATEGORIES = (*PLANTED, "incomplete")
TEMPORALLY_SENSITIVE = frozenset({"temporally_grounded", "visual_bias"})


class RecoveryError(TempcoreError):
    """Planted and recovered categories cannot be compared (names the sample ids and the reason)."""


def _ratio(num: int, den: int) -> float | None:
    return None if den == 0 else num / den


def precision_recall(pairs: list[tuple[str, str]], positive: frozenset[str]) -> dict[str, float | None]:
    """Precision and recall of "recovered in ``positive``" against "planted in ``positive``"."""
    tp = sum(1 for p, r in pairs if p in positive and r in positive)
    predicted = sum(1 for _, r in pairs if r in positive)
    actual = sum(1 for p, _ in pairs if p in positive)
    return {"precision": _ratio(tp, predicted), "recall": _ratio(tp, actual)}


def recovery(planted: Mapping[str, str], recovered: Mapping[str, str]) -> dict[str, Any]:
    """Confusion matrix and precision / recall of planted vs recovered categories.

    ``planted``: ``{sample_id: category}`` from the world (``WorldManifest.planted()``, or the
    ``planted`` field of its annotations); ``recovered``: ``{sample_id: category}`` from a diagnosis.
    Returns ``{"temporally_sensitive": {"precision", "recall"}, "trivial": {"precision", "recall"},
    "confusion": {planted: {recovered: count}}}`` (see the module docstring for the conventions).
    """
    bad = sorted({c for c in planted.values() if c not in PLANTED})
    if bad:
        raise RecoveryError(f"unknown planted categor{'ies' if len(bad) > 1 else 'y'} {bad}; known: {PLANTED}")
    bad = sorted({c for c in recovered.values() if c not in RECOVERED_CATEGORIES})
    if bad:
        raise RecoveryError(
            f"unknown recovered categor{'ies' if len(bad) > 1 else 'y'} {bad}; known: {RECOVERED_CATEGORIES}"
        )
    foreign = sorted(set(recovered) - set(planted))
    if foreign:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise RecoveryError(f"{len(foreign)} recovered sample(s) were never planted: {shown}")
    pairs = [(p, recovered.get(sid, "incomplete")) for sid, p in planted.items()]
    confusion = {p: dict.fromkeys(RECOVERED_CATEGORIES, 0) for p in PLANTED}
    for p, r in pairs:
        confusion[p][r] += 1
    return {
        "temporally_sensitive": precision_recall(pairs, TEMPORALLY_SENSITIVE),
        "trivial": precision_recall(pairs, frozenset({"trivial"})),
        "confusion": confusion,
    }


ORDER_BLIND_KINDS = frozenset({"text", "mean", "max", "attn"})
"""Zoo architectures blind to frame order *by construction* (:mod:`tempcore.world.answerers`): the
text model sees no frames; ``mean`` / ``max`` pool frames; ``attn`` attends over frames without
positions. Their answers to the same frames in any order are the same (up to float rounding), so
their OS is 0 on every sample, whatever the sample needs."""


def order_blind_models(models: Any) -> list[str]:
    """The models among ``models`` (display names) that are zoo members of an order-blind kind."""
    from tempcore.world.answerers.constants import MEMBERS

    return [m for m in models if MEMBERS.get(str(m)) in ORDER_BLIND_KINDS]


def order_recovery(
    table: Any,
    planted: Mapping[str, bool],
    *,
    scoring: str = "soft",
    models: Any = None,
    video: str = "uniform",
    tau: float = 0.15,
) -> dict[str, Any]:
    """Precision and recall of the order-sensitive samples recovered from ``table`` against those planted.

    ``planted``: ``{sample_id: planted order-sensitive}`` (the world's
    :data:`~tempcore.world.families.ORDER_SENSITIVE_FAMILIES`); ``table``: tidy predictions with rows
    of ``video`` and of ``shuffled`` and / or ``reversed`` (of the same base frames). Recovered
    order-sensitive is the analysis of ``tempcore audit ablations`` unchanged
    (:func:`tempcore.diagnostics.ablations.order_sensitivity`: ``OS_i = 1/|M| sum_m (correct in order -
    correct reordered)``, Key at ``tau`` under shuffled or under reversed), over the model panel
    ``models`` (default every model of the table). ``scoring``: ``hard`` is the analysis' own 0/1
    ``correct``; ``soft`` replaces it by ``p_correct`` (the probability on the correct option), the
    same OS formula over probabilities. Samples of ``planted`` without an OS (no rows, or a panel model
    lacking one) count as not recovered (they lower recall, never precision), as in :func:`recovery`.

    Returns ``{"precision", "recall", "n", "planted", "recovered", "models", "scoring", "tau",
    "os": {sample_id: {"shuffled", "reversed"}}}`` (``None`` for an undefined ratio or OS)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from tempcore.diagnostics.ablations import REORDERINGS, Prepared, order_sensitivity, prepare

    if scoring not in ("soft", "hard"):
        raise RecoveryError(f"order recovery scores soft or hard, not {scoring!r}")
    if models is not None:
        table = table.filter(pc.is_in(table.column("model"), value_set=pa.array(sorted(models), type=pa.string())))
    foreign = sorted(set(table.column("sample_id").to_pylist()) - set(planted))
    if foreign:
        raise RecoveryError(f"{len(foreign)} sample(s) of the predictions were never planted: {', '.join(foreign[:5])}")
    prep = prepare(table, [video, *REORDERINGS])
    if scoring == "soft":
        enc = prep.enc
        conds = prep.conditions
        n_c, n_s, n_m = prep.correct.shape
        strategy = enc.table.column("strategy").to_pylist()
        cond = np.array([conds.index(x) if x in conds else -1 for x in strategy], dtype=np.int64)
        keep = cond >= 0
        if "rotation" in enc.table.column_names:
            keep &= np.nan_to_num(enc.numeric("rotation"), nan=0.0) == 0
        keep &= np.asarray(pc.is_null(enc.table.column("window")).to_numpy(zero_copy_only=False), dtype=bool)
        p = enc.numeric("p_correct")
        if np.isnan(p[keep]).any():
            bad = enc.sample_id[int(enc.sample_code[np.flatnonzero(keep & np.isnan(p))[0]])]
            raise RecoveryError(f"soft order recovery needs p_correct, missing for sample {bad!r}")
        soft = np.full(n_c * n_s * n_m, np.nan, dtype=np.float64)
        cell = (cond[keep] * n_s + enc.sample_code[keep]) * n_m + enc.model_code[keep]
        soft[cell] = p[keep]
        prep = Prepared(enc, conds, soft.reshape(n_c, n_s, n_m), prep.answer, prep.task_code, prep.tasks,
                        prep.n_options)
    result = order_sensitivity(prep, video=video, tau=tau)
    ids = [str(x) for x in result.sample_id]
    defined = np.zeros(len(ids), dtype=bool)
    for values in result.os.values():
        defined |= ~np.isnan(values)
    recovered = {sid: bool(flag) for sid, flag, d in zip(ids, result.order_sensitive, defined) if d}
    pairs = [("pos" if want else "neg", "pos" if recovered.get(sid, False) else "neg") for sid, want in planted.items()]
    pr = precision_recall(pairs, frozenset({"pos"}))

    def value(a: Any, i: int) -> float | None:
        x = float(a[i])
        return None if x != x else x

    return {
        **pr,
        "n": len(planted),
        "planted": sum(1 for v in planted.values() if v),
        "recovered": sum(1 for v in recovered.values() if v),
        "models": list(prep.models),
        "scoring": scoring,
        "tau": tau,
        "os": {sid: {name: value(result.os[name], i) for name in result.os} for i, sid in enumerate(ids)},
    }


def format_recovery(result: Mapping[str, Any], title: str = "") -> str:
    """The recovery as a text table (what ``tempcore world validate`` prints)."""
    short = {"trivial": "Trivial", "frame_agnostic": "Fr.Agn", "temporally_grounded": "Temp.Grnd",
             "visual_bias": "Vis.Bias", "incomplete": "incompl."}
    width = max(len("planted \\ recovered"), *(len(p) for p in PLANTED))
    head = "planted \\ recovered".ljust(width) + "".join(f"{short[r]:>10}" for r in RECOVERED_CATEGORIES)
    lines = [title] if title else []
    lines += [head, "-" * len(head)]
    for p in PLANTED:
        row = result["confusion"][p]
        lines.append(p.ljust(width) + "".join(f"{row[r]:>10}" for r in RECOVERED_CATEGORIES))

    def num(x: float | None) -> str:
        return "undefined" if x is None else f"{x:.3f}"

    for key, label in (("temporally_sensitive", "Temporally Sensitive"), ("trivial", "Trivial")):
        pr = result[key]
        lines.append(f"{label}: precision {num(pr['precision'])}, recall {num(pr['recall'])}")
    return "\n".join(lines)


__all__ = [
    "ORDER_BLIND_KINDS",
    "PLANTED",
    "RECOVERED_CATEGORIES",
    "TEMPORALLY_SENSITIVE",
    "RecoveryError",
    "format_recovery",
    "order_blind_models",
    "order_recovery",
    "precision_recall",
    "recovery",
]
