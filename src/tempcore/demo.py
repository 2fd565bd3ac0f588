"""``tempcore demo``: the whole pipeline on a synthetic world whose answers we know.

1. generate a held-out world (:func:`tempcore.world.generate_world`): encoded videos and a generic
   benchmark file whose questions are frame-agnostic, temporally grounded, trivial or visually biased
   by construction;
2. run the audit (:func:`tempcore.run.runner.run`) with the embedded zoo: the shipped SigLIP-architecture
   encoder scores every frame (Eq. 1) through the same adapter a SigLIP2 checkpoint takes, and the
   answerers (a text-only model, frame models, a tiny generative HF VLM) answer under maxprob / minprob
   (QA mode), uniform, random, noframe and the window oracle — maxprob, minprob and noframe in every
   cyclic option rotation, for circular scoring;
3. diagnose under ``hard`` (the paper's 0/1), ``soft`` (probability on the correct option) and
   ``circular`` scoring, and compare the recovered categories with the planted ones;
4. export the TempCore subset and write the HTML report;
5. answer the world's grounding questions ("when does the red triangle appear?", the planted window
   is the ground truth: :mod:`tempcore.world.grounding`) in a run of its own (``grounding-run``, frame
   embeddings from the same cache) with the retrieval baseline through the shipped encoder, and with
   the zoo's generative HF answerer when present (the other zoo members score options and cannot
   emit an interval); score mIoU / R@τ per model and condition (:func:`demo_grounding`);
6. answer the world binarised (``binary: true``: each question with n options becomes n-1 binary
   questions {correct, negative}) under ``uniform`` only, for its first 48 questions, in a run of its own (``binary-run``; the
   frame embeddings come from the same cache), and score BA / MBA / chance MBA per zoo model beside
   its multiple-choice accuracy under ``uniform`` (:func:`demo_mba`);
7. answer the world's order-family questions (``appear_order``: "which of these shapes appeared first?",
   planted order-sensitive) and as many others under ``uniform``, ``textonly``, ``single``,
   ``shuffled`` and ``reversed`` in a run of its own (``order-run``), and compare the order-sensitive
   samples recovered by the order-sensitivity analysis of ``tempcore audit ablations`` with the
   planted ones (:func:`demo_order`);
8. with ``--visual``: visual answer options (paper 002) built from the world's planted events — TFR
   (with its text control) and VFP over its first :data:`VISUAL_VIDEOS` videos — answered by the
   same panel through the run store under ``visual_options``, checked against the planted windows
   and scored with the paper's statistics (:func:`demo_visual`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

SCORINGS = ("soft", "hard", "circular")
DEFAULT_QUESTIONS = 400
QUICK_QUESTIONS = 48
HELD_OUT_SEED = 20261129  # the zoo was trained on worlds of other seeds
WORLD_ENCODER = "tempcore-world"  # encoder alias of the shipped world encoder (tempcore.world.encoder_path())


def demo_config(
    world: Any, out: Path, *, k: int = 8, oracle_windows: int = 8, cache: Path | None = None,
    model_processes: bool = False,
) -> Any:
    """The run configuration of the demo over a generated world (``WorldManifest``).
    ``model_processes``: answer in worker processes (:mod:`tempcore.models.hosted`); the demo's own
    audit run does, its short side runs and the tests' runs with recording factories do not."""
    from tempcore.run.config import RunConfig
    from tempcore.world import BENCHMARK_NAME
    from tempcore.world.answerers.model import zoo_specs

    rotated = {"rotations": "all"}
    # The models answer side by side, one per core (parallel_models: threads share the models'
    # chunks until the last is done; a model's answers are the same as one after the other), each
    # thread's models in a worker process of its own (model_processes: no shared interpreter lock).
    models = [spec.to_dict() for spec in zoo_specs()]
    return RunConfig.from_dict({
        "out": str(out / "run"),
        "encoder": WORLD_ENCODER,
        "encoder_options": {"device": "cpu"},
        "cache": str(cache or out / "cache"),
        "fps": world.config.fps,
        "k": k,
        "seed": 0,
        "benchmarks": [{"name": "generic", "annotations": str(world.annotations), "video_root": str(world.root),
                        "options": {"benchmark_name": BENCHMARK_NAME}}],
        "models": models,
        "conditions": [
            {"strategy": "maxprob", "mode": "qa", **rotated},
            {"strategy": "minprob", "mode": "qa", **rotated},
            {"strategy": "noframe", **rotated},
            {"strategy": "uniform"},
            {"strategy": "random"},
            {"strategy": "oracle", "params": {"stride": k, "max_windows": oracle_windows}},
        ],
        "noframe_size": 48,
        "request_batch": 64,
        "parallel_models": max(1, min(len(models), os.cpu_count() or 1)),
        "model_processes": model_processes,
    }, source="tempcore demo")


