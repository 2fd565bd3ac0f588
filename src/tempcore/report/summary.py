"""The report's opening card: the audit's answer before its tables.

Per benchmark: TPI with its seeded percentile bootstrap interval
(:func:`tempcore.diagnostics.robustness.tpi_intervals`, over the complete samples), the count and
share of each taxonomy category (a stacked bar in the HTML), and the incomplete samples. Then the
scoring, the panel of models (the models of the FSS / LIS panels), the encoders of the score-based
rows, and the most Key (highest FSS) and most Anti-key (lowest FSS) samples, with their MaxProb /
MinProb frames when the sample browser holds them.

:func:`readable_params` turns the run's parameters into labelled lines for the end of the report;
a filter left unset reads as what it covers (``encoder: all (tempcore-world)``), not ``None``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

CATEGORY_LABELS = {"temporally_grounded": "Temporally Grounded", "visual_bias": "Visual Bias",
                   "frame_agnostic": "Frame-Agnostic", "trivial": "Trivial", "incomplete": "Incomplete"}
#: bar order: the vision-dependent categories first
BAR_ORDER = ("temporally_grounded", "visual_bias", "frame_agnostic", "trivial")
TOP_SAMPLES = 3


@dataclass
class Summary:
    benchmarks: list[dict[str, Any]]
    scoring: str
    fss_mode: str
    tau: float
    lam: float
    panel: list[str]
    encoders: list[str]
    key_samples: list[dict[str, Any]] = field(default_factory=list)
    anti_key_samples: list[dict[str, Any]] = field(default_factory=list)
    n_boot: int = 0
    confidence: float = 0.95


def distinct(table: Any, column: str, strategies: tuple[str, ...] = ()) -> list[str]:
    """Distinct non-null values of ``column`` (on the rows of ``strategies`` when given)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if column not in table.column_names or not table.num_rows:
        return []
    if strategies and "strategy" in table.column_names:
        table = table.filter(pc.fill_null(pc.is_in(table.column("strategy"),
                                                   value_set=pa.array(list(strategies), pa.string())), False))
    return sorted({str(v) for v in table.column(column).drop_null().unique().to_pylist()})


def _extremes(diagnosis: Any, browser: Any, fss_category: str, n: int) -> list[dict[str, Any]]:
    frames = {}
    if browser is not None:
        frames = {(r["benchmark"], r["sample_id"]): r.get("frames") or {} for r in browser.rows}
    sign = -1.0 if fss_category == "key" else 1.0
    picked = sorted(((sign * float(f), str(b), str(s)) for b, s, f, fc in zip(
        diagnosis.benchmark, diagnosis.sample_id, diagnosis.fss, diagnosis.fss_category)
        if fc == fss_category and not math.isnan(float(f))))[:n]
    return [{"benchmark": b, "sample_id": s, "fss": sign * v, "frames": frames.get((b, s), {})}
            for v, b, s in picked]


def build_summary(diagnosis: Any, table: Any, browser: Any = None, *, n_boot: int = 2000, seed: int = 0,
                  confidence: float = 0.95) -> Summary:
    from tempcore.diagnostics.robustness import panel_models, tpi_intervals

    intervals = tpi_intervals(diagnosis, n_boot=max(1, n_boot), confidence=confidence, seed=seed)
    benches = []
    for name in sorted(diagnosis.benchmarks):
        counts = diagnosis.benchmarks[name]
        ci = intervals.get(name, {})
        benches.append({"benchmark": name, "n": int(counts.get("n", 0)),
                        "complete": int(ci.get("n", 0)), "incomplete": int(counts.get("incomplete", 0)),
                        "counts": {c: int(counts.get(c, 0)) for c in BAR_ORDER},
                        "key": int(counts.get("key", 0)), "anti_key": int(counts.get("anti_key", 0)),
                        "tpi": ci.get("tpi", counts.get("tpi")), "tpi_low": ci.get("tpi_low"),
                        "tpi_high": ci.get("tpi_high")})
    p = diagnosis.params
    panel = sorted({m for models in panel_models(diagnosis).values() for m in models})
    return Summary(benches, str(p.get("scoring", "")), str(p.get("fss_mode", "")), float(p.get("tau", math.nan)),
                   float(p.get("lam", p.get("lambda", math.nan))), panel,
                   distinct(table, "encoder", ("maxprob", "minprob")),
                   _extremes(diagnosis, browser, "key", TOP_SAMPLES),
                   _extremes(diagnosis, browser, "anti_key", TOP_SAMPLES), n_boot, confidence)


def tpi_text(b: dict[str, Any], summary: Summary) -> str:
    if b["tpi"] is None:
        return "TPI undefined (no vision-dependent sample)"
    text = f"TPI {b['tpi']:.3f}"
    if b["tpi_low"] is not None and b["tpi_high"] is not None:
        text += (f" [{b['tpi_low']:.3f}, {b['tpi_high']:.3f}] ({100 * summary.confidence:g}% bootstrap interval, "
                 f"{summary.n_boot} replicates)")
    return text


def count_text(b: dict[str, Any]) -> str:
    total = max(1, b["complete"])
    parts = [f"{CATEGORY_LABELS[c]} {b['counts'][c]} ({100 * b['counts'][c] / total:.0f}%)" for c in BAR_ORDER]
    return (f"{b['complete']} complete samples: " + ", ".join(parts)
            + f"; {b['incomplete']} incomplete; Key {b['key']}, Anti-key {b['anti_key']}")


_PARAM_LABELS = {"tau": "tau (FSS threshold)", "lambda": "lambda (LIS threshold)", "fss_mode": "FSS mode",
                 "scoring": "scoring", "models": "models", "k": "frame budget K", "encoder": "encoder",
                 "bootstrap": "bootstrap replicates", "seed": "seed", "max_samples": "browser: samples per benchmark",
                 "max_thumbnail_samples": "browser: samples with thumbnails per benchmark"}


def _shown(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "; ".join(str(v) for v in value) or "none"
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items())
    return str(value)


def readable_params(report: Any) -> list[tuple[str, str]]:
    """(label, value) lines of the report's inputs and parameters, for the end of the report."""
    summary = getattr(report, "summary", None)
    out = [(str(k).replace("_", " "), _shown(v)) for k, v in report.inputs.items()]
    for key, value in report.params.items():
        label = _PARAM_LABELS.get(key, key.replace("_", " "))
        if value is None and key == "encoder":
            found = summary.encoders if summary is not None else []
            shown = f"all ({', '.join(found)})" if found else "all (no encoder in the predictions)"
        elif value is None:
            shown = "all"
        else:
            shown = _shown(value)
        out.append((label, shown))
    return out


__all__ = ["BAR_ORDER", "CATEGORY_LABELS", "Summary", "build_summary", "count_text", "distinct", "readable_params",
           "tpi_text"]
