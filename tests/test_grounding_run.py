"""`tempcore run` on grounding samples: the grounding prompt, [start, end] parsed and stored with
pred_start / pred_end / iou, crops mapped back to video time, parse failures kept as such, and the
retrieval baseline stored as a model (the synthetic world's planted windows, the shipped encoder)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tempcore.grounding.evaluate import table_groups
from tempcore.models import ModelResponse
from tempcore.run.baseline import RETRIEVAL_MODEL
from tempcore.run.config import RunConfig
from tempcore.run.runner import RunError, run
from tempcore.run.store import RunStore
from tempcore.world import generate_world
from tempcore.world.grounding import GROUNDING_BENCHMARK, grounding_samples

QUIET = {"progress": False, "log": lambda _m: None}


class FirstToLastFrame:
    """Answers with the first and last frame time the prompt states; "no idea" for odd ones."""

    supports_option_scores = False
    revision = None

    def __init__(self, spec: object) -> None:
        self.name = spec.display_name  # type: ignore[attr-defined]
        self.prompts: list[str] = []

    def answer(self, requests, *, method="generate"):  # noqa: ANN001
        out = []
        for r in requests:
            assert method == "generate" and r.options == ()
            self.prompts.append(r.prompt)
            times = re.search(r"Frame timestamps \(seconds\): (.*)", r.prompt)
            if "pink" in r.prompt or times is None:
                out.append(ModelResponse("I cannot tell."))
                continue
            ts = [float(x) for x in times.group(1).split(", ")]
            out.append(ModelResponse(f"From {ts[0]} to {ts[-1]} seconds."))
        return out

    def close(self) -> None:
        pass


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("gworld")
    # the mix without the order family (whose objects are not grounding questions): more windows per question
    mix = {"anchor_colour": 1.0, "circle_stayed": 1.0, "brief_colour": 2.0, "circle_left": 1.0,
           "circle_recoloured": 1.0, "shape_sides": 1.0, "anchor_colour_obvious": 1.0}
    w = generate_world(root / "world", 12, seed=7, duration=(14.0, 16.0), weights=mix)
    # one segment sample (a crop of a world video): times in the prompt are relative to its start
    first = next(s for s in grounding_samples(w.scenes) if "pink" not in s.question)
    (s0, e0), = first.answer_windows
    seg = {"id": "segment", "video": first.video, "question": first.question, "start": s0 - 1.0,
           "end": e0 + 2.5, "answer_windows": [[s0, e0]]}
    (root / "segment.jsonl").write_text(json.dumps(seg) + "\n")
    return w, root


def _cfg(w, root: Path, out: str, conditions, *, segment: bool = False) -> RunConfig:
    bench = [{"name": "grounding", "annotations": str(w.grounding), "video_root": str(w.root),
              "options": {"benchmark_name": GROUNDING_BENCHMARK}}]
    if segment:
        bench = [{"name": "grounding", "annotations": str(root / "segment.jsonl"), "video_root": str(w.root),
                  "options": {"benchmark_name": "segment"}}]
    return RunConfig.from_dict({
        "out": str(root / out), "encoder": "tempcore-world", "encoder_options": {"device": "cpu"},
        "cache": str(root / "cache"), "fps": w.config.fps, "k": 4, "benchmarks": bench,
        "models": [{"backend": "hf", "model": "unused-by-the-factory", "name": "reader"}],
        "conditions": conditions,
    })


def test_grounding_samples_are_answered_parsed_scored_and_stored(world, capsys):
    w, root = world
    samples = grounding_samples(w.scenes)
    assert len(samples) >= 4 and {s.metadata["kind"] for s in samples} == {"appear", "recolour"}
    models: list[FirstToLastFrame] = []

    def factory(spec):  # noqa: ANN001, ANN202
        models.append(FirstToLastFrame(spec))
        return models[-1]

    conditions = [{"strategy": "uniform"}, {"strategy": "retrieval", "mode": "q", "variant": "fine"},
                  {"strategy": "maxprob", "mode": "qa"}]  # qa: not asked of grounding samples
    plan = run(_cfg(w, root, "run", conditions), dry_run=True, **QUIET)
    assert plan.models[0].planned == len(samples)  # uniform only: retrieval and qa are not model requests
    summary = run(_cfg(w, root, "run", conditions), model_factory=factory, **QUIET)
    info = summary.benchmarks[GROUNDING_BENCHMARK]
    assert info["grounding"] == len(samples) and info["requests_per_model"] == len(samples)  # uniform only
    assert info["baseline_predictions"] == len(samples) and info["failed_videos"] == 0
    (model,) = models
    duration = {s.sample_id: s.metadata["duration"] for s in samples}
    assert all(f"The video is {d:g} seconds long." in p for p, d in zip(model.prompts, duration.values()))
    with RunStore(root / "run" / "store.sqlite") as store:
        preds = {(p.model, p.sample_id): p for p in store.predictions()}
    by_id = {s.sample_id: s for s in samples}
    for s in samples:
        p = preds[("reader", s.sample_id)]
        assert p.answer is None and p.answer_method == "generate"
        if "pink" in s.question:  # a parse failure: stored as one, never as an answer
            assert (p.pred_start, p.pred_end, p.iou, p.correct) == (None, None, None, 0) and p.parse_error
            continue
        assert p.parse_error is None and p.frames is not None
        assert (p.pred_start, p.pred_end) == (pytest.approx(p.frames.timestamps[0]),
                                              pytest.approx(p.frames.timestamps[-1]))
        assert p.iou is not None and p.correct == int(p.iou >= 0.5)
    # the baseline: one prediction per sample, no model call, the planted windows found
    base = [preds[(RETRIEVAL_MODEL, sid)] for sid in by_id]
    assert all(p.condition.startswith("retrieval|mode=q") and p.answer_method == "retrieval" for p in base)
    assert all(p.encoder_fingerprint for p in base)
    table = pq.read_table(summary.predictions_file)
    assert {"pred_start", "pred_end", "iou"} <= set(table.column_names)
    groups = {(g["model"], g["strategy"]): g for g in table_groups(table, samples)}
    retrieval = groups[(RETRIEVAL_MODEL, "retrieval")]
    assert retrieval["n"] == len(samples) and retrieval["parse_fail"] == 0.0
    assert retrieval["miou"] >= 0.8 and retrieval["recall"]["0.5"] >= 0.8
    reader = groups[("reader", "uniform")]
    n_pink = sum("pink" in s.question for s in samples)
    assert reader["parse_fail"] == pytest.approx(n_pink / len(samples))
    # `tempcore grounding` reads the run's export: with the annotations, and from the stored iou alone
    from tempcore.cli import main

    for extra in (["--benchmark", "grounding", "--annotations", str(w.grounding), "-o",
                   f"benchmark_name={GROUNDING_BENCHMARK}"], []):
        assert main(["grounding", "--predictions", summary.predictions_file, "--json", *extra]) == 0
        got = json.loads(capsys.readouterr().out)["groups"]
        want = table_groups(table, samples)
        assert [(g["model"], g["n"]) for g in got] == [(g["model"], g["n"]) for g in want]
        assert [g["miou"] for g in got] == pytest.approx([g["miou"] for g in want])
        assert [g["parse_fail"] for g in got] == pytest.approx([g["parse_fail"] for g in want])

    # a rerun calls nothing and writes nothing
    again = run(_cfg(w, root, "run", conditions), model_factory=factory, **QUIET)
    assert len(models) == 1
    assert {m.model: m.stored_before for m in again.models} == {"reader": len(samples),
                                                                RETRIEVAL_MODEL: len(samples)}
    # other window parameters under the same condition key are not reused silently
    changed = [conditions[0], {**conditions[1], "params": {"beta": 0.9}}]
    with pytest.raises(RunError, match="retrieval baseline"):
        run(_cfg(w, root, "run", changed), model_factory=factory, **QUIET)
    run(_cfg(w, root, "run", changed), model_factory=factory, recompute=True, **QUIET)


def test_a_segment_is_shown_in_its_own_time_and_answers_map_back(world):
    w, root = world
    models: list[FirstToLastFrame] = []

    def factory(spec):  # noqa: ANN001, ANN202
        models.append(FirstToLastFrame(spec))
        return models[-1]

    summary = run(_cfg(w, root, "seg", [{"strategy": "uniform"}], segment=True), model_factory=factory, **QUIET)
    (prompt,) = models[0].prompts
    seg = json.loads((root / "segment.jsonl").read_text())
    start, end = seg["start"], seg["end"]
    assert f"The video is {end - start:g} seconds long." in prompt
    shown = [float(x) for x in re.search(r"Frame timestamps \(seconds\): (.*)", prompt).group(1).split(", ")]
    with RunStore(Path(summary.store)) as store:
        (p,) = list(store.predictions())
    assert p.frames is not None and all(start - 1e-6 <= t < end for t in p.frames.timestamps)
    # the prompt's times are the frames' minus the segment start; the answer is mapped back
    assert shown == pytest.approx([t - start for t in p.frames.timestamps], abs=0.01)
    assert p.pred_start == pytest.approx(shown[0] + start) and p.pred_end == pytest.approx(shown[-1] + start)
    assert p.iou is not None and p.iou > 0


def test_a_changed_grounding_prompt_or_window_is_never_served_from_the_store(world, tmp_path):
    """The grounding requests render the built-in ``grounding`` template (the reader's own template
    is a multiple-choice one): a new text of it must stop a rerun, like a changed model template;
    and a sample's second ground-truth window is part of its identity (QVHighlights-style rows)."""
    import dataclasses

    from tempcore.prompts import TEMPLATES, PromptTemplate, get_template

    w, root = world
    conditions = [{"strategy": "uniform"}]
    calls: list[FirstToLastFrame] = []

    def factory(spec):  # noqa: ANN001, ANN202
        calls.append(FirstToLastFrame(spec))
        return calls[-1]

    cfg = _cfg(w, tmp_path, "run", conditions)
    first = run(cfg, model_factory=factory, **QUIET)
    assert first.models[0].done > 0
    with RunStore(tmp_path / "run" / "store.sqlite") as store:
        stored = list(store.predictions())
    assert len({p.model_fingerprint for p in stored}) == 1 and stored[0].model_fingerprint
    original = get_template("grounding")
    reworded = PromptTemplate(name="grounding", kind="grounding", text=original.text.replace("Find", "Locate"),
                              description=original.description)
    TEMPLATES.register("grounding", reworded, replace=True)
    try:
        with pytest.raises(RunError, match="prompt template changed"):
            run(cfg, model_factory=factory, **QUIET)
    finally:
        TEMPLATES.register("grounding", original, replace=True)
    again = run(cfg, model_factory=factory, **QUIET)  # the original text: everything reused
    assert again.models[0].done == 0 and again.models[0].stored_before == len(stored)

    # a second window added to one sample: that sample's answers are stale, no other
    rows = [json.loads(line) for line in Path(w.grounding).read_text().splitlines() if line.strip()]
    victim = next(r for r in rows if "pink" not in r["question"])
    (s0, e0), *_ = victim["answer_windows"]
    edited = tmp_path / "two-windows.jsonl"
    victim_two = {**victim, "answer_windows": [[s0, e0], [e0 + 0.5, e0 + 1.0]]}
    edited.write_text("".join(json.dumps(victim_two if r is victim else r) + "\n" for r in rows))
    moved = dataclasses.replace(cfg, benchmarks=[dataclasses.replace(cfg.benchmarks[0], annotations=str(edited))])
    with pytest.raises(RunError, match=r"answer windows") as err:
        run(moved, model_factory=factory, **QUIET)
    assert "1 sample" in str(err.value) or victim["id"] in str(err.value)


