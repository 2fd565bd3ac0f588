"""tempcore report: Markdown tables, the self-contained HTML, escaping, thumbnails, the browser cap,
analyses that cannot run, and the hand-written SVG plots."""

from __future__ import annotations

import base64
import io
import json
import random
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from PIL import Image

from tempcore.cli import main
from tempcore.diagnostics import diagnose
from tempcore.report import build_report, plots, write_report
from tempcore.report.browser import select_samples, thumbnails
from tempcore.video.synthetic import read_pattern, write_video

EVIL_QUESTION = ('<script>document.title="pwned"</script></script>'
                 '<img src=x onerror="document.title=\'pwned2\'"> which colour?')
EVIL_MODEL = "m<i>2</i>"
MODELS = ("m1", EVIL_MODEL)
# sample i of a benchmark follows pattern i % 4 (MaxProb, MinProb, no-frame correctness of every model):
PATTERNS = {0: (1, 0, 0),  # FSS 1, LIS 1: temporally_grounded
            1: (0, 1, 0),  # FSS -1, LIS 1: visual_bias
            2: (1, 1, 0),  # FSS 0, LIS 1: frame_agnostic
            3: (1, 1, 1)}  # FSS 0, LIS 0: trivial
CATEGORY = {0: "temporally_grounded", 1: "visual_bias", 2: "frame_agnostic", 3: "trivial"}
N_PER_BENCH = 12


def make_inputs(root: Path, *, oracle: bool = True) -> dict[str, Path]:
    """Two benchmarks (alpha, beta) x 12 samples x 2 models; synthetic videos; generic annotations.

    Frame indices are drawn per (sample, strategy, model); timestamps are index / 10 (10 fps video).
    """
    videos = root / "videos"
    videos.mkdir(parents=True, exist_ok=True)
    for v in ("v1", "v2"):
        write_video(videos / f"{v}.mp4", fps=10, duration=2.0, size=(64, 48))
    rng = random.Random(0)
    rows = []
    paths = {"videos": videos}
    for bench in ("alpha", "beta"):
        annotations = []
        for i in range(N_PER_BENCH):
            sid = f"{bench}_{i}"
            question = EVIL_QUESTION if (bench, i) == ("alpha", 0) else f"What happens first in clip {i}?"
            annotations.append({"id": sid, "video": f"v{1 + i % 2}.mp4", "question": question,
                                "options": ["red <b>", "blue & green", "yellow"], "answer": i % 3})
            mp, mn, nf = PATTERNS[i % 4]
            for model in MODELS:
                frames = sorted(rng.sample(range(20), 4))
                for strategy, mode, correct in (("maxprob", "qa", mp), ("minprob", "qa", mn), ("noframe", "none", nf),
                                                ("uniform", "none", rng.randint(0, 1)),
                                                ("maxprob", "q", rng.randint(0, 1))):
                    answer = i % 3 if correct else (i % 3 + 1) % 3
                    shown = frames if strategy == "maxprob" else sorted(rng.sample(range(20), 4))
                    has_frames = strategy in ("maxprob", "minprob")
                    rows.append({
                        "benchmark": bench, "sample_id": sid, "model": model, "strategy": strategy, "mode": mode,
                        "k": 4, "window": None, "correct": correct, "fps": 10.0, "answer": answer,
                        "response": f"The answer is {'ABC'[answer]} </script><b>bold</b>",
                        "frame_indices": json.dumps(shown) if has_frames else None,
                        "frame_timestamps": json.dumps([j / 10 for j in shown]) if has_frames else None,
                    })
                if oracle:
                    for w in range(3):
                        rows.append({"benchmark": bench, "sample_id": sid, "model": model, "strategy": "oracle",
                                     "mode": "none", "k": 4, "window": w, "correct": int(w == i % 3), "fps": 10.0,
                                     "answer": 0, "response": "A", "frame_indices": None,
                                     "frame_timestamps": None})
        path = root / f"{bench}.jsonl"
        path.write_text("".join(json.dumps(a) + "\n" for a in annotations), encoding="utf-8")
        paths[bench] = path
    paths["predictions"] = root / "pred.parquet"
    pq.write_table(pa.Table.from_pylist(rows), paths["predictions"])
    return paths