def run_demo(
    out: str | Path = "demo-out",
    *,
    n_questions: int | None = None,
    quick: bool = False,
    seed: int = HELD_OUT_SEED,
    k: int = 8,
    progress: bool = True,
    log: Callable[[str], None] = print,
    visual: bool = False,
    profile: bool = False,
) -> dict[str, Any]:
    """Generate, audit, diagnose, export, report; returns the recovery (``tempcore demo --json``).
    ``visual``: also the visual-answer-options section (:func:`demo_visual`, key ``visual``).
    ``profile``: time every step (:mod:`tempcore.profiling`: world, each run's frame scoring with
    its decode and encode, each answerer's calls, diagnostics, report, ...) and return the
    :class:`~tempcore.profiling.Profile` under ``profile`` (``tempcore demo --profile`` prints it
    with :func:`format_profile`); the recovery is the same either way."""
    if not profile:
        return _run_demo(out, n_questions=n_questions, quick=quick, seed=seed, k=k, progress=progress, log=log,
                         visual=visual)
    from tempcore import profiling
    from tempcore.video.types import count_decodes

    with profiling.collect() as prof, count_decodes() as decodes:
        result = _run_demo(out, n_questions=n_questions, quick=quick, seed=seed, k=k, progress=progress, log=log,
                           visual=visual)
    result["profile"] = prof
    result["decodes"] = decodes.summary()
    return result


def _run_demo(
    out: str | Path, *, n_questions: int | None, quick: bool, seed: int, k: int, progress: bool,
    log: Callable[[str], None], visual: bool,
) -> dict[str, Any]:
    from concurrent.futures import ThreadPoolExecutor

    import torch

    from tempcore.diagnostics import diagnose
    from tempcore.interop.export import export_tempcore
    from tempcore.profiling import section
    from tempcore.report import build_report, write_report
    from tempcore.run.ordered import in_context
    from tempcore.run.runner import run
    from tempcore.tidy.table import read_predictions
    from tempcore.world import BENCHMARK_NAME, generate_world
    from tempcore.world.validate import validate_predictions

    # The zoo's models are tiny: one thread avoids the thread-pool overhead that dominates them
    # (measured: 0.3 ms vs 17 ms per frame for the encoder on a busy 2-core machine).
    torch.set_num_threads(1)
    out = Path(out)
    n = n_questions or (QUICK_QUESTIONS if quick else DEFAULT_QUESTIONS)
    log(f"generating a world of {n} questions (seed {seed}) in {out / 'world'}")
    with section("world"):
        world = generate_world(out / "world", n, seed)
    cfg = demo_config(world, out, k=k, oracle_windows=4 if quick else 8, model_processes=True)
    # The demo owns its folder: a world regenerated there (another size or seed) changes questions
    # under the same ids, so stored answers whose fingerprints differ are replaced, never reused;
    # and the table keeps only this world's samples (a larger earlier world leaves rows behind).
    with section("audit run"):
        summary = run(cfg, progress=progress, log=log, recompute=True)
    with section("validate"):
        table = _only_samples(read_predictions(_table_file(summary)), {s.sample_id for s in world.samples()})
        result = validate_predictions(table, world.planted(), scorings=SCORINGS, filters={"k": k})

    samples = {BENCHMARK_NAME: world.samples()}
    # the subset and the report use the scoring `tempcore diagnose` / `report` default to (so the
    # commands give the same numbers on this run); the order questions' categories are soft's
    from tempcore.cli._common import DEFAULT_SCORING

    with section("diagnostics"):
        d = diagnose(table, scoring=DEFAULT_SCORING)
        d_soft = d if DEFAULT_SCORING == "soft" else diagnose(table, scoring="soft")
    with section("subset"):
        subset_files = export_tempcore(d, samples, out / "tempcore", "jsonl", table=table,
                                       video_roots={BENCHMARK_NAME: str(world.root)})

    def report() -> list[Path]:  # pure Python: it runs beside the next runs, which are mostly torch
        with section("report"):
            built = build_report(table, samples_by_benchmark=samples, video_roots={BENCHMARK_NAME: str(world.root)},
                                 scoring=DEFAULT_SCORING, k=k, title="tempcore demo: a synthetic world with planted answers")
            return write_report(built, out / "report")

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="tempcore-demo") as background:
        report_job = background.submit(in_context(report))  # its thumbnails' decodes count in the demo's
        with section("grounding"):
            result["grounding"] = demo_grounding(cfg, world, out, progress=progress, log=log)
        with section("binary (MBA)"):
            result["mba"] = demo_mba(cfg, table, out, progress=progress, log=log)
        with section("order"):
            result["order"] = demo_order(cfg, world, out, progress=progress, log=log)
            result["order"]["tempcore_categories"] = _order_family_categories(world, d_soft)
        if visual:
            with section("visual"):
                result["visual"] = demo_visual(world, out, progress=progress, log=log)
        with section("report (waiting)"):
            report_files = report_job.result()
    result["report"] = str(next(p for p in report_files if p.name == "report.html"))
    result["subset"] = str(next(p for p in subset_files if p.suffix == ".jsonl"))
    result["report_scoring"] = DEFAULT_SCORING
    result["run"] = summary.out
    result["world"] = str(world.root)
    return result


