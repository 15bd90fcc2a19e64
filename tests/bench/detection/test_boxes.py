"""Box arithmetic against hand-worked numbers: IoU ("+0" extent: [0, 0, 10, 10] is 10 x 10 = 100 pixels), the
(dx, dy, dw, dh) coding of Ren et al. 2015 Eq. 2, clipping, small-box removal and greedy NMS with ties."""

import math

import numpy as np
import pytest

from bench.detection import boxes
from bench.detection.config import DEFAULTS
from bench.errors import UsageError

SQUARE = [0, 0, 10, 10]  # 100 pixels


@pytest.mark.parametrize("other, expected", [
    (SQUARE, 1.0),                 # identical
    ([20, 20, 30, 30], 0.0),       # disjoint
    ([10, 0, 20, 10], 0.0),        # sharing an edge: zero-area intersection
    ([2, 2, 6, 6], 16 / 100),      # nested: 4 x 4 inside 10 x 10
    ([5, 0, 15, 10], 50 / 150),    # half overlapping: 5 x 10 = 50 of 100 + 100 - 50
    ([5, 5, 15, 15], 25 / 175),    # corner overlap: 5 x 5 = 25 of 100 + 100 - 25
])
def test_iou_of_hand_worked_pairs(other, expected):
    assert boxes.iou([SQUARE], [other])[0, 0] == pytest.approx(expected)
    assert boxes.iou([other], [SQUARE])[0, 0] == pytest.approx(expected)


def test_iou_is_a_pairwise_matrix():
    a = [SQUARE, [0, 0, 4, 4]]
    b = [[2, 2, 6, 6], SQUARE, [100, 100, 101, 101]]
    # [0,0,4,4] vs [2,2,6,6]: 2 x 2 = 4 of 16 + 16 - 4 = 28; vs SQUARE: nested 16 / 100.
    expected = [[0.16, 1.0, 0.0], [4 / 28, 0.16, 0.0]]
    np.testing.assert_allclose(boxes.iou(a, b), expected)
    assert boxes.iou(np.zeros((0, 4)), b).shape == (0, 3)


def test_iou_of_two_empty_boxes_is_zero_not_nan():
    assert boxes.iou([[3, 3, 3, 3]], [[3, 3, 3, 3]])[0, 0] == 0.0


def test_iou_keeps_float32():
    assert boxes.iou(np.array([SQUARE], np.float32), np.array([SQUARE], np.float32)).dtype == np.float32


def test_encode_a_hand_computed_delta():
    anchor = [0, 0, 10, 20]   # centre (5, 10), 10 x 20
    target = [2, 4, 22, 24]   # centre (12, 14), 20 x 20
    # dx = (12 - 5) / 10 = 0.7, dy = (14 - 10) / 20 = 0.2, dw = log(20 / 10), dh = log(20 / 20) = 0
    np.testing.assert_allclose(boxes.encode([target], [anchor]), [[0.7, 0.2, math.log(2), 0.0]])
    # the head's weights (10, 10, 5, 5) scale each term
    np.testing.assert_allclose(boxes.encode([target], [anchor], (10, 10, 5, 5)), [[7.0, 2.0, 5 * math.log(2), 0.0]])


def test_decode_inverts_encode():
    rng = np.random.RandomState(3)
    corners = rng.uniform(0, 500, size=(50, 2))
    refs = np.concatenate([corners, corners + rng.uniform(1, 300, size=(50, 2))], axis=1)
    corners = rng.uniform(0, 500, size=(50, 2))
    targets = np.concatenate([corners, corners + rng.uniform(1, 300, size=(50, 2))], axis=1)
    for weights in ((1, 1, 1, 1), (10, 10, 5, 5)):
        deltas = boxes.encode(targets, refs, weights)
        np.testing.assert_allclose(boxes.decode(deltas, refs, weights), targets, rtol=1e-9, atol=1e-9)


def test_decode_by_hand_and_its_dtype():
    anchor = np.array([[0, 0, 10, 20]], np.float32)
    out = boxes.decode(np.array([[0.7, 0.2, math.log(2), 0.0]], np.float32), anchor)
    np.testing.assert_allclose(out, [[2, 4, 22, 24]], rtol=1e-6)
    assert out.dtype == np.float32