def run_report(paths: dict[str, Path], out: Path, *extra: str) -> int:
    return main(["report", "--predictions", str(paths["predictions"]), "--annotations", f"alpha={paths['alpha']}",
                 f"beta={paths['beta']}", "--video-root", str(paths["videos"]), "--out", str(out), "--bootstrap",
                 "200", *extra])


def md_section_table(md: str, heading: str) -> list[dict[str, str]]:
    """The first Markdown table under ``### heading`` as a list of {header: cell}."""
    start = md.index(f"### {heading}\n")
    lines = md[start:].splitlines()[2:]
    table = []
    for line in lines:
        if not line.startswith("|"):
            break
        table.append([c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]])
    head, body = table[0], table[2:]
    return [dict(zip(head, row)) for row in body]


def browser_json(html_text: str) -> dict:
    m = re.search(r'<script type="application/json" id="tempcore-browser-data">(.*?)</script>', html_text, re.S)
    assert m, "no browser data block"
    return json.loads(m.group(1))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Path], Path]:
    root = tmp_path_factory.mktemp("report")
    paths = make_inputs(root / "in")
    assert run_report(paths, root / "out") == 0
    return paths, root / "out"


def test_markdown_holds_the_tables(built) -> None:
    _, out = built
    md = (out / "report.md").read_text(encoding="utf-8")
    profiles = {r["benchmark"]: r for r in md_section_table(md, "Benchmark quality profiles (Table 4)")}
    assert set(profiles) == {"alpha", "beta"}
    for row in profiles.values():
        assert (row["n"], row["trivial"], row["frame_agnostic"], row["temporally_grounded"], row["visual_bias"]) == \
            ("12", "3", "3", "3", "3")
        assert row["temporally_sensitive"] == "6" and row["tpi"] == "0.667"  # 6 / (12 - 3)
        assert row["temporally_sensitive_fraction (%)"] == "50.0"
    fractions = {r["benchmark"]: r for r in md_section_table(md, "Key / Anti-key fractions (Table 3)")}
    assert fractions["alpha"]["key_fraction (%)"] == "25.0" and fractions["alpha"]["key_to_anti_key"] == "1.000"
    acc = md_section_table(md, "Accuracy per model x condition with Wilson 95% intervals")
    mp = [r for r in acc if r["benchmark"] == "alpha" and r["model"] == "m1" and r["strategy"] == "maxprob"
          and r["mode"] == "qa"]
    # patterns 0, 2, 3 are right under MaxProb: 9 of 12; Wilson 95%: [46.8, 91.1]
    assert len(mp) == 1 and (mp[0]["n"], mp[0]["correct"], mp[0]["accuracy (%)"]) == ("12", "9", "75.0")
    assert (mp[0]["ci_low (%)"], mp[0]["ci_high (%)"]) == ("46.8", "91.1")
    evil = [r for r in acc if r["model"] == "m&lt;i&gt;2&lt;/i&gt;"]
    assert evil, "model names are HTML-escaped in Markdown"
    oracle = md_section_table(md, "Oracle gap by FSS category (Table 2)")
    assert {r["fss_category"] for r in oracle} >= {"key", "non_key", "anti_key", "all"}
    mm = md_section_table(md, "MaxProb vs MinProb (Fig. 2, Table 21)")
    mean = [r for r in mm if r["benchmark"] == "alpha" and r["level"] == "mean"][0]
    assert (mean["acc_maxprob (%)"], mean["acc_minprob (%)"]) == ("75.0", "75.0")
    assert "### Random and Uniform baselines (Table 17)\n\n*Not available: needs random predictions.*" in md
    assert "](plots/" in md and all((out / p).is_file() for p in re.findall(r"\]\((plots/[^)]+)\)", md))
    assert "<i>" not in md and "<script>" not in md