def _side_run(cfg: Any, out: Path) -> dict[str, Any]:
    """The demo's configuration as a mapping for one of its short side runs into ``out``: the same
    models and settings, answered in threads of this process (``model_processes`` off: starting the
    workers, about 5 s here, costs more than they save on a run of a few seconds)."""
    raw = dict(cfg.to_dict())
    raw.pop("source", None)
    raw["out"] = str(out)
    raw["model_processes"] = False
    return raw


GROUNDING_CONDITIONS: tuple[dict[str, Any], ...] = (
    {"strategy": "retrieval", "mode": "q", "variant": "fine"},
    {"strategy": "retrieval", "mode": "q", "variant": "paper"},
)
"""The retrieval baseline in two configurations: ``fine`` (no smoothing, no minimum length, β from
the track's minimum: the world's windows are 1-3 s at 10 fps) and ``paper`` (ExtremeWhenBench's
β = 0.7 of the peak, [4, 60] s, 5-frame smoothing), both on the raw cosine of the run's frames (the
world's fps)."""
GROUNDING_MODEL_CONDITION = {"strategy": "uniform"}
"""The condition the zoo's generative answerer grounds under (K uniform frames with their times)."""


def demo_grounding(
    cfg: Any, world: Any, out: Path, *, progress: bool = True, log: Callable[[str], None] = print
) -> dict[str, Any]:
    """The world's grounding questions answered and scored: what is planted, and per model x condition
    ``n``, ``miou``, ``recall`` (R@0.3 / 0.5 / 0.7) and ``parse_fail`` (fractions).

    ``cfg``: the demo's run configuration (encoder, cache, fps, K are reused); the run goes into
    ``out / "grounding-run"``. Planted: every window in which an object is visible only then (a brief
    triangle appears; the circle takes a colour no other object has), 1-3 s long. Models: the zoo's
    HF answerer when its weights are there (it was trained on multiple-choice letters only, so its
    replies are expected to be parse failures: the demo shows them counted, not scored as answers),
    else the first zoo member (which answers no grounding request: it scores options). The retrieval
    baseline needs no model (:mod:`tempcore.run.baseline`)."""
    import pyarrow.parquet as pq

    from tempcore.grounding.evaluate import table_groups
    from tempcore.run.config import RunConfig
    from tempcore.run.runner import run
    from tempcore.world.grounding import GROUNDING_BENCHMARK, grounding_samples
    from tempcore.world.hf_answerer import HF_NAME

    samples = grounding_samples(world.scenes)
    raw = _side_run(cfg, out / "grounding-run")
    raw["benchmarks"] = [{"name": "grounding", "annotations": str(world.grounding), "video_root": str(world.root),
                          "options": {"benchmark_name": GROUNDING_BENCHMARK}}]
    hf = [m for m in raw["models"] if m.get("name") == HF_NAME]
    raw["models"] = hf or raw["models"][:1]
    raw["conditions"] = [*GROUNDING_CONDITIONS, *([GROUNDING_MODEL_CONDITION] if hf else [])]
    gcfg = RunConfig.from_dict(raw, source="tempcore demo (grounding)")
    log(f"grounding: {len(samples)} questions with planted windows, into {out / 'grounding-run'}")
    summary = run(gcfg, progress=progress, log=log, recompute=True)
    table = None if summary.predictions_file is None else pq.read_table(summary.predictions_file)
    if table is not None:
        table = _only_samples(table, {s.sample_id for s in samples})
    lengths = [e - s for smp in samples for s, e in smp.answer_windows]
    kinds: dict[str, int] = {}
    for smp in samples:
        kinds[str(smp.metadata["kind"])] = kinds.get(str(smp.metadata["kind"]), 0) + 1
    return {
        "questions": len(samples),
        "planted": {"kinds": dict(sorted(kinds.items())),
                    "window_s": [round(min(lengths), 3), round(max(lengths), 3)] if lengths else None},
        "groups": table_groups(table, samples) if table is not None and table.num_rows else [],
    }


def format_grounding(g: dict[str, Any]) -> str:
    """The demo's grounding table: mIoU, R@τ and parse failures per model and condition, percent."""
    cols = ["model", "condition", "n", "miou", "R@0.3", "R@0.5", "R@0.7", "parse_fail"]

    def pct(v: Any) -> str:
        return "-" if v is None else f"{100 * v:.1f}"

    from tempcore.records import Condition

    body = []
    for r in g["groups"]:
        variant = Condition.from_key(r["condition"]).variant if "condition" in r else None
        cond = r["strategy"] + (f" ({variant})" if variant else "")
        body.append([r["model"], cond, str(r["n"]), pct(r["miou"]), *(pct(r["recall"].get(t)) for t in
                                                                       ("0.3", "0.5", "0.7")), pct(r["parse_fail"])])
    widths = [max([len(c)] + [len(b[i]) for b in body]) for i, c in enumerate(cols)]
    planted = g["planted"]
    window = planted["window_s"]
    head = (f"grounding: {g['questions']} questions, planted windows "
            f"({', '.join(f'{k} {v}' for k, v in planted['kinds'].items())}"
            + (f"; {window[0]:g}-{window[1]:g} s" if window else "") + "): mIoU and R@IoU, percent")
    lines = [head, "  ".join(c.ljust(w) for c, w in zip(cols, widths)).rstrip()]
    lines += ["  ".join(x.ljust(w) for x, w in zip(b, widths)).rstrip() for b in body]
    return "\n".join(lines)


