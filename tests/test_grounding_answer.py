import pytest

from tempcore.grounding.answer import score_grounding_response


def test_parsed_interval_best_window_iou():
    # pred [10, 20]; windows [0, 5] (IoU 0) and [15, 25] (overlap 5 / hull 15)
    got = score_grounding_response("start: 10, end: 20", [(0.0, 5.0), (15.0, 25.0)])
    assert (got.pred_start, got.pred_end) == (10.0, 20.0)
    assert got.iou == pytest.approx(5 / 15)
    assert not got.parse_failed


def test_crop_offset_maps_back_to_video_time():
    got = score_grounding_response("from 10s to 20s", [(110.0, 120.0)], offset=100.0)
    assert (got.pred_start, got.pred_end) == (110.0, 120.0)
    assert got.iou == pytest.approx(1.0)


def test_parse_failure_kept_as_such():
    got = score_grounding_response("I cannot tell.", [(1.0, 2.0)])
    assert got.parse_failed and got.iou is None and got.error
