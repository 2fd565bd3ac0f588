"""Each benchmark format: the real excerpts in tests/data/formats, and small files written here
that mirror the real shapes (variable option counts, padding, bad rows, side files)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tempcore.benchmarks import (
    AnnotationFileError,
    BenchmarkOptionError,
    InvalidRowError,
    load_benchmark,
    preflight,
)
from tempcore.benchmarks.temporalbench import split_question
from tempcore.cli import main


def dump(path: Path, data) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1))
    return path


def rows_of(result, *fields):
    return [tuple(getattr(s, f) for f in fields) for s in result.samples]


# --- Video-MME ---------------------------------------------------------------------------


def test_videomme_excerpt(data_dir):
    result = load_benchmark("videomme", data_dir / "formats" / "videomme_excerpt.json")
    assert rows_of(result, "sample_id", "video", "answer") == [
        ("001-1", "fFjv93ACGo8.mp4", 2),
        ("001-2", "fFjv93ACGo8.mp4", 0),
        ("667-3", "AFFZjzuAHMg.mp4", 1),
    ]
    first = result.samples[0]
    assert first.options == ("Apples.", "Candles.", "Berries.", "The three kinds are of the same number.")
    assert first.answer_text == "Berries."
    assert {k: first.metadata[k] for k in ("duration", "domain", "sub_category", "task_type")} == {
        "duration": "short",
        "domain": "Knowledge",
        "sub_category": "Humanity & History",
        "task_type": "Counting Problem",
    }


def _videomme_row(qid: str, options: list, answer: str) -> dict:
    return {
        "video_id": "001",
        "duration": "short",
        "domain": "Knowledge",
        "sub_category": "Law",
        "url": "https://example.invalid",
        "videoID": "abc",
        "question_id": qid,
        "task_type": "Temporal Reasoning",
        "question": "What comes first?",
        "options": options,
        "answer": answer,
    }


def test_videomme_bad_rows(tmp_path):
    path = dump(
        tmp_path / "videomme.json",
        [
            _videomme_row("1-1", ["A. x", "B. y", "C. z", "D. w"], "D"),
            _videomme_row("1-2", ["A. x", "B. y", "C. z", "D. w"], "E"),
            _videomme_row("1-1", ["A. x", "B. y"], "A"),
            _videomme_row("1-4", ["A. x", "B. y", "C. N/A", "D. N/A"], "B"),
        ],
    )
    with pytest.raises(InvalidRowError) as err:
        load_benchmark("videomme", path)
    assert (err.value.row, err.value.sample_id) == (2, "1-2") and "'E'" in err.value.reason
    result = load_benchmark("videomme", path, skip_invalid=True)
    assert rows_of(result, "sample_id", "options", "answer") == [
        ("1-1", ("x", "y", "z", "w"), 3),
        ("1-4", ("x", "y"), 1),
    ]
    assert [(r.row, r.kind) for r in result.invalid] == [(2, "unresolvable_answer"), (3, "duplicate_id")]


def test_videomme_parquet(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [_videomme_row("9-1", ["A. x", "B. y", "C. z"], "C")]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "test-00000-of-00001.parquet")
    result = load_benchmark("videomme", tmp_path)
    assert rows_of(result, "sample_id", "options", "answer") == [("9-1", ("x", "y", "z"), 2)]


# --- LongVideoBench ----------------------------------------------------------------------


def test_longvideobench_excerpt(data_dir):
    result = load_benchmark("longvideobench", data_dir / "formats" / "longvideobench_val_excerpt.json")
    assert rows_of(result, "sample_id", "video", "answer") == [
        ("86CxyhFV9MI_0", "86CxyhFV9MI.mp4", 1),
        ("5qMcDQd17Y4_1", "5qMcDQd17Y4.mp4", 0),
    ]
    meta = result.samples[1].metadata
    assert (meta["duration_group"], meta["question_category"], meta["level"], meta["duration"]) == (
        600,
        "T2O",
        "L1-Perception",
        584.64,
    )
    assert result.samples[1].answer_text == "door"


def test_longvideobench_three_to_five_candidates_and_test_split(tmp_path):
    def lvb(i, candidates, choice=...):
        r = {
            "id": f"v_{i}",
            "video_id": "v",
            "question": "q?",
            "candidates": candidates,
            "video_path": "v.mp4",
        }
        if choice is not ...:
            r["correct_choice"] = choice
        r.update(duration_group=15, question_category="E2O", level="L1-Perception", duration=12.0)
        return r

    path = dump(
        tmp_path / "lvb_val.json",
        [
            lvb(0, ["a", "b", "c"], 2),
            lvb(1, ["a", "b", "c", "d", "e"], 4),
            lvb(2, ["a", "b"], 5),
            lvb(3, ["a", "b"]),
        ],
    )
    result = load_benchmark("longvideobench", path, skip_invalid=True)
    assert rows_of(result, "sample_id", "answer") == [("v_0", 2), ("v_1", 4)]
    assert [len(s.options) for s in result.samples] == [3, 5]
    assert [(r.row, r.kind) for r in result.invalid] == [(3, "unresolvable_answer"), (4, "missing_field")]
    assert "correct_choice" in result.invalid[1].reason


# --- NExT-QA -----------------------------------------------------------------------------


def test_nextqa_excerpt(data_dir):
    result = load_benchmark("nextqa", data_dir / "formats" / "nextqa_val_excerpt.csv")
    assert len(result.samples) == 8
    first = result.samples[0]
    assert (first.sample_id, first.video, first.answer_text) == (
        "4010069381_6",
        "4010069381.mp4",
        "roll the handle",
    )
    assert first.metadata["type"] == "CH" and first.metadata["type_group"] == "causal"
    assert first.metadata["frame_count"] == 369
    assert {s.metadata["type_group"] for s in result.samples} == {"causal", "temporal"}
    assert all(len(s.options) == 5 for s in result.samples)


def test_nextqa_video_map_next_to_csv_or_given(tmp_path, data_dir):
    folder = tmp_path / "nextqa"
    folder.mkdir()
    shutil.copy(data_dir / "formats" / "nextqa_val_excerpt.csv", folder / "val.csv")
    mapping = {
        v: f"10{i:02d}/{v}"
        for i, v in enumerate(
            ["4010069381", "4882821564", "2435100235", "2834146886", "8132842161", "4260763967", "3462517143"]
        )
    }
    dump(folder / "map_vid_vidorID.json", mapping)
    with pytest.raises(InvalidRowError) as err:
        load_benchmark("nextqa", folder)
    assert err.value.row == 9 and "3441428429" in err.value.reason  # the last CSV line is not in the map
    result = load_benchmark("nextqa", folder / "val.csv", skip_invalid=True)
    assert result.samples[0].video == "1000/4010069381.mp4"
    assert [r.kind for r in result.invalid] == ["unknown_video"]
    assert [p.name for p in result.source_files] == ["map_vid_vidorID.json", "val.csv"]
    other = dump(tmp_path / "elsewhere.json", {**mapping, "3441428429": "1099/3441428429"})
    result = load_benchmark("nextqa", folder / "val.csv", video_map=other)
    assert result.samples[-1].video == "1099/3441428429.mp4" and result.invalid == []


def test_nextqa_bad_answers_and_padding(tmp_path):
    header = "video,frame_count,width,height,question,answer,qid,type,a0,a1,a2,a3,a4\n"
    path = tmp_path / "val.csv"
    path.write_text(
        header
        + "11,10,640,480,what first,4,1,TP,a,b,c,d,e\n"
        + "11,10,640,480,what next,5,2,TN,a,b,c,d,e\n"
        + "12,10,640,480,why,1,1,CW,a,b,,,\n"
        + "12,10,640,480,why again,x,2,CW,a,b,c,d,e\n"
    )
    result = load_benchmark("nextqa", path, skip_invalid=True)
    assert rows_of(result, "sample_id", "options", "answer") == [
        ("11_1", ("a", "b", "c", "d", "e"), 4),
        ("12_1", ("a", "b"), 1),
    ]
    assert [(r.row, r.sample_id, r.kind) for r in result.invalid] == [
        (3, "11_2", "unresolvable_answer"),
        (5, "12_2", "unresolvable_answer"),
    ]


# --- MLVU --------------------------------------------------------------------------------


def _mlvu_folder(tmp_path: Path, data_dir: Path) -> Path:
    json_dir = tmp_path / "MLVU" / "json"
    json_dir.mkdir(parents=True)
    shutil.copy(data_dir / "formats" / "mlvu_4_count_excerpt.json", json_dir / "4_count.json")
    shutil.copy(data_dir / "formats" / "mlvu_5_order_excerpt.json", json_dir / "5_order.json")
    dump(
        json_dir / "8_sub_scene.json",
        [
            {
                "video": "subPlot_1.mp4",
                "duration": 500.0,
                "question": "Describe the scene.",
                "answer": "...",
                "question_type": "subPlot",
                "scoring_points": ["a", "b"],
            },
        ],
    )
    dump(
        json_dir / "10_extra.json",
        [
            {
                "video": "e.mp4",
                "duration": 3.0,
                "question": "How many?",
                "candidates": ["1", "2", "3"],
                "answer": " 3",
                "question_type": "count",
            },
            {
                "video": "f.mp4",
                "duration": 3.0,
                "question": "How many?",
                "candidates": ["1", "2", "3", "4", "5", "6"],
                "answer": "seven",
                "question_type": "count",
            },
            {
                "video": "g.mp4",
                "duration": 3.0,
                "question": "How many?",
                "candidates": [],
                "answer": "1",
                "question_type": "count",
            },
        ],
    )
    return json_dir


def test_mlvu_excerpts_each_file(data_dir):
    count = load_benchmark("mlvu", data_dir / "formats" / "mlvu_4_count_excerpt.json")
    assert rows_of(count, "sample_id", "answer") == [
        ("mlvu_4_count_excerpt_0", 1),
        ("mlvu_4_count_excerpt_1", 1),
    ]
    assert count.samples[0].answer_text == "1" and count.samples[1].answer_text == "2"
    order = load_benchmark("mlvu", data_dir / "formats" / "mlvu_5_order_excerpt.json")
    assert [s.answer_text for s in order.samples] == ["1->2->3->4", "2->4->1->3"]
    assert order.samples[0].metadata["question_type"] == "order"


def test_mlvu_folder_open_ended_skipped_and_stable_ids(tmp_path, data_dir):
    json_dir = _mlvu_folder(tmp_path, data_dir)
    with pytest.raises(InvalidRowError) as err:
        load_benchmark("mlvu", json_dir)
    assert err.value.file.name == "10_extra.json" and err.value.row == 2
    result = load_benchmark("mlvu", json_dir, skip_invalid=True)
    ids = [s.sample_id for s in result.samples]
    assert ids == ["4_count_0", "4_count_1", "5_order_0", "5_order_1", "10_extra_0"]  # numbered order
    assert ids == [s.sample_id for s in load_benchmark("mlvu", json_dir, skip_invalid=True).samples]
    assert result.samples[0].video == "4_count/count_126.mp4"
    assert result.samples[0].metadata["task"] == "4_count"
    assert result.samples[-1].answer_text == "3"
    assert [(r.file.name, r.row, r.sample_id, r.reason) for r in result.skipped] == [
        ("8_sub_scene.json", 1, "8_sub_scene_0", "open-ended (question_type 'subPlot'): not multiple choice")
    ]
    assert [(r.row, r.kind) for r in result.invalid] == [(2, "unresolvable_answer"), (3, "no_options")]
    assert result.video_root == tmp_path / "MLVU" / "video"
    flat = load_benchmark("mlvu", json_dir / "4_count.json", video_layout="flat")
    assert flat.samples[0].video == "count_126.mp4"
    with pytest.raises(BenchmarkOptionError):
        load_benchmark("mlvu", json_dir / "4_count.json", video_layout="nested")


def test_mlvu_cli_reports_skipped(tmp_path, data_dir, capsys):
    json_dir = _mlvu_folder(tmp_path, data_dir)
    assert (
        main(["benchmarks", "inspect", "mlvu", "--annotations", str(json_dir), "--skip-invalid", "--json"])
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert (out["samples"], out["skipped"], out["invalid"]) == (5, 1, 2)
    assert out["options_histogram"] == {"3": 1, "4": 4}
    assert out["skipped_by_reason"] == {"open-ended (question_type 'subPlot'): not multiple choice": 1}


# --- EgoSchema ---------------------------------------------------------------------------


def _ego_question(uid: str, n: int = 5) -> dict:
    q = {"q_uid": uid, "google_drive_id": "gd", "question": f"What did c do in {uid}?"}
    q.update({f"option {i}": f"c did thing {i}" for i in range(n)})
    return q


def test_egoschema_folder_answers_and_skipped(tmp_path):
    folder = tmp_path / "egoschema"
    dump(
        folder / "questions.json",
        [_ego_question("u1"), _ego_question("u2"), _ego_question("u3"), _ego_question("u4", 1)],
    )
    dump(folder / "subset_answers.json", {"u1": 3, "u3": "7", "u4": 0, "orphan": 1})
    result = load_benchmark("egoschema", folder, skip_invalid=True)
    assert rows_of(result, "sample_id", "video", "answer") == [("u1", "u1.mp4", 3)]
    assert result.samples[0].metadata == {"q_uid": "u1", "google_drive_id": "gd"}
    assert [(r.sample_id, r.reason) for r in result.skipped] == [
        ("u2", "no public answer (not in the answers file)")
    ]
    assert [(r.sample_id, r.kind) for r in result.invalid] == [
        ("u3", "unresolvable_answer"),
        ("u4", "single_option"),
    ]
    assert result.provenance["answers_without_question"] == 1
    assert [p.name for p in result.source_files] == ["questions.json", "subset_answers.json"]


def test_egoschema_answers_option_and_missing_answers(tmp_path):
    q = dump(tmp_path / "q" / "questions.json", [_ego_question("u1")])
    with pytest.raises(AnnotationFileError, match="subset_answers.json not found"):
        load_benchmark("egoschema", q)
    answers = dump(tmp_path / "elsewhere" / "answers.json", {"u1": 4})
    assert load_benchmark("egoschema", q, answers=answers).samples[0].answer == 4


# --- MVBench / TVBench -------------------------------------------------------------------


def _mc(video: str, answer: str, candidates: list[str], **extra) -> dict:
    return {"video": video, "question": "What happened?", "candidates": candidates, "answer": answer, **extra}


def test_mvbench_task_table_segments_frames_and_gifs(tmp_path):
    json_dir = tmp_path / "MVBench" / "json"
    dump(
        json_dir / "action_sequence.json",
        [
            _mc("A1.mp4", "Sat down.", ["Sat down.", "Stood up.", "Ran.", "Slept."], start=2.5, end=9.0),
            _mc("A2.mp4", "Ran.", ["Sat down.", "Ran."]),  # bound task without start / end
            _mc("A3.mp4", "Ran.", ["Sat down.", "Ran.", "Slept."], start=9.0, end=3.0),
        ],
    )
    dump(
        json_dir / "episodic_reasoning.json",
        [_mc("castle_s01e01_seg02_clip_00", "House.", ["House.", "Chase.", "Foreman."], start=1.0, end=20.0)],
    )
    dump(
        json_dir / "action_antonym.json",
        [_mc("1234.webm", "not sure", ["plugging in", "removing into", "not sure"], start=0, end=1)],
    )
    dump(
        json_dir / "fine_grained_action.json", [_mc("clip.gif", "jumping", ["jumping", "running", "sitting"])]
    )
    result = load_benchmark("mvbench", json_dir, skip_invalid=True)
    by_id = {s.sample_id: s for s in result.samples}
    seq = by_id["action_sequence_0"]
    assert (seq.video, seq.start, seq.end, seq.media) == ("star/Charades_v1_480/A1.mp4", 2.5, 9.0, "video")
    assert seq.metadata["task_name"] == "Action Sequence"
    er = by_id["episodic_reasoning_0"]
    assert (er.video, er.media, er.metadata["frames_fps"]) == (
        "tvqa/frames_fps3_hq/castle_s01e01_seg02_clip_00",
        "frames",
        3.0,
    )
    aa = by_id["action_antonym_0"]
    assert (aa.start, aa.end, aa.metadata["start"]) == (
        None,
        None,
        0,
    )  # not a bound task: kept in metadata only
    assert by_id["fine_grained_action_0"].media == "gif"
    assert [(r.file.name, r.row, r.sample_id, r.kind) for r in result.invalid] == [
        ("action_sequence.json", 2, "action_sequence_1", "missing_field"),
        ("action_sequence.json", 3, "action_sequence_2", "bad_interval"),
    ]
    assert result.video_root == tmp_path / "MVBench" / "video"
    assert result.provenance["task_table"] == "default"

    root = result.video_root
    (root / "star" / "Charades_v1_480").mkdir(parents=True)
    (root / "star" / "Charades_v1_480" / "A1.mp4").write_bytes(b"\0")
    (root / "tvqa" / "frames_fps3_hq" / "castle_s01e01_seg02_clip_00").mkdir(parents=True)
    missing = preflight(result.samples, root)
    assert [m.video for m in missing] == ["ssv2_video/1234.webm", "Moments_in_Time_Raw/videos/clip.gif"]


def test_mvbench_user_task_table_and_unknown_task(tmp_path):
    json_dir = tmp_path / "json"
    dump(json_dir / "my_task.json", [_mc("x.mp4", "b", ["a", "b"], start=1, end=2)])
    with pytest.raises(AnnotationFileError, match="my_task.json not in the mvbench task table"):
        load_benchmark("mvbench", json_dir)
    table = dump(
        tmp_path / "table.json",
        {
            "My Task": ["my_task.json", "mine/clips", "frame", True, 5],
            "action_count": {"folder": "local/perception", "media": "video"},
        },
    )
    dump(json_dir / "action_count.json", [_mc("c.mp4", "3", ["2", "3", "4"])])
    result = load_benchmark("mvbench", json_dir, task_table=table)
    assert rows_of(result, "sample_id", "video", "media", "start", "end") == [
        ("action_count_0", "local/perception/c.mp4", "video", None, None),
        ("my_task_0", "mine/clips/x.mp4", "frames", 1.0, 2.0),
    ]
    assert result.samples[1].metadata["frames_fps"] == 5.0
    assert table in result.source_files and result.provenance["task_table"] == str(table)
    bad = dump(tmp_path / "bad.json", {"x": {"media": "video"}})
    with pytest.raises(BenchmarkOptionError, match="task_table entry 'x'"):
        load_benchmark("mvbench", json_dir, task_table=bad)


def test_tvbench_layout_revision_and_cli_option(tmp_path, capsys):
    json_dir = tmp_path / "TVBench" / "json"
    dump(
        json_dir / "action_localization.json",
        [
            _mc(
                "loc.mp4",
                "At the end of the video.",
                [
                    "At the beginning of the video.",
                    "In the middle of the video.",
                    "At the end of the video.",
                    "Throughout the entire video.",
                ],
                start=3.0,
                end=30.0,
            )
        ],
    )
    dump(json_dir / "scene_transition.json", [_mc("s.mp4", "From A to B.", ["From B to A.", "From A to B."])])
    result = load_benchmark("tvbench", json_dir, revision="ad7968f")
    assert rows_of(result, "sample_id", "video", "start", "end", "answer") == [
        ("action_localization_0", "action_localization/loc.mp4", 3.0, 30.0, 2),
        ("scene_transition_0", "scene_transition/s.mp4", None, None, 1),
    ]
    assert {s.metadata["revision"] for s in result.samples} == {"ad7968f"}
    assert result.provenance["revision"] == "ad7968f"
    assert load_benchmark("tvbench", json_dir).samples[0].metadata["revision"] == "unspecified"
    args = [
        "benchmarks",
        "inspect",
        "tvbench",
        "--annotations",
        str(json_dir),
        "--json",
        "-o",
        "revision=abc",
    ]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert (
        out["provenance"]["revision"] == "abc"
        and out["segments"] == 1
        and out["answer_histogram"] == {"1": 1, "2": 1}
    )


# --- TemporalBench -----------------------------------------------------------------------

_TB_Q = (
    "Which caption best describes this video?\n"
    "A. A person closes the fridge with his left hand. \n"
    "B. A person closes the fridge with his right hand.\n"
    "Answer with the option's letter from the given choices directly."
)


def test_split_question():
    stem, options, suffix = split_question(_TB_Q)
    assert stem == "Which caption best describes this video?"
    assert options == [
        "A person closes the fridge with his left hand.",
        "A person closes the fridge with his right hand.",
    ]
    assert suffix == "Answer with the option's letter from the given choices directly."
    stem, options, suffix = split_question("Which one?\nA. first line\ncontinued\nB. second\nC. third")
    assert (stem, options, suffix) == ("Which one?", ["first line continued", "second", "third"], "")
    assert split_question("No options here.") == ("No options here.", [], "")


def test_temporalbench_rows(tmp_path):
    def tb(idx, question=_TB_Q, gt="B", **extra):
        return {
            "idx": idx,
            "video_name": "short_video/Charades/EEVD3.mp4",
            "category": "Action Effector",
            "question": question,
            "GT": gt,
            **extra,
        }

    path = dump(
        tmp_path / "temporalbench_short_qa.json",
        [
            tb("short_video/Charades/EEVD3.mp4_0", dataset="Charades"),
            tb("short_video/Charades/EEVD3.mp4_1", gt="A", source_dataset="Charades"),
            tb("x_2", gt="C", dataset="Charades"),
            tb("x_3", question="Which caption best describes this video?", dataset="Charades"),
            tb("x_4", question="A. only\nB. options", dataset="Charades"),
        ],
    )
    result = load_benchmark("temporalbench", tmp_path, skip_invalid=True)
    assert result.source_files == [path]  # the folder form finds temporalbench_*_qa.json
    first, second = result.samples
    assert (first.sample_id, first.video, first.answer, first.question) == (
        "short_video/Charades/EEVD3.mp4_0",
        "short_video/Charades/EEVD3.mp4",
        1,
        "Which caption best describes this video?",
    )
    assert first.answer_text == "A person closes the fridge with his right hand."
    assert first.metadata["video_name"] == "short_video/Charades/EEVD3.mp4"
    assert first.metadata["prompt_suffix"].startswith("Answer with")
    assert (second.answer, second.metadata["dataset"], second.metadata["category"]) == (
        0,
        "Charades",
        "Action Effector",
    )
    assert [(r.sample_id, r.kind) for r in result.invalid] == [
        ("x_2", "unresolvable_answer"),
        ("x_3", "no_options"),
        ("x_4", "missing_field"),
    ]
    assert result.video_root == tmp_path


# --- ExtremeWhenBench --------------------------------------------------------------------


def test_extremewhenbench_intervals(tmp_path):
    def ewb(qid, interval, video_duration=3600.0, **extra):
        r = {
            "qid": qid,
            "video_id": "vid",
            "source_corpus": "ego4d",
            "question": "When is the door opened?",
            "correct_interval": interval,
            "duration_s": 10.0,
            "video_duration_s": video_duration,
            "category": "action",
        }
        r.update(extra)
        return json.dumps(r)

    path = tmp_path / "ewb.jsonl"
    path.write_text(
        "\n".join(
            [
                ewb("q1", [120.0, 130.5]),
                ewb("q2", [50, 40]),
                ewb("q3", [3590, 3600.4]),
                ewb("q4", [10, 20], video_duration=None),
                ewb("q5", [10]),
                ewb("q6", [-1, 5]),
            ]
        )
        + "\n"
    )
    with pytest.raises(
        InvalidRowError, match=r"ewb\.jsonl:2: \[q2\] interval start 50.0 is not before end 40.0"
    ):
        load_benchmark("extremewhenbench", path)
    result = load_benchmark("extremewhenbench", path, skip_invalid=True)
    assert rows_of(result, "sample_id", "video", "answer_interval", "options", "answer") == [
        ("q1", "vid.mp4", (120.0, 130.5), (), None),
        ("q4", "vid.mp4", (10.0, 20.0), (), None),
    ]
    assert (
        result.samples[0].metadata["category"] == "action"
        and result.samples[0].metadata["duration_s"] == 10.0
    )
    assert [(r.sample_id, r.kind) for r in result.invalid] == [
        ("q2", "bad_interval"),
        ("q3", "bad_interval"),
        ("q5", "bad_interval"),
        ("q6", "bad_interval"),
    ]
    tolerant = load_benchmark(
        "extremewhenbench", path, skip_invalid=True, duration_tolerance="0.5", video_ext="mkv"
    )
    assert [s.sample_id for s in tolerant.samples] == ["q1", "q3", "q4"]
    assert tolerant.samples[0].video == "vid.mkv"