MBA_CONDITION = "uniform"  # the binarised world is answered under this condition only (cheap: no scores)
MBA_QUESTIONS = 48  # ... and over its first questions only: each binary question decodes its frames anew


BINARY_REPLY_TOKENS = 8
"""New tokens of the HF answerer in the binary step (its reply: letter, then the option's text)."""


def demo_mba(
    cfg: Any, table: Any, out: Path, *, progress: bool = True, log: Callable[[str], None] = print
) -> list[dict[str, Any]]:
    """BA / MBA / chance MBA of each model on the binarised world, beside its multiple-choice accuracy.

    ``cfg``: the demo's run configuration; ``table``: its predictions (the multiple-choice accuracy
    is the hard accuracy of the un-rotated ``uniform`` rows of the same questions). The binarised
    world is run with the same benchmark entry plus ``binary: true``, its first :data:`MBA_QUESTIONS`
    questions (``limit``) and :data:`MBA_CONDITION` alone, into ``out / "binary-run"``. One row per model: ``model``, ``accuracy``, ``n_questions``, ``ba``,
    ``n_binary``, ``mba``, ``n_groups``, ``chance_mba``, ``incomplete_groups`` (fractions)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from tempcore.diagnostics.mba import mba_table
    from tempcore.run.config import RunConfig
    from tempcore.run.runner import run
    from tempcore.tidy.table import read_predictions

    raw = _side_run(cfg, out / "binary-run")
    raw["benchmarks"] = [{**dict(b), "binary": True, "limit": MBA_QUESTIONS} for b in raw["benchmarks"]]
    raw["conditions"] = [{"strategy": MBA_CONDITION}]
    # The HF answerer reads its whole reply here: trained on four options, it often names C or D of
    # a binary question, and then only the option text it writes after the letter says which option
    # it chose (its first token alone, as in the main run, would be a parse failure).
    raw["models"] = [{**dict(m), "max_new_tokens": BINARY_REPLY_TOKENS} if m.get("backend") == "hf" else m
                     for m in raw["models"]]
    bcfg = RunConfig.from_dict(raw, source="tempcore demo (binary)")
    log(f"binarised world: {MBA_CONDITION} only, into {out / 'binary-run'}")
    summary = run(bcfg, progress=progress, log=log, recompute=True)
    binary = read_predictions(_table_file(summary))
    mba = {r["model"]: r for r in mba_table(binary).overall if r["strategy"] == MBA_CONDITION}
    # the multiple-choice accuracy over the same questions (the originals of the binary groups)
    originals = sorted({i.rsplit("#b", 1)[0] for i in pc.unique(binary.column("sample_id")).to_pylist()})
    mc = table.filter(pc.and_(pc.equal(table.column("strategy"), MBA_CONDITION), pc.is_null(table.column("window"))))
    mc = mc.filter(pc.is_in(mc.column("sample_id"), value_set=pa.array(originals, type=pa.string())))
    if "rotation" in mc.column_names:
        mc = mc.filter(pc.fill_null(pc.equal(mc.column("rotation"), 0), True))
    rows = []
    for model in sorted(mba):
        m = mc.filter(pc.equal(mc.column("model"), model))
        n_q = m.num_rows
        right = int(pc.sum(m.column("correct").cast("int64")).as_py() or 0) if n_q else 0
        r = mba[model]
        rows.append({"model": model, "accuracy": right / n_q if n_q else None, "n_questions": n_q,
                     "ba": r["ba"], "n_binary": r["n_binary"], "mba": r["mba"], "n_groups": r["n_groups"],
                     "chance_mba": r["chance_mba"], "incomplete_groups": r["incomplete_groups"]})
    return rows


def format_mba(rows: list[dict[str, Any]]) -> str:
    """The demo's MBA table: accuracy (multiple choice) beside BA / MBA / chance MBA, in percent."""
    cols = ["model", "accuracy", "ba", "mba", "chance_mba"]

    def cell(v: Any) -> str:
        return "-" if v is None else f"{100 * v:.1f}" if isinstance(v, float) else str(v)

    body = [[cell(r[c]) for c in cols] for r in rows]
    widths = [max([len(c)] + [len(b[i]) for b in body]) for i, c in enumerate(cols)]
    n = rows[0]["n_groups"] if rows else 0
    lines = [f"binary questions ({MBA_CONDITION}, {n} questions): multiple-choice accuracy beside BA / MBA / "
             "chance MBA, percent",
             "  ".join(c.ljust(w) for c, w in zip(cols, widths)).rstrip()]
    lines += ["  ".join(x.ljust(w) for x, w in zip(b, widths)).rstrip() for b in body]
    return "\n".join(lines)