def test_html_is_self_contained_and_escaped(built) -> None:
    _, out = built
    text = (out / "report.html").read_text(encoding="utf-8")
    assert not re.search(r"""(?:src|href|action)\s*=\s*["']?\s*(?:[a-z]+:)?//""", text, re.I)
    assert "http:" not in text and "https:" not in text and "@import" not in text and "url(" not in text
    # the injected question and model name never appear as markup
    assert "<script>document.title" not in text and "<i>2</i>" not in text and "<b>bold" not in text
    assert text.count("<script") == 2  # the data block and the page script
    assert "m&lt;i&gt;2&lt;/i&gt;" in text
    data = browser_json(text)
    rows = {(r["benchmark"], r["sample_id"]): r for r in data["rows"]}
    assert rows[("alpha", "alpha_0")]["question"] == EVIL_QUESTION  # exact text round-trips
    assert rows[("alpha", "alpha_0")]["options"] == ["red <b>", "blue & green", "yellow"]
    assert len(rows) == 2 * N_PER_BENCH
    assert text.count("<svg") == len(re.findall(r"<figure", text)) >= 8


def test_browser_rows_answers_and_thumbnails(built) -> None:
    paths, out = built
    data = browser_json((out / "report.html").read_text(encoding="utf-8"))
    table = pq.read_table(paths["predictions"])
    row = next(r for r in data["rows"] if r["sample_id"] == "beta_5")
    assert row["category"] == CATEGORY[5 % 4] and row["answer"] == 5 % 3
    cells = {(c["model"], c["condition"]): c for c in row["cells"]}
    oracle = cells[("m1", "oracle|mode=none|k=4|fps=10|seed=0")]
    assert oracle["windows"] == 3 and oracle["windows_correct"] == 1 and oracle["correct"] == 1
    minprob = cells[(EVIL_MODEL, "minprob|mode=qa|k=4|fps=10|seed=0")]
    assert minprob["correct"] == 1 and minprob["answer"] == "ABC"[5 % 3]
    assert minprob["response"].startswith("The answer is")
    mp_rows = table.filter(pc.and_(pc.equal(table.column("sample_id"), "beta_5"),
                                   pc.equal(table.column("strategy"), "maxprob"))).to_pylist()
    m1 = next(r for r in mp_rows if r["model"] == "m1" and r["mode"] == "qa")
    strip = row["frames"]["maxprob"]
    assert strip["indices"] == json.loads(m1["frame_indices"])
    assert strip["timestamps"] == pytest.approx([i / 10 for i in strip["indices"]])
    assert len(strip["thumbs"]) == 4 and row["video_note"] is None
    for index, uri in zip(strip["indices"], strip["thumbs"]):
        assert uri.startswith("data:image/jpeg;base64,")
        image = Image.open(io.BytesIO(base64.b64decode(uri.split(",", 1)[1])))
        assert image.format == "JPEG" and image.size == (80, 60)
        assert read_pattern(np.asarray(image.convert("RGB"))).index == index  # the frame the model saw
    assert row["frames"]["maxprob"]["note"].startswith("models saw different frames")


def test_thumbnails_decode_the_requested_frames(tmp_path: Path) -> None:
    video = write_video(tmp_path / "v.mp4", fps=25, duration=2.0, size=(64, 64))
    uris = thumbnails(video, [7, 2, 19], fps=10.0, width=64)
    got = [read_pattern(np.asarray(Image.open(io.BytesIO(base64.b64decode(u.split(",", 1)[1]))).convert("RGB")))
           for u in uris]
    # at 10 fps from a 25 fps source, decoded frame j is the source frame shown at j / 10 s
    assert [g.index for g in got] == [int(np.floor(j / 10 * 25 + 1e-9)) for j in (7, 2, 19)]


def test_long_videos_are_read_by_seeking(tmp_path: Path) -> None:
    video = write_video(tmp_path / "v.mp4", fps=10, duration=6.0, size=(64, 64), gop=10)
    indices = [55, 3, 31]
    got = {}
    for seek_after in (0.0, 1000.0):  # seek near each timestamp vs one pass by index: the same frames
        uris = thumbnails(video, indices, fps=10.0, timestamps=[i / 10 for i in indices], width=64,
                          seek_after_s=seek_after)
        got[seek_after] = [read_pattern(np.asarray(Image.open(io.BytesIO(base64.b64decode(u.split(",", 1)[1])))
                                                   .convert("RGB"))).index for u in uris]
    assert got[0.0] == got[1000.0] == indices


