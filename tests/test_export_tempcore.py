"""TempCore subsets: which samples, the manifest (counts, hashes), the three formats, the CLI."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.json as pajson
import pyarrow.parquet as pq
import pytest
import yaml

from tempcore.benchmarks import load_benchmark
from tempcore.cli import main
from tempcore.diagnostics import diagnose
from tempcore.interop.export import ExportError, export_tempcore, subset_records, table_provenance
from tempcore.records import Sample

MODELS = ("m1", "m2")
# sample -> (maxprob, minprob, noframe) correctness of (m1, m2); None = the row is missing.
#   with tau = 0.15, lambda = 0.5:
DESIGN = {
    "s1": ((1, 1), (0, 0), (0, 0)),  # FSS 1, LIS 1      -> temporally_grounded
    "s2": ((0, 0), (1, 1), (0, 0)),  # FSS -1, LIS 1     -> visual_bias
    "s3": ((1, 1), (1, 1), (0, 0)),  # FSS 0, LIS 1      -> frame_agnostic
    "s4": ((1, 0), (0, 0), (1, 1)),  # FSS .5, LIS 0     -> trivial
    "s5": ((1, 0), (0, 0), (1, 0)),  # FSS .5, LIS .5    -> trivial (LIS <= lambda)
    "s6": ((1, 1), (0, None), (0, 0)),  # m2 lacks MinProb -> incomplete
    "s7": ((1, 0), (0, 0), (0, 0)),  # FSS .5, LIS 1     -> temporally_grounded
    "s8": ((0, 0), (1, 0), (0, 1)),  # FSS -.5, LIS .5   -> trivial (no export despite Anti-key)
}
EXPECTED_SUBSET = ["s1", "s2", "s7"]


def _rows(benchmark: str, design: dict) -> list[dict]:
    rows = []
    for sid, triple in design.items():
        for strategy, mode, values in zip(("maxprob", "minprob", "noframe"), ("qa", "qa", "none"), triple):
            for model, value in zip(MODELS, values):
                if value is None:
                    continue
                rows.append({"benchmark": benchmark, "sample_id": sid, "model": model, "strategy": strategy,
                             "mode": mode, "k": 4, "window": None, "correct": value, "fps": 10.0,
                             "condition": f"{strategy}|mode={mode}|k=4|fps=10|seed=0"})
    # rows the scores do not use: Q-mode and uniform (must not appear among the manifest's conditions)
    rows.append({"benchmark": benchmark, "sample_id": "s1", "model": "m1", "strategy": "uniform", "mode": "none",
                 "k": 4, "window": None, "correct": 1, "fps": 10.0, "condition": "uniform|k=4|fps=10|seed=0"})
    return rows


def _annotations(path: Path, ids: list[str], extra_question: dict[str, str] | None = None) -> Path:
    lines = []
    for i, sid in enumerate(ids):
        lines.append({
            "id": sid, "video": f"videos/{sid}.mp4",
            "question": (extra_question or {}).get(sid, f"What happens in clip {i}? é"),
            "options": ["first", "second", "third"], "answer": i % 3,
            "task_type": "order" if i % 2 else "count", "nested": {"level": i},
            **({"start": 1.5, "end": 4.0} if sid == "s2" else {}),
        })
    path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
    return path


@pytest.fixture
def setup(tmp_path: Path):
    table = pa.Table.from_pylist(_rows("bench", DESIGN) + _rows("other", {"o1": DESIGN["s1"], "o2": DESIGN["s3"]}))
    ann = _annotations(tmp_path / "bench.jsonl", list(DESIGN))
    loaded = load_benchmark("generic", ann, benchmark_name="bench", video_root=tmp_path / "vids")
    return table, ann, loaded


def test_subset_holds_exactly_the_temporally_sensitive_samples(setup) -> None:
    table, _, loaded = setup
    d = diagnose(table)
    records = subset_records(d, "bench", loaded.samples)
    assert [r["sample_id"] for r in records] == EXPECTED_SUBSET
    assert sorted(d.temporally_sensitive("bench")) == EXPECTED_SUBSET
    by_id = {r["sample_id"]: r for r in records}
    assert by_id["s1"]["category"] == "temporally_grounded" and by_id["s1"]["fss_category"] == "key"
    assert by_id["s2"]["category"] == "visual_bias" and by_id["s2"]["fss_category"] == "anti_key"
    assert by_id["s7"]["fss"] == pytest.approx(0.5) and by_id["s7"]["lis"] == pytest.approx(1.0)
    # the original fields come along unchanged
    original = {s.sample_id: s for s in loaded.samples}
    for sid, record in by_id.items():
        back = Sample.from_dict({k: v for k, v in record.items() if k not in ("fss", "lis", "fss_category", "category")})
        assert back == original[sid] and back.metadata == original[sid].metadata
    assert by_id["s2"]["start"] == 1.5 and by_id["s2"]["metadata"]["nested"] == {"level": 1}


def test_a_stricter_tau_changes_the_subset(setup) -> None:
    table, _, loaded = setup
    records = subset_records(diagnose(table, tau=0.5), "bench", loaded.samples)
    assert [r["sample_id"] for r in records] == ["s1", "s2"]  # s7's FSS 0.5 is no longer > tau


def test_jsonl_export_and_manifest(setup, tmp_path: Path) -> None:
    table, ann, loaded = setup
    d = diagnose(table)
    paths = export_tempcore(d, {"bench": loaded}, tmp_path / "out", "jsonl", table=table,
                            created="2025-01-01T00:00:00Z")
    folder = tmp_path / "out" / "bench"
    assert paths == [folder / "tempcore_bench.jsonl", folder / "manifest.json"]
    lines = [json.loads(x) for x in (folder / "tempcore_bench.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [x["sample_id"] for x in lines] == EXPECTED_SUBSET
    assert lines[0]["question"].endswith("é") and lines[0]["options"] == ["first", "second", "third"]
    m = json.loads((folder / "manifest.json").read_text())
    file_digest = hashlib.sha256(ann.read_bytes()).hexdigest()
    assert m["annotations"]["sha256"] == hashlib.sha256(f"{file_digest}\n".encode()).hexdigest()
    assert m["annotations"]["sha256"] == loaded.annotations_hash
    assert m["annotations"]["files"] == [str(ann)]
    assert m["files"]["data_sha256"] == hashlib.sha256((folder / "tempcore_bench.jsonl").read_bytes()).hexdigest()
    assert m["benchmark"] == "bench" and m["models"] == ["m1", "m2"]
    assert m["conditions"] == ["maxprob|mode=qa|k=4|fps=10|seed=0", "minprob|mode=qa|k=4|fps=10|seed=0",
                               "noframe|mode=none|k=4|fps=10|seed=0"]
    assert (m["tau"], m["lambda"], m["fss_mode"], m["scoring"]) == (0.15, 0.5, "qa", "hard")
    c = m["counts"]
    assert (c["n"], c["incomplete"], c["trivial"], c["frame_agnostic"]) == (8, 1, 3, 1)
    assert (c["temporally_grounded"], c["visual_bias"], c["temporally_sensitive"]) == (2, 1, 3)
    assert c["tpi"] == pytest.approx(3 / (7 - 3))
    assert m["exported"] == 3 and m["exported_by_category"] == {"temporally_grounded": 2, "visual_bias": 1}
    assert m["predictions_not_in_annotations"] == 0 and m["annotations_without_predictions"] == 0
    assert m["created"] == "2025-01-01T00:00:00Z" and m["tempcore_version"]


def test_parquet_export(setup, tmp_path: Path) -> None:
    table, _, loaded = setup
    export_tempcore(diagnose(table), {"bench": loaded}, tmp_path / "out", "parquet")
    t = pq.read_table(tmp_path / "out" / "bench" / "tempcore_bench.parquet")
    assert t.column("sample_id").to_pylist() == EXPECTED_SUBSET
    assert t.schema.field("options").type == pa.list_(pa.string())
    rows = t.to_pylist()
    assert json.loads(rows[1]["metadata"]) == {"nested": {"level": 1}, "task_type": "order"}
    assert rows[1]["start"] == 1.5 and rows[0]["start"] is None
    assert [r["category"] for r in rows] == ["temporally_grounded", "visual_bias", "temporally_grounded"]
    m = json.loads((tmp_path / "out" / "bench" / "manifest.json").read_text())
    assert m["format"] == "parquet" and m["files"]["data"] == "tempcore_bench.parquet"


def _function_loader():
    """A YAML loader that understands lmms-eval's ``!function module.name`` tag."""

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!function", lambda loader, node: ("function", loader.construct_scalar(node)))
    return Loader