ORDER_CONDITIONS: tuple[dict[str, Any], ...] = (
    {"strategy": "uniform"}, {"strategy": "textonly"}, {"strategy": "single"}, {"strategy": "shuffled"},
    {"strategy": "reversed"},
)
"""The conditions of the order step: the video (``uniform``, K frames) and TVBench's ablations of it
(no image; one random frame; the same K frames shuffled; reversed)."""
ORDER_TAU = 0.15  # the order analysis' default tau (Key: OS > tau)


def order_subset(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The order step's questions: every order-sensitive one (planted) and as many others, evenly
    spaced over the others in annotation order (so every family is represented), in annotation order."""
    from tempcore.world.families import ORDER_SENSITIVE_FAMILIES

    order = [i for i, r in enumerate(rows) if r["family"] in ORDER_SENSITIVE_FAMILIES]
    others = [i for i, r in enumerate(rows) if r["family"] not in ORDER_SENSITIVE_FAMILIES]
    n = min(len(order), len(others))
    picked = {others[(j * len(others)) // n] for j in range(n)} if n else set()
    return [rows[i] for i in sorted(set(order) | picked)]


def demo_order(
    cfg: Any, world: Any, out: Path, *, progress: bool = True, log: Callable[[str], None] = print
) -> dict[str, Any]:
    """Order sensitivity on the world: recovered (issue 14's analysis) vs planted.

    The questions: :func:`order_subset` (every ``appear_order`` question and as many others), written to
    ``out / "order" / annotations.jsonl`` and run with the demo's panel under :data:`ORDER_CONDITIONS`
    into ``out / "order-run"`` (frames decoded from the world's videos; no frame scores needed).
    Planted order-sensitive: the families of
    :data:`~tempcore.world.families.ORDER_SENSITIVE_FAMILIES`. Recovered: Key at :data:`ORDER_TAU`
    under shuffled or reversed (:func:`tempcore.world.recovery.order_recovery`, hard and soft).

    The panel. OS is a mean over models; the zoo members of an order-blind kind
    (:data:`~tempcore.world.recovery.ORDER_BLIND_KINDS`: the text model, the mean / max pooling
    members, the position-free attention member) give the same answer to any order of the same
    frames by construction, so each adds exactly 0 to every sample's sum and only divides OS by a
    larger |M|: with four blind members of six, a sample whose order-capable members all lose 0.6
    has OS 0.2, one they lose 0.4 has 0.13 < tau. ``recovery`` is therefore computed over the
    models that are not order-blind by construction (``zoo-order``, whose transformer sees its
    frames' positions, and the HF VLM, which reads the frames as a sequence); ``recovery_all_models``
    over the whole panel is reported beside it, unchanged. ``accuracy``: per model and condition, the
    hard accuracy and mean probability on the correct option of the order questions and of the
    others (reordering should break the former and leave the latter). :func:`run_demo` adds
    ``tempcore_categories``: the FSS x LIS categories (soft) the main run gives the order questions."""
    import pyarrow.compute as pc

    from tempcore.run.config import RunConfig
    from tempcore.run.runner import run
    from tempcore.tidy.table import read_predictions
    from tempcore.world import BENCHMARK_NAME
    from tempcore.world.families import ORDER_SENSITIVE_FAMILIES
    from tempcore.world.generator import write_annotations
    from tempcore.world.recovery import order_blind_models, order_recovery

    rows = order_subset(world.world.rows())
    if not any(r["family"] in ORDER_SENSITIVE_FAMILIES for r in rows):  # a small world may have none
        n = len(world.world.rows())
        log(f"order: skipped, the world's {n} questions include no order question")
        return {"questions": 0, "order_questions": 0, "conditions": [c["strategy"] for c in ORDER_CONDITIONS],
                "skipped": f"the world's {n} questions include no order question ({', '.join(ORDER_SENSITIVE_FAMILIES)})"}
    folder = out / "order"
    annotations = write_annotations(folder / "annotations.jsonl", rows)
    raw = _side_run(cfg, out / "order-run")
    raw["benchmarks"] = [{"name": "generic", "annotations": str(annotations), "video_root": str(world.root),
                          "options": {"benchmark_name": BENCHMARK_NAME}}]
    raw["conditions"] = [dict(c) for c in ORDER_CONDITIONS]
    ocfg = RunConfig.from_dict(raw, source="tempcore demo (order)")
    planted = {r["id"]: r["family"] in ORDER_SENSITIVE_FAMILIES for r in rows}
    log(f"order: {sum(planted.values())} order questions and {len(rows) - sum(planted.values())} others under "
        f"{', '.join(c['strategy'] for c in ORDER_CONDITIONS)}, into {out / 'order-run'}")
    summary = run(ocfg, progress=progress, log=log, recompute=True)
    table = _only_samples(read_predictions(_table_file(summary)), set(planted))
    models = sorted(set(table.column("model").to_pylist()))
    panel = [m for m in models if m not in order_blind_models(models)]
    result: dict[str, Any] = {"questions": len(rows), "order_questions": sum(planted.values()),
                              "conditions": [c["strategy"] for c in ORDER_CONDITIONS], "tau": ORDER_TAU,
                              "panel": panel, "recovery": {}, "recovery_all_models": {}}
    for scoring in ("soft", "hard"):
        for key, chosen in (("recovery", panel), ("recovery_all_models", models)):
            rec = order_recovery(table, planted, scoring=scoring, models=chosen, tau=ORDER_TAU)
            rec.pop("os")
            result[key][scoring] = rec
    accuracy = []
    for model in models:
        for cond in result["conditions"]:
            part = table.filter(pc.and_(pc.equal(table.column("model"), model), pc.equal(table.column("strategy"), cond)))
            got = {sid: (bool(c), float(p)) for sid, c, p in zip(part.column("sample_id").to_pylist(),
                                                             part.column("correct").to_pylist(),
                                                             part.column("p_correct").to_pylist())}
            row: dict[str, Any] = {"model": model, "condition": cond}
            for name, want in (("order_family", True), ("others", False)):
                vals = [v for sid, v in got.items() if planted[sid] is want]
                row[name] = sum(c for c, _ in vals) / len(vals) if vals else None
                row[f"{name}_soft"] = sum(p for _, p in vals) / len(vals) if vals else None
            accuracy.append(row)
    result["accuracy"] = accuracy
    result["run"] = summary.out
    return result


def _order_family_categories(world: Any, diagnosis: Any) -> dict[str, int]:
    """How the FSS x LIS taxonomy (soft scoring, the main run) classifies the order-family questions."""
    from tempcore.world.families import ORDER_SENSITIVE_FAMILIES

    category = {str(s): str(c) for s, c in zip(diagnosis.sample_id, diagnosis.category)}
    counts: dict[str, int] = {}
    for wq in world.world.questions:
        if wq.question.family in ORDER_SENSITIVE_FAMILIES:
            c = category.get(wq.sample_id, "incomplete")
            counts[c] = counts.get(c, 0) + 1
    return dict(sorted(counts.items()))


def format_order(o: dict[str, Any]) -> str:
    """The demo's order table: the recovery of order-sensitive samples, then accuracy per condition."""
    if o.get("skipped"):
        return f"order sensitivity: skipped ({o['skipped']})"

    def num(x: Any) -> str:
        return "undefined" if x is None else f"{x:.3f}"

    lines = [f"order sensitivity: {o['order_questions']} order questions (planted order-sensitive) and "
             f"{o['questions'] - o['order_questions']} others under {', '.join(o['conditions'])}; "
             f"Key at tau {o['tau']:g} under shuffled or reversed"]
    for key, label in (("recovery", f"panel not order-blind by construction ({', '.join(o['panel'])})"),
                       ("recovery_all_models", "all models")):
        for scoring in ("soft", "hard"):
            r = o[key][scoring]
            lines.append(f"Order-sensitive, {scoring}, {label}: precision {num(r['precision'])}, "
                         f"recall {num(r['recall'])} ({r['recovered']} recovered, {r['planted']} planted)")
    if o.get("tempcore_categories"):
        lines.append("FSS x LIS categories of the order questions (soft): "
                     + ", ".join(f"{k} {v}" for k, v in o["tempcore_categories"].items()))
    lines.append("accuracy (order questions / others), percent, hard | soft:")
    models = sorted({r["model"] for r in o["accuracy"]})
    width = max(len(m) for m in models) if models else 5
    lines.append("model".ljust(width) + "".join(f"  {c:>19}" for c in o["conditions"]))
    for m in models:
        cells = []
        for c in o["conditions"]:
            r = next(x for x in o["accuracy"] if x["model"] == m and x["condition"] == c)

            def pct(v: Any) -> str:
                return "-" if v is None else f"{100 * v:.0f}"

            cells.append(f"{pct(r['order_family'])}/{pct(r['others'])} | {pct(r['order_family_soft'])}/"
                         f"{pct(r['others_soft'])}")
        lines.append(m.ljust(width) + "".join(f"  {x:>19}" for x in cells))
    return "\n".join(lines)


def _table_file(summary: Any) -> str:
    """The run's tidy predictions file (the runner writes none without pyarrow, which the demo needs)."""
    if summary.predictions_file is None:
        raise ImportError("the demo reads the run's predictions table: pip install 'tempcore[analysis]'")
    return str(summary.predictions_file)


def _only_samples(table: Any, ids: set[str]) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    return table.filter(pc.is_in(table.column("sample_id"), value_set=pa.array(sorted(ids), type=pa.string())))


def format_demo(result: dict[str, Any]) -> str:
    """The recovery tables the demo prints, one per scoring."""
    from tempcore.world.recovery import format_recovery

    parts = []
    for scoring in SCORINGS:
        if scoring in result["scoring"]:
            label = {"soft": "soft (probability on the correct option)", "hard": "hard (the paper's 0/1)",
                     "circular": "circular (0/1 over option rotations)"}[scoring]
            parts.append(format_recovery(result["scoring"][scoring], title=f"scoring: {label}"))
    if result.get("order"):  # the order-sensitive recovery beside the TempCore recovery
        parts.append(format_order(result["order"]))
    if result.get("grounding"):
        parts.append(format_grounding(result["grounding"]))
    if result.get("mba"):
        parts.append(format_mba(result["mba"]))
    if result.get("visual"):
        parts.append(format_visual(result["visual"]))
    report_scoring = result.get("report_scoring")
    how = (f" (scoring {report_scoring}, the default of `tempcore diagnose` and `tempcore report`)"
           if report_scoring else "")
    parts.append(f"report: {result['report']}\nTempCore subset: {result['subset']}{how}")
    return "\n\n".join(parts)


# --- visual answer options (``tempcore demo --visual``) ----------------------------------------

VISUAL_FRAMES_PER_OPTION = 4  # TFR option length on the world (its planted windows last 1-3 s at 10 fps)
VISUAL_VIDEOS = 48  # the visual section uses the world's first 48 videos (each request decodes its own frames)


def demo_visual(
    world: Any, out: Path, *, progress: bool = True, log: Callable[[str], None] = print, n_boot: int = 10_000,
    models: list[dict[str, Any]] | None = None, videos: int | None = VISUAL_VIDEOS,
) -> dict[str, Any]:
    """Visual answer options (paper 002) on the world: TFR and VFP built from the planted events and
    encoded videos of its first ``videos`` videos (all with ``None``), answered by the zoo through ``tempcore run`` (the run store, ``visual_options``),
    scored with :func:`tempcore.visual.scoring.score_predictions`.

    The world plants each event at known times (:mod:`tempcore.world.scene`), so what a question's
    correct option must show is known independently of the builder. ``planted`` checks it on the
    frames the models were shown (the stored ``frames`` of the first model's predictions):

    - TFR: ``anchor_planted`` / ``correct_planted`` count the visual questions whose anchor / correct
      event is a planted event of the scene (same label, same window); ``correct_in_window`` those
      whose correct option's every shown frame lies inside the planted window of that event
      (``[start, end)``); ``fallback_anchor`` those whose closest distractor fell back to the anchor
      (a world video holds at most two events, so every world TFR question does);
    - VFP: ``correct_is_future`` counts the questions whose correct option's shown frames are exactly
      the clip's last ``future_frames`` frames (``i / fps`` for ``i = L - f .. L - 1``, the scene's
      own frame times) and come after every context frame.

    ``groups`` / ``gaps`` are ``tempcore visual score``'s (accuracy, Wilson and bootstrap intervals,
    chance, errors by distractor, modal perplexity; the visual-vs-text gap of TFR with its paired
    interval). Choices: the TFR option length is :data:`VISUAL_FRAMES_PER_OPTION` frames; VFP has no
    text control (it needs captions of the options, which the world does not write); the run lists
    ``uniform`` only because a run needs a condition — every sample here is a visual-option sample,
    answered under ``visual_options``. ``models`` defaults to the demo's panel (:func:`zoo_specs`).
    """
    import pyarrow.compute as pc

    from tempcore.run.config import RunConfig
    from tempcore.run.runner import run
    from tempcore.tidy.table import read_predictions
    from tempcore.visual.scoring import samples_from_annotations, score_predictions
    from tempcore.world.answerers.model import zoo_specs
    from tempcore.world.visual import world_tfr, world_vfp

    folder = out / "visual"
    tfr = world_tfr(world, folder / "tfr", videos=videos, frames_per_option=VISUAL_FRAMES_PER_OPTION)
    vfp = world_vfp(world, folder / "vfp", videos=videos)
    log(f"visual options: {tfr['questions']} TFR questions (+ their text control), {vfp['questions']} VFP "
        f"questions, into {folder}")
    annotations = {"world-tfr": (folder / "tfr" / "annotations.jsonl", world.root),
                   "world-vfp": (folder / "vfp" / "annotations.jsonl", world.root / "videos")}
    cfg = RunConfig.from_dict({
        "out": str(folder / "run"), "fps": world.config.fps, "k": 8, "seed": 0,
        "benchmarks": [{"name": "generic", "annotations": str(ann), "video_root": str(root),
                        "options": {"benchmark_name": name}} for name, (ann, root) in annotations.items()],
        "models": models if models is not None else [spec.to_dict() for spec in zoo_specs()],
        "conditions": [{"strategy": "uniform"}], "request_batch": 16,
    }, source="tempcore demo --visual")
    summary = run(cfg, progress=progress, log=log, recompute=True)
    if summary.predictions_file is None:  # pragma: no cover - pyarrow missing
        raise RuntimeError("tempcore demo --visual needs pyarrow (the run's predictions table)")
    table = read_predictions(summary.predictions_file)
    samples: dict[str, Any] = {}
    for ann, _root in annotations.values():
        samples.update(samples_from_annotations(ann))
    ids = set(samples)
    table = _only_samples(table, ids)
    scored = score_predictions(table, samples, n_boot=n_boot, seed=0)
    first = sorted(set(table.column("model").to_pylist()))[0] if table.num_rows else None
    mine = table.filter(pc.equal(table.column("model"), first)) if first else table
    return {
        "tfr": {k: tfr[k] for k in ("questions", "by_type", "fallback_anchor", "rows", "frames_per_option")},
        "vfp": {k: vfp[k] for k in ("questions", "context_frames", "future_frames")},
        "videos": len(world.scenes) if videos is None else min(videos, len(world.scenes)),
        "planted": _visual_planted(world, mine, samples),
        "groups": [{k: g[k] for k in ("model", "task", "options", "n", "accuracy", "wilson", "bootstrap", "chance",
                                      "errors_by_distractor", "perplexity", "by_question_type")}
                   for g in scored["groups"]],
        "gaps": scored["gaps"],
        "n_boot": n_boot,
        "run": summary.out,
    }


def _visual_planted(world: Any, table: Any, samples: dict[str, Any]) -> dict[str, Any]:
    """The planted-truth checks of :func:`demo_visual` over one model's stored frames."""
    from tempcore.visual.requests import VIDEO_FRAMES
    from tempcore.world.visual import scene_events

    scenes = world.world.scene_map()
    tfr = {"questions": 0, "anchor_planted": 0, "correct_planted": 0, "correct_in_window": 0, "fallback_anchor": 0}
    vfp = {"questions": 0, "correct_is_future": 0}
    eps = 1e-6
    for r in table.select(["sample_id", "frame_timestamps"]).to_pylist():
        meta = samples[r["sample_id"]]
        if meta.get("option_modality") != "visual":
            continue
        raw = r["frame_timestamps"]
        stamps = [float(t) for t in (json.loads(raw) if isinstance(raw, str) else raw or [])]
        if meta["task"] == "tfr":
            scene = scenes[meta["video_id"]]
            planted = {(e.label, round(e.start, 6), round(e.end, 6)) for e in scene_events(scene)}
            opts = meta["visual_options"]
            correct = opts[meta["answer"]]
            ev = correct["event"]
            cut = VIDEO_FRAMES + sum(len(o["times"]) for o in opts[:meta["answer"]])
            shown = stamps[cut:cut + len(correct["times"])]
            tfr["questions"] += 1
            a = meta["anchor"]
            tfr["anchor_planted"] += (a["label"], round(a["start"], 6), round(a["end"], 6)) in planted
            tfr["correct_planted"] += (ev["label"], round(ev["start"], 6), round(ev["end"], 6)) in planted
            tfr["correct_in_window"] += bool(shown) and all(ev["start"] - eps <= t < ev["end"] for t in shown)
            tfr["fallback_anchor"] += meta.get("distractor_fallback") == "anchor"
        elif meta["task"] == "vfp":
            scene = scenes[r["sample_id"]]  # a VFP question's id is its clip's stem: the world's video id
            opts = meta["visual_options"]
            n_ctx = len(meta["context"]["times"])
            cut = n_ctx + sum(len(o["times"]) for o in opts[:meta["answer"]])
            shown = stamps[cut:cut + len(opts[meta["answer"]]["times"])]
            f = len(shown)
            last = [scene.frame_time(i) for i in range(scene.n_frames - f, scene.n_frames)]
            vfp["questions"] += 1
            vfp["correct_is_future"] += (bool(shown) and len(stamps) >= n_ctx > 0 and len(last) == f
                                         and all(abs(a - b) < 1e-3 for a, b in zip(shown, last))
                                         and min(shown) > max(stamps[:n_ctx]))
    return {"tfr": tfr, "vfp": vfp}


def format_visual(result: dict[str, Any]) -> str:
    """The demo's visual-options table: accuracy per model, task and option form, and the gaps."""
    p = result["planted"]
    lines = [
        f"visual answer options (paper 002): TFR {p['tfr']['questions']} questions — correct option inside the "
        f"planted window {p['tfr']['correct_in_window']}/{p['tfr']['questions']}, anchor planted "
        f"{p['tfr']['anchor_planted']}/{p['tfr']['questions']}; VFP {p['vfp']['questions']} questions — correct "
        f"option = the clip's last frames {p['vfp']['correct_is_future']}/{p['vfp']['questions']}",
        f"{'model':14} {'task':4} {'options':7} {'n':>4} {'accuracy':>8} {'chance':>6}  wilson 95%",
    ]
    for g in result["groups"]:
        acc = "-" if g["accuracy"] is None else f"{100 * g['accuracy']:.1f}"
        lo, hi = g["wilson"]
        ci = "-" if lo is None else f"[{100 * lo:.1f}, {100 * hi:.1f}]"
        lines.append(f"{g['model']:14} {g['task']:4} {g['options']:7} {g['n']:>4} {acc:>8} "
                     f"{100 * g['chance']:>6.1f}  {ci}")
    for gap in result["gaps"]:
        lo, hi = gap["bootstrap"]
        lines.append(f"gap {gap['model']} {gap['task']}: visual {100 * gap['visual']:.1f} - text "
                     f"{100 * gap['text']:.1f} = {100 * gap['gap']:+.1f} points [{100 * lo:+.1f}, {100 * hi:+.1f}] "
                     f"({gap['n_pairs']} pairs)")
    return "\n".join(lines)