def test_decode_clamps_dw_and_dh_at_log_1000_over_16():
    assert DEFAULTS["box_delta_clip"] == pytest.approx(math.log(62.5))
    # dw = 10 is clamped to log(62.5): width 16 * 62.5 = 1000 around centre x 8 -> [-492, 508]; dh = 0 keeps [0, 16]
    out = boxes.decode([[0, 0, 10, 0]], [[0, 0, 16, 16]])
    np.testing.assert_allclose(out, [[-492, 0, 508, 16]])
    # the clamp applies after the weight: dw = 10 / 5 = 2 is below it
    out = boxes.decode([[0, 0, 10, 0]], [[0, 0, 16, 16]], (10, 10, 5, 5))
    np.testing.assert_allclose(out[0, [0, 2]], [8 - 8 * math.exp(2), 8 + 8 * math.exp(2)])


def test_clip_to_the_image():
    out = boxes.clip([[-5, -3, 120, 90], [10, 20, 30, 40]], height=80, width=100)
    np.testing.assert_array_equal(out, [[0, 0, 100, 80], [10, 20, 30, 40]])


def test_remove_small_keeps_boxes_at_least_min_size_each_way():
    found = boxes.remove_small([[0, 0, 10, 10], [0, 0, 3, 10], [0, 0, 10, 2.9], [0, 0, 4, 4]], 4)
    np.testing.assert_array_equal(found, [0, 3])


NMS_BOXES = [
    [0, 0, 10, 10],     # 0: 0.5, IoU with box 1 = 9 x 10 / (200 - 90) = 0.82: suppressed by 1
    [1, 0, 11, 10],     # 1: 0.9, the best
    [20, 20, 30, 30],   # 2: 0.7
    [20, 20, 30, 30],   # 3: 0.7, identical to 2 with an equal score: the lower index (2) wins
    [50, 50, 60, 60],   # 4: 0.7, equal score, overlaps nothing: kept after 2
    [0, 5, 10, 15],     # 5: 0.3, IoU with 1 = 9 x 5 / (200 - 45) = 0.29: kept
]
NMS_SCORES = [0.5, 0.9, 0.7, 0.7, 0.7, 0.3]


def test_nms_on_a_hand_made_set_with_equal_scores():
    np.testing.assert_array_equal(boxes.nms(NMS_BOXES, NMS_SCORES, 0.5), [1, 2, 4, 5])
    # a threshold above 0.82 keeps box 0 too; the identical box 3 (IoU 1) always goes
    np.testing.assert_array_equal(boxes.nms(NMS_BOXES, NMS_SCORES, 0.9), [1, 2, 4, 0, 5])
    np.testing.assert_array_equal(boxes.nms(NMS_BOXES, NMS_SCORES, 0.5, limit=2), [1, 2])


def test_nms_suppresses_only_above_the_threshold():
    pair = [[0, 0, 10, 10], [0, 0, 10, 5]]  # IoU 50 / 100 = 0.5 exactly
    np.testing.assert_array_equal(boxes.nms(pair, [0.9, 0.8], 0.5), [0, 1])
    np.testing.assert_array_equal(boxes.nms(pair, [0.9, 0.8], 0.49), [0])


def test_nms_of_nothing_is_nothing():
    assert boxes.nms(np.zeros((0, 4)), np.zeros(0), 0.7).shape == (0,)


@pytest.mark.parametrize("call, message", [
    (lambda: boxes.iou([[0, 0, 1]], [SQUARE]), "not \\(N, 4\\)"),
    (lambda: boxes.iou([[5, 0, 1, 1]], [SQUARE]), "x2 < x1"),
    (lambda: boxes.iou([[0, 0, float("nan"), 1]], [SQUARE]), "NaN"),
    (lambda: boxes.encode([SQUARE], [[0, 0, 0, 10]]), "zero width"),
    (lambda: boxes.encode([SQUARE], [SQUARE, SQUARE]), "2 reference boxes"),
    (lambda: boxes.encode([SQUARE], [SQUARE], (1, 1, 0, 1)), "four positive"),
    (lambda: boxes.decode([[0, 0, 0]], [SQUARE]), "shape"),
    (lambda: boxes.nms([SQUARE], [0.1, 0.2], 0.5), "scores"),
    (lambda: boxes.clip([SQUARE], 0, 10), "not positive"),
])
def test_bad_input_is_one_line_usage_error(call, message):
    with pytest.raises(UsageError, match=message) as caught:
        call()
    assert "\n" not in str(caught.value)