def _import(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_lmms_eval_task_folder(setup, tmp_path: Path, monkeypatch) -> None:
    table, _, loaded = setup
    (tmp_path / "vids" / "videos").mkdir(parents=True)
    for sid in EXPECTED_SUBSET:
        (tmp_path / "vids" / "videos" / f"{sid}.mp4").write_bytes(b"\0")
    paths = export_tempcore(diagnose(table), {"bench": loaded}, tmp_path / "out", "lmms-eval")
    folder = tmp_path / "out" / "bench"
    assert sorted(p.name for p in paths) == ["manifest.json", "tempcore_bench.jsonl", "tempcore_bench.yaml",
                                             "tempcore_extractor.py", "utils.py"]
    config = yaml.load((folder / "tempcore_bench.yaml").read_text(), Loader=_function_loader())
    assert config["task"] == "tempcore_bench" and config["tag"] == "tempcore"
    assert config["dataset_path"] == "json" and config["test_split"] == "test"
    # relative to the YAML (lmms-eval 0.7 resolves it there): the folder can move
    assert config["dataset_kwargs"]["data_files"]["test"] == "tempcore_bench.jsonl"
    assert config["output_type"] == "generate_until" and config["cluster_key"] == "video"
    # the task's Python files are the package's own modules, byte for byte; the manifest keeps hashes
    manifest = json.loads((folder / "manifest.json").read_text())
    for name, module in (("utils.py", "interop/lmms_task.py"), ("tempcore_extractor.py", "extractor.py")):
        assert (folder / name).read_bytes() == (SRC / module).read_bytes()
        key = name.removesuffix(".py")
        assert manifest["files"][f"{key}_sha256"] == hashlib.sha256((folder / name).read_bytes()).hexdigest()
    assert manifest["video_root"] == str((tmp_path / "vids").resolve())

    # moved elsewhere, the folder still works (nothing in it names its old place)
    moved = tmp_path / "moved" / "task"
    shutil.copytree(folder, moved)
    shutil.rmtree(tmp_path / "out")
    data_file = moved / "tempcore_bench.jsonl"
    utils = _import(moved / "utils.py", "tempcore_bench_utils")
    # every !function the YAML names exists in utils.py
    functions = [config[k] for k in ("doc_to_visual", "doc_to_text", "doc_to_target", "process_results")]
    functions += [m["aggregation"] for m in config["metric_list"]]
    for kind, ref in functions:
        module, _, name = ref.partition(".")
        assert kind == "function" and module == "utils" and callable(getattr(utils, name)), ref
    metrics = [m["metric"] for m in config["metric_list"]]
    assert metrics == ["tempcore_accuracy", "tempcore_temporally_grounded_accuracy", "tempcore_visual_bias_accuracy"]

    # Hugging Face's json builder reads JSONL with pyarrow's reader: one type per column is required
    arrow = pajson.read_json(data_file)
    assert arrow.schema.field("metadata").type == pa.string() and arrow.num_rows == 3
    docs = [json.loads(x) for x in data_file.read_text(encoding="utf-8").splitlines()]
    assert [d["sample_id"] for d in docs] == EXPECTED_SUBSET
    kwargs = config["lmms_eval_specific_kwargs"]["default"]
    per_metric: dict[str, list] = {m: [] for m in metrics}
    for doc in docs:
        assert isinstance(doc["metadata"], str) and json.loads(doc["metadata"])["task_type"]
        assert utils.doc_to_visual(doc) == [str(tmp_path / "vids" / doc["video"])]
        text = utils.doc_to_text(doc, kwargs)
        assert text.startswith(doc["question"]) and "\nA. first\nB. second\nC. third\n" in text
        assert text.endswith(kwargs["post_prompt"])
        target = utils.doc_to_target(doc)
        assert target == "ABC"[doc["answer"]]
        good = utils.process_results(doc, [f"The answer is ({target})."])
        bad = utils.process_results(doc, ["I cannot tell."])
        # a category metric receives its own documents only
        assert set(good) == {"tempcore_accuracy", f"tempcore_{doc['category']}_accuracy"}
        item = good["tempcore_accuracy"]
        assert item["score"] == 1.0 and bad["tempcore_accuracy"]["score"] == 0.0
        # self-describing: the import needs nothing else
        assert (item["benchmark"], item["sample_id"], item["video"]) == ("bench", doc["sample_id"], doc["video"])
        assert item["options"] == ["first", "second", "third"] and item["answer"] == doc["answer"]
        assert item["category"] == doc["category"] and item["parsed"] == target and item["target"] == target
        assert bad["tempcore_accuracy"]["parsed"] is None and bad["tempcore_accuracy"]["parse_error"]
        assert item["extractor_sha256"] == manifest["files"]["tempcore_extractor_sha256"]
        for metric, value in (good if doc["sample_id"] != "s7" else bad).items():
            per_metric[metric].append(value)
    assert len(per_metric["tempcore_temporally_grounded_accuracy"]) == 2
    assert len(per_metric["tempcore_visual_bias_accuracy"]) == 1
    # one scale: fractions, like the items' score (which lmms-eval's standard errors use)
    assert utils.aggregate_accuracy(per_metric["tempcore_accuracy"]) == pytest.approx(2 / 3)
    assert utils.aggregate_temporally_grounded_accuracy(per_metric["tempcore_temporally_grounded_accuracy"]) == 0.5
    assert utils.aggregate_visual_bias_accuracy(per_metric["tempcore_visual_bias_accuracy"]) == 1.0
    # a missing video is a clear error, and TEMPCORE_VIDEO_ROOT redirects the root
    monkeypatch.setenv("TEMPCORE_VIDEO_ROOT", str(tmp_path / "elsewhere"))
    with pytest.raises(FileNotFoundError, match="s1"):
        utils.doc_to_visual(docs[0])


SRC = Path(__file__).resolve().parent.parent / "src" / "tempcore"
CORPUS = Path(__file__).parent / "data" / "answer_corpus.jsonl"

_PLAIN_PYTHON_PROBE = r"""
import importlib.util, json, sys
folder, corpus = sys.argv[1], sys.argv[2]
try:
    import tempcore  # noqa: F401
    print(json.dumps({"tempcore_importable": True}))
    sys.exit(0)
except ImportError:
    pass
spec = importlib.util.spec_from_file_location("utils", folder + "/utils.py")
utils = importlib.util.module_from_spec(spec)
spec.loader.exec_module(utils)
extractor = utils._state()["extractor"]
out = []
for line in open(corpus, encoding="utf-8"):
    row = json.loads(line)
    e = extractor.extract_choice(row["response"], row.get("options"), row.get("n_options"))
    out.append([e.index, e.letter, e.method, e.error])
styles = json.loads(sys.argv[3])
docs = [json.loads(x) for x in open(folder + "/" + sys.argv[4], encoding="utf-8")]
scores = [utils.process_results(docs[i % len(docs)], [r])["tempcore_accuracy"]["score"] for i, r in enumerate(styles)]
print(json.dumps({"tempcore_importable": False, "modules": sorted(sys.modules), "corpus": out, "styles": scores}))
"""


def test_exported_parser_is_tempcore_s_extractor_without_tempcore(setup, tmp_path: Path) -> None:
    """In a Python with the standard library only (no site-packages, no tempcore), the exported task
    parses the whole answer corpus, and the 28 response styles, exactly as ``tempcore.answers`` does."""
    from lmms_interop.styles import STYLES, styled_response
    from tempcore.answers import extract_choice

    table, _, loaded = setup
    export_tempcore(diagnose(table), {"bench": loaded}, tmp_path / "out", "lmms-eval")
    folder = tmp_path / "out" / "bench"
    docs = [json.loads(x) for x in (folder / "tempcore_bench.jsonl").read_text(encoding="utf-8").splitlines()]
    responses = [styled_response(i, docs[i % len(docs)]["options"], docs[i % len(docs)]["answer"])
                 for i in range(2 * len(STYLES))]
    proc = subprocess.run(
        [sys.executable, "-I", "-S", "-c", _PLAIN_PYTHON_PROBE, str(folder), str(CORPUS), json.dumps(responses),
         "tempcore_bench.jsonl"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["tempcore_importable"] is False
    assert not any(m == "tempcore" or m.startswith("tempcore.") for m in got["modules"])
    rows = [json.loads(x) for x in CORPUS.read_text(encoding="utf-8").splitlines()]
    assert len(got["corpus"]) == len(rows) == 267
    for row, plain in zip(rows, got["corpus"]):
        e = extract_choice(row["response"], row.get("options"), row.get("n_options"))
        assert plain == [e.index, e.letter, e.method, e.error], row["id"]
    expected = [float(extract_choice(r, docs[i % len(docs)]["options"]).index == docs[i % len(docs)]["answer"])
                for i, r in enumerate(responses)]
    assert got["styles"] == expected
    # tempcore reads every style: gold in two documents of three, a wrong option in the third
    assert expected == [float(i % 3 != 2) for i in range(len(responses))]


def test_extractor_imports_the_standard_library_only() -> None:
    import ast

    for module in ("extractor.py", "interop/lmms_task.py"):
        tree = ast.parse((SRC / module).read_text(encoding="utf-8"))
        names = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                assert node.level == 0, f"{module}: relative import"
                names.add(str(node.module).split(".")[0])
        outside = sorted(n for n in names if n not in sys.stdlib_module_names and n != "__future__")
        assert not outside, f"{module} imports {outside}: the exported copy must import on its own"
    from tempcore import answers, extractor
    from tempcore.records import LETTERS

    assert extractor.LETTERS == LETTERS and answers.Extraction is extractor.Extraction


def test_errors_name_the_problem(setup, tmp_path: Path) -> None:
    table, _, loaded = setup
    d = diagnose(table)
    with pytest.raises(ExportError, match="nope"):
        export_tempcore(d, {"nope": loaded}, tmp_path / "o", "jsonl")
    partial = [s for s in loaded.samples if s.sample_id != "s2"]
    with pytest.raises(ExportError, match="'s2'"):
        export_tempcore(d, {"bench": partial}, tmp_path / "o", "jsonl")
    with pytest.raises(ExportError, match="unknown export format"):
        export_tempcore(d, {"bench": loaded}, tmp_path / "o", "csv")
    grounding = [Sample("bench", s.sample_id, s.video, s.question, answer_interval=(1.0, 2.0)) for s in loaded.samples]
    with pytest.raises(ExportError, match="multiple-choice"):
        export_tempcore(d, {"bench": grounding}, tmp_path / "o", "lmms-eval")
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").rglob("manifest.json"))


def test_provenance_honours_models_and_rotation(setup) -> None:
    table, _, _ = setup
    d = diagnose(table, models=["m1"])
    prov = table_provenance(table, d)
    assert prov["bench"]["models"] == ["m1"] and prov["other"]["models"] == ["m1"]


def test_cli_exports_given_benchmarks(setup, tmp_path: Path, capsys) -> None:
    table, ann, _ = setup
    pred = tmp_path / "pred.parquet"
    pq.write_table(table, pred)
    other = _annotations(tmp_path / "other.jsonl", ["o1", "o2"])
    rc = main(["export", "tempcore", "--predictions", str(pred), "--annotations", f"bench={ann}",
               f"other={other}", "--out", str(tmp_path / "cli"), "--format", "parquet"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "bench: 3 Temporally Sensitive sample(s) (2 Temporally Grounded, 1 Visual Bias) of 8" in out
    assert pq.read_table(tmp_path / "cli" / "other" / "tempcore_other.parquet").column("sample_id").to_pylist() == ["o1"]
    # --benchmark NAME with a bare PATH; one benchmark only: the other is reported, not silently dropped
    rc = main(["export", "tempcore", "--predictions", str(pred), "--benchmark", "bench", "--annotations", str(ann),
               "--out", str(tmp_path / "cli2"), "--tau", "0.5"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "not exported (no --annotations): other" in out
    m = json.loads((tmp_path / "cli2" / "bench" / "manifest.json").read_text())
    assert m["tau"] == 0.5 and m["exported"] == 2
    rc = main(["export", "tempcore", "--predictions", str(pred), "--annotations", str(ann), "--out", str(tmp_path)])
    assert rc == 1 and "NAME=PATH" in capsys.readouterr().err