def test_thumbnail_cap_prefers_sensitive_samples(tmp_path: Path) -> None:
    paths = make_inputs(tmp_path / "in", oracle=False)
    from tempcore.benchmarks import load_benchmark

    loaded = {b: load_benchmark("generic", paths[b], benchmark_name=b, video_root=paths["videos"])
              for b in ("alpha", "beta")}
    report = build_report(pq.read_table(paths["predictions"]), samples_by_benchmark=loaded, n_boot=20,
                          max_thumbnail_samples=4)
    with_thumbs = [r for r in report.browser.rows if r["frames"]["maxprob"].get("thumbs")]
    assert len(with_thumbs) == 8
    assert all(r["category"] in ("temporally_grounded", "visual_bias") for r in with_thumbs)
    assert all(r["frames"]["maxprob"]["indices"] for r in report.browser.rows)  # indices even without images
    assert any("frame thumbnails for 4 of the 12" in n for n in report.browser.notes)


def test_browser_cap_keeps_sensitive_first(tmp_path: Path) -> None:
    paths = make_inputs(tmp_path, oracle=False)
    d = diagnose(pq.read_table(paths["predictions"]))
    chosen, notes = select_samples(d, max_samples=8, seed=3)
    by_bench = {b: [s for bb, s in chosen if bb == b] for b in ("alpha", "beta")}
    for ids in by_bench.values():
        cats = [CATEGORY[int(s.split("_")[1]) % 4] for s in ids]
        assert len(ids) == 8 and sum(c in ("temporally_grounded", "visual_bias") for c in cats) == 6
    assert any("showing 8 of 12 samples (cap --max-samples 8)" in n for n in notes)
    chosen5, _ = select_samples(d, max_samples=5, seed=3)
    assert all(CATEGORY[int(s.split("_")[1]) % 4] in ("temporally_grounded", "visual_bias") for _, s in chosen5)
    assert select_samples(d, max_samples=5, seed=3)[0] == chosen5  # seeded


def test_missing_analyses_and_videos_do_not_stop_the_report(tmp_path: Path, capsys) -> None:
    paths = make_inputs(tmp_path / "in", oracle=False)
    for v in paths["videos"].iterdir():
        v.unlink()
    assert run_report(paths, tmp_path / "out", "--max-samples", "3") == 0
    printed = capsys.readouterr().out
    assert "not available: Oracle gap by FSS category (Table 2): needs oracle predictions" in printed
    md = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "*Not available: needs oracle predictions.*" in md and "## Not available" in md
    data = browser_json((tmp_path / "out" / "report.html").read_text(encoding="utf-8"))
    assert len(data["rows"]) == 6 and all(r["video_note"].startswith("video not found") for r in data["rows"])
    assert "At most 3 samples per benchmark" in (tmp_path / "out" / "report.html").read_text(encoding="utf-8")


def test_report_without_annotations_and_with_ratings(tmp_path: Path) -> None:
    paths = make_inputs(tmp_path / "in")
    ratings = tmp_path / "ratings.csv"
    lines = ["benchmark,sample_id,rating"] + [f"{b},{b}_{i},{5 if i % 4 in (0, 1) else 2}"
                                              for b in ("alpha", "beta") for i in range(N_PER_BENCH)]
    ratings.write_text("\n".join(lines) + "\n")
    rc = main(["report", "--predictions", str(paths["predictions"]), "--out", str(tmp_path / "out"),
               "--ratings", str(ratings), "--bootstrap", "100", "--no-thumbnails"])
    assert rc == 0
    md = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    by_cat = {r["category"]: r for r in md_section_table(md, "Human scores by FSS category (Table 9)")}
    assert by_cat["key"]["mean"] == "5.000" and by_cat["non_key"]["mean"] == "2.000"
    assert by_cat["temporally_sensitive"]["n"] == "12"
    data = browser_json((tmp_path / "out" / "report.html").read_text(encoding="utf-8"))
    assert all(r["question"] is None for r in data["rows"])
    assert any("no annotations given" in n for n in data["notes"])