def test_run_records_each_benchmarks_format_and_the_cli_reads_annotations_with_it(world, capsys):
    """Issue 30: the log names the stored benchmark (not its loader); the manifest records the format,
    so `tempcore grounding --benchmark grounding` (the loader's name, no -o) reads a run folder whose
    rows are stored under the world's benchmark name, and so does the stored name itself."""
    w, root = world
    lines: list[str] = []
    summary = run(_cfg(w, root, "recorded", [{"strategy": "uniform"}]), model_factory=FirstToLastFrame,
                  progress=False, log=lines.append)
    assert f"benchmark {GROUNDING_BENCHMARK} (format grounding): {w.grounding}" in lines
    with RunStore(Path(summary.store), create=False) as store:
        (run_id, _), = store.runs()
        info = store.manifest(run_id)["benchmarks"][GROUNDING_BENCHMARK]
    assert (info["format"], info["config_index"]) == ("grounding", 0)
    got = []
    for name in ("grounding", GROUNDING_BENCHMARK):
        from tempcore.cli import main

        assert main(["grounding", "--predictions", summary.out, "--benchmark", name, "--annotations",
                     str(w.grounding), "--json"]) == 0, capsys.readouterr().err
        got.append(json.loads(capsys.readouterr().out)["groups"])
    assert got[0] == got[1] and [g["n"] for g in got[0]] == [4]  # uniform only: no retrieval baseline