def test_report_api_on_a_soft_scored_table(tmp_path: Path) -> None:
    paths = make_inputs(tmp_path)
    table = pq.read_table(paths["predictions"])
    p = pc.if_else(pc.equal(table.column("correct"), 1), 0.8, 0.3)
    report = build_report(table.append_column("p_correct", p), scoring="soft", n_boot=50, thumbnails=False)
    written = write_report(report, tmp_path / "soft")
    assert [w.name for w in written[:2]] == ["report.md", "report.html"]
    gap = next(t for t in report.tables if t.key == "oracle_gap_by_fss_bin")
    assert gap.table is not None and gap.table.rows
    fss = {round(f, 6) for f in report.diagnosis.fss}
    assert fss == {0.5, -0.5, 0.0}  # 0.8 - 0.3 for TG; soft scores reach the report


# --- plots ---------------------------------------------------------------------------------------


def test_histogram_counts_and_tau_lines() -> None:
    values = [-1.0, -1.0, 0.0, 0.04, 0.1, 0.5, 1.0, float("nan")]
    edges = [round(-1.05 + 0.1 * i, 2) for i in range(22)]
    svg = plots.histogram(values, edges=edges, title="FSS <x>", xlabel="FSS", ref_lines=(-0.15, 0.15),
                          classify=lambda x: "key" if x > 0.15 else "anti_key" if x < -0.15 else "non_key")
    counts = sorted(int(c) for c in re.findall(r'data-count="(\d+)"', svg))
    assert counts == [1, 1, 1, 2, 2]  # 0.0 and 0.04 share the bin centred on 0
    assert svg.count('class="ref"') == 2 and "FSS &lt;x&gt;" in svg and "<x>" not in svg
    red = re.findall(r'<rect class="bar" data-count="2"[^>]*fill="([^"]+)"', svg)
    assert plots.FSS_CLASS_COLORS["anti_key"] in red and plots.FSS_CLASS_COLORS["non_key"] in red


def test_scatter_merges_points_and_colours_categories() -> None:
    pts = [(1.0, 1.0, "temporally_grounded")] * 3 + [(0.0, 0.0, "trivial"), (0.6, -1.0, "visual_bias")]
    svg = plots.scatter(pts, title="t", xlabel="LIS", ylabel="FSS", vlines=(0.5,), hlines=(-0.15, 0.15))
    circles = re.findall(r'<circle class="pt" data-category="([^"]+)" data-count="(\d+)"', svg)
    assert sorted(circles) == [("temporally_grounded", "3"), ("trivial", "1"), ("visual_bias", "1")]
    assert svg.count('class="ref"') == 3 and "Temporally Grounded (3)" in svg


def test_line_plot_breaks_and_bars_escape_labels() -> None:
    svg = plots.line_plot({"a": [(-1.0, 10.0, 2.0), (0.0, None, None), (1.0, 20.0, 1.0)]}, title="gap",
                          xlabel="FSS", ylabel="pp")
    assert svg.count('class="series"') == 2 and svg.count('class="band"') == 2
    bars = plots.grouped_bars(["<b>bench</b>"], {"MaxProb": [0.5], "MinProb": [None]}, title="x", ylabel="%",
                              percent=True, intervals={"MaxProb": [(0.4, 0.6)]})
    assert bars.count('class="bar"') == 1 and bars.count('class="ci"') == 1
    assert "&lt;b&gt;bench&lt;/b&gt;" in bars and "<b>" not in bars