def test_baseline_rows_stored_on_sigmoid_before_the_score_parameter_are_not_served(world, monkeypatch):
    """A store written before issue 32 (the `paper` baseline on sigmoid(cos), its identity without
    `score`): a rerun refuses its rows, --recompute answers the baseline again, no model is asked."""
    import tempcore.run.baseline as baseline
    from tempcore.run.identity import fingerprint
    from tempcore.selection.retrieval import VARIANTS, resolve_params

    w, root = world
    samples = grounding_samples(w.scenes)
    models: list[FirstToLastFrame] = []

    def factory(spec):  # noqa: ANN001, ANN202
        models.append(FirstToLastFrame(spec))
        return models[-1]

    def old_identity(params=None):  # noqa: ANN001, ANN202
        ident = new_identity(params)
        ident.pop("score")
        return ident

    new_identity = baseline.retrieval_identity
    conditions = [{"strategy": "uniform"}, {"strategy": "retrieval", "mode": "q", "variant": "paper"}]
    with monkeypatch.context() as m:  # the code before the fix
        m.setitem(VARIANTS, "paper", {"score": "sigmoid"})
        m.setattr(baseline, "retrieval_identity", old_identity)
        first = run(_cfg(w, root, "old", conditions), model_factory=factory, **QUIET)
    assert len(models) == 1 and first.models[0].done == len(samples)
    with RunStore(Path(first.store)) as store:
        old = {p.key: p for p in store.predictions() if p.model == RETRIEVAL_MODEL}
    assert len(old) == len(samples)
    with pytest.raises(RunError, match="retrieval baseline"):
        run(_cfg(w, root, "old", conditions), model_factory=factory, **QUIET)
    again = run(_cfg(w, root, "old", conditions), model_factory=factory, recompute=True, **QUIET)
    assert len(models) == 1  # no model was asked again
    by = {s.model: s for s in again.models}
    assert by["reader"].stored_before == len(samples) and by["reader"].done == 0
    assert by[RETRIEVAL_MODEL].replaced == len(samples)
    with RunStore(Path(again.store)) as store:
        new = {p.key: p for p in store.predictions() if p.model == RETRIEVAL_MODEL}
    want = fingerprint(new_identity(resolve_params("paper")))
    assert set(new) == set(old) and all(p.model_fingerprint == want != old[k].model_fingerprint
                                        for k, p in new.items())
    # the windows on the cosine are other windows (on sigmoid(cos) they filled the 4 s minimum or more)
    assert [(p.pred_start, p.pred_end) for p in new.values()] != [(p.pred_start, p.pred_end) for p in old.values()]