def test_report_section_holds_the_ablation_audit() -> None:
    from tempcore.report.markdown import render_markdown

    # one model, 6 questions (t1: 4 with 3 options, t2: 2 with 2 options); uniform right on 4, textonly on 1;
    # maxprob / minprob / noframe rows so that the rest of the report runs too
    video = {"q1": 1, "q2": 1, "q3": 1, "q4": 0, "q5": 1, "q6": 0}
    text = {"q1": 1, "q2": 0, "q3": 0, "q4": 0, "q5": 0, "q6": 0}
    rows = []
    for sid in video:
        task, n_opt = ("t1", 3) if sid <= "q4" else ("t2", 2)
        for strategy, c in (("uniform", video[sid]), ("textonly", text[sid]), ("maxprob", video[sid]),
                            ("minprob", 0), ("noframe", text[sid])):
            mode = "qa" if strategy in ("maxprob", "minprob") else "none"
            rows.append({"benchmark": "b", "sample_id": sid, "model": "m", "strategy": strategy, "mode": mode,
                         "k": 8, "window": None, "correct": c, "answer": 0, "n_options": n_opt, "task": task})
    report = build_report(pa.Table.from_pylist(rows), n_boot=50, thumbnails=False)
    section = next(s for s in report.sections if s.key == "ablations")
    items = {i.key: i.table for i in section.items}
    assert set(items) == {"ablation_table", "ablation_averages", "answer_agreement", "order_sensitivity"}
    # no shuffled / reversed rows: the empty order table says what it needs (it printed "None")
    reasons = {i.key: i.unavailable for i in section.items}
    assert items["order_sensitivity"].rows == [] and "shuffled or reversed" in reasons["order_sensitivity"]
    assert reasons["ablation_table"] is None
    avg = {r["condition"]: r for r in items["ablation_averages"].rows}
    assert avg["uniform"]["macro"] == pytest.approx((3 / 4 + 1 / 2) / 2)
    assert avg["textonly"]["micro"] == pytest.approx(1 / 6)
    agree = {(r["a"], r["b"]): r for r in items["answer_agreement"].rows}
    assert agree["uniform", "textonly"]["conditional"] == pytest.approx(1.0)  # textonly right only on q1
    md = render_markdown(report)
    assert "Ablations" in md and "62.5" in md
    # duplicate rows: the section stays and says why the audit could not run
    dup = build_report(pa.Table.from_pylist(rows + rows[:1]), n_boot=50, thumbnails=False)
    failed = next(s for s in dup.sections if s.key == "ablations").items[0]
    assert failed.table is None and failed.unavailable
    # without the video condition there is no such section
    only = pa.Table.from_pylist([r for r in rows if r["strategy"] != "uniform"])
    assert all(s.key != "ablations" for s in build_report(only, n_boot=50, thumbnails=False).sections)


def test_a_table_without_the_tempcore_conditions_still_gets_its_mba_section(tmp_path: Path) -> None:
    """TemporalBench-style predictions (binary questions under one condition, no MaxProb / MinProb):
    the report holds the MBA section and says why the TempCore diagnosis is missing; a table with
    neither the TempCore conditions nor a section of its own still raises (nothing to report)."""
    from tempcore.diagnostics import TableError
    from tempcore.report.html import render_html
    from tempcore.report.markdown import render_markdown

    rows = []
    for g in range(6):
        for i in range(3):
            rows.append({"benchmark": "tb", "sample_id": f"v{g}#b{i}", "model": "m", "strategy": "uniform",
                         "mode": "none", "k": 8, "window": None, "correct": int(g % 2 == 0 or i < 2),
                         "answer": 0, "n_options": 2})
    report = build_report(pa.Table.from_pylist(rows), n_boot=50, thumbnails=False)
    keys = [s.key for s in report.sections]
    assert keys[0] == "tempcore" and "mba" in keys and report.browser is None and report.diagnosis is None
    assert "no maxprob or minprob predictions" in report.sections[0].intro
    mba = next(s for s in report.sections if s.key == "mba")
    overall = next(i.table for i in mba.items if i.table is not None and i.table.rows)
    assert overall.rows[0]["n_groups"] == 6 and overall.rows[0]["correct_groups"] == 3
    md = render_markdown(report)
    assert "TempCore diagnosis" in md and "Not available: the table has no maxprob" in md
    assert "<h2" in render_html(report)
    written = write_report(report, tmp_path / "r")
    assert {p.name for p in written} >= {"report.md", "report.html"}
    plain = [{**r, "sample_id": r["sample_id"].split("#")[0] + r["sample_id"][-1]} for r in rows]
    with pytest.raises(TableError, match="no maxprob"):
        build_report(pa.Table.from_pylist(plain), n_boot=50, thumbnails=False)
