"""RPN anchor targets, proposal selection and RoI proposal targets on tiny hand-made images; every expected
IoU, label and delta is worked in the comment beside it ("+0" extent: [0, 0, 10, 10] is 100 pixels)."""

import math

import numpy as np
import pytest

from bench.detection import targets
from bench.errors import UsageError

# A 100 x 100 image with two gt boxes: G0 [0, 0, 20, 20] (400 px) and G1 [50, 50, 80, 80] (900 px).
GT = [[0, 0, 20, 20], [50, 50, 80, 80]]
ANCHORS = [
    [0, 0, 10, 10],      # 0: IoU with G0 100 / 400 = 0.25 < 0.3: negative
    [0, 0, 20, 20],      # 1: IoU with G0 1: positive
    [50, 50, 70, 70],    # 2: IoU with G1 400 / 900 = 0.44: G1's best (tied with 3): positive by the best-anchor rule
    [55, 50, 75, 70],    # 3: IoU with G1 20 x 20 / 900 = 0.44: tied best of G1: positive
    [80, 80, 100, 100],  # 4: touches G1's corner only, IoU 0; x2 = 100 is inside a 100-wide image: negative
    [90, 90, 110, 110],  # 5: crosses the border: ignored
    [30, 0, 40, 10],     # 6: overlaps nothing: negative
    [50, 50, 70, 66],    # 7: IoU with G1 320 / 900 = 0.36, in [0.3, 0.7) and not a best: ignored
]


def rpn(anchors=ANCHORS, gt=GT, seed=0, **kw):
    return targets.rpn_targets(np.array(anchors, np.float64), np.array(gt, np.float64).reshape(-1, 4), 100, 100,
                               np.random.RandomState(seed), **kw)


def test_rpn_labels_best_anchor_rule_ignore_band_and_border():
    labels, deltas = rpn()
    np.testing.assert_array_equal(labels, [0, 1, 1, 1, 0, -1, 0, -1])
    assert labels.dtype == np.int64


def test_rpn_regression_targets_by_hand():
    _, deltas = rpn()
    log15 = math.log(1.5)
    # anchor 1 is G0 itself: zero; anchor 2 (centre 60, 60, 20 x 20) -> G1 (centre 65, 65, 30 x 30):
    # (5 / 20, 5 / 20, log 1.5, log 1.5); anchor 3 (centre 65, 60) -> G1: (0, 0.25, log 1.5, log 1.5)
    np.testing.assert_allclose(deltas[1:4], [[0, 0, 0, 0], [0.25, 0.25, log15, log15], [0, 0.25, log15, log15]],
                               atol=1e-12)
    assert not deltas[[0, 4, 5, 6, 7]].any()  # only positives regress


def test_rpn_without_the_border_rule_labels_the_crossing_anchor():
    labels, _ = rpn(allowed_border=None)
    assert labels[5] == 0  # [90, 90, 110, 110] overlaps no gt


def test_rpn_sampling_cap_and_its_documented_random_stream():
    # batch 4, fraction 0.5: at most 2 of the 3 positives, then 4 - 2 = 2 of the 3 negatives
    labels, deltas = rpn(batch=4, seed=7)
    assert (labels == 1).sum() == 2 and (labels == 0).sum() == 2
    assert set(np.flatnonzero(labels == 1)) < {1, 2, 3} and set(np.flatnonzero(labels == 0)) < {0, 4, 6}
    assert labels[5] == -1 and labels[7] == -1
    assert not deltas[labels != 1].any()
    # the draws are rng.choice(candidates, size=surplus, replace=False) on the positives, then the negatives
    stream = np.random.RandomState(7)
    dropped = [stream.choice([1, 2, 3], size=1, replace=False)[0], stream.choice([0, 4, 6], size=1, replace=False)[0]]
    assert sorted(np.flatnonzero(labels == -1)) == sorted([5, 7] + dropped)
    np.testing.assert_array_equal(rpn(batch=4, seed=7)[0], labels)  # reproducible


def test_rpn_positives_beyond_half_leave_room_for_negatives_only():
    # batch 2, fraction 0.5: one positive and one negative
    labels, _ = rpn(batch=2)
    assert (labels == 1).sum() == 1 and (labels == 0).sum() == 1


def test_rpn_without_gt_makes_every_kept_anchor_negative():
    labels, deltas = rpn(gt=[])
    np.testing.assert_array_equal(labels, [0, 0, 0, 0, 0, -1, 0, 0])
    assert not deltas.any()


def test_rpn_gt_that_no_anchor_touches_makes_no_positive():
    labels, _ = rpn(gt=[[200, 200, 210, 210]], allowed_border=None)
    np.testing.assert_array_equal(labels, [0] * 8)


# proposal_targets: gt G0 [0, 0, 10, 10] class 3, G1 [20, 20, 40, 40] class 7, VOC's 21 classes.
ROI_GT = [[0, 0, 10, 10], [20, 20, 40, 40]]
ROI_LABELS = [3, 7]
PROPOSALS = [
    [0, 0, 10, 10],     # 0: IoU with G0 1: fg 3
    [0, 0, 10, 20],     # 1: IoU with G0 100 / 200 = 0.5 exactly: fg 3
    [20, 20, 40, 30],   # 2: IoU with G1 200 / 400 = 0.5: fg 7
    [20, 20, 30, 30],   # 3: IoU with G1 100 / 400 = 0.25: bg
    [50, 50, 60, 60],   # 4: IoU 0: bg (the band starts at 0.0)
    [2, 0, 12, 10],     # 5: IoU with G0 80 / 120 = 0.67: fg 3
]                       # 6, 7: G0 and G1 appended: fg 3, fg 7


def roi(proposals=PROPOSALS, gt=ROI_GT, labels=ROI_LABELS, seed=0, **kw):
    return targets.proposal_targets(np.array(proposals, np.float64).reshape(-1, 4),
                                    np.array(gt, np.float64).reshape(-1, 4), np.array(labels, np.int64), 21,
                                    np.random.RandomState(seed), **kw)


def test_proposal_targets_fg_and_bg_without_sampling():
    out = roi()
    np.testing.assert_array_equal(out.labels, [3, 3, 7, 3, 3, 7, 0, 0])
    np.testing.assert_array_equal(out.rois, np.array(PROPOSALS + ROI_GT)[[0, 1, 2, 5, 6, 7, 3, 4]])
    assert out.targets.shape == out.weights.shape == (8, 84)


def test_proposal_targets_regression_by_hand():
    out = roi()
    # proposal 1 (centre 5, 10, 10 x 20) -> G0 (centre 5, 5, 10 x 10), weights (10, 10, 5, 5):
    # (0, 10 * -5 / 20, 0, 5 * log(10 / 20)) = (0, -2.5, 0, -5 log 2), in class 3's columns 12..15
    np.testing.assert_allclose(out.targets[1, 12:16], [0, -2.5, 0, -5 * math.log(2)])
    # proposal 2 (centre 30, 25, 20 x 10) -> G1 (centre 30, 30, 20 x 20): (0, 10 * 5 / 10, 0, 5 log 2), columns 28..31
    np.testing.assert_allclose(out.targets[2, 28:32], [0, 5, 0, 5 * math.log(2)])
    # proposal 5 (centre 7, 5) -> G0 (centre 5, 5): (10 * -2 / 10, 0, 0, 0)
    np.testing.assert_allclose(out.targets[3, 12:16], [-2, 0, 0, 0], atol=1e-12)
    # weights: 1 in the 4 columns of a fg RoI's class, nothing elsewhere, nothing for bg
    np.testing.assert_array_equal(out.weights.sum(axis=1), [4, 4, 4, 4, 4, 4, 0, 0])
    assert out.weights[1, 12:16].all() and out.weights[2, 28:32].all()
    assert not out.targets[6:].any() and not out.targets[1, :12].any() and not out.targets[1, 16:].any()


def test_proposal_targets_fg_and_bg_caps():
    # batch 4, fraction 0.25: round(1) = 1 fg of 6, then 4 - 1 = 3 bg of 2 -> 3 RoIs
    out = roi(batch=4)
    assert out.labels.shape == (3,) and out.labels[0] in (3, 7) and list(out.labels[1:]) == [0, 0]
    # batch 8, fraction 0.5: 4 fg of 6, then 4 bg of 2 -> 6 RoIs
    out = roi(batch=8, fg_fraction=0.5, seed=1)
    assert (out.labels > 0).sum() == 4 and (out.labels == 0).sum() == 2
    np.testing.assert_array_equal(roi(batch=8, fg_fraction=0.5, seed=1).rois, out.rois)  # reproducible


def test_proposal_targets_band_and_append_options():
    assert list(roi(bg_iou_lo=0.1).labels) == [3, 3, 7, 3, 3, 7, 0]  # proposal 4 (IoU 0) is no longer bg
    assert list(roi(append_gt=False).labels) == [3, 3, 7, 3, 0, 0]
    assert list(roi(gt=[], labels=[]).labels) == [0] * 6


@pytest.mark.parametrize("kw, message", [
    ({"labels": [0, 7]}, "outside 1 .. 20"),
    ({"labels": [3, 21]}, "outside 1 .. 20"),
    ({"labels": [3]}, "1 gt_labels for 2"),
    ({"bg_iou_hi": 0.6}, "not ordered"),
    ({"batch": 0}, "positive integer"),
])
def test_proposal_targets_bad_input(kw, message):
    with pytest.raises(UsageError, match=message):
        roi(**kw)


def test_a_sampler_needs_a_random_state():
    with pytest.raises(UsageError, match="RandomState"):
        targets.rpn_targets(ANCHORS, GT, 100, 100, rng=42)


# proposals: a 100 x 100 image, min size 16
P_ANCHORS = [
    [0, 0, 20, 20],      # 0: 0.9, zero deltas: itself
    [2, 0, 22, 20],      # 1: 0.8, IoU with 0 = 360 / 440 = 0.82 > 0.7: suppressed
    [50, 50, 70, 70],    # 2: 0.7, dx 0.5: moved 10 right -> [60, 50, 80, 70]
    [90, 90, 110, 110],  # 3: 0.95, clipped to [90, 90, 100, 100]: 10 x 10
    [30, 30, 34, 34],    # 4: 0.99, 4 x 4
    [0, 60, 20, 80],     # 5: 0.6, dw log 2: width 40 about x 10 -> [-10, 60, 30, 80], clipped [0, 60, 30, 80]
]
P_SCORES = [0.9, 0.8, 0.7, 0.95, 0.99, 0.6]
P_DELTAS = [[0, 0, 0, 0], [0, 0, 0, 0], [0.5, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, math.log(2), 0]]


def props(pre=0, post=0, min_size=16):
    return targets.proposals(P_ANCHORS, P_SCORES, P_DELTAS, 100, 100, pre, post, nms_iou=0.7, min_size=min_size)


def test_proposals_decode_clip_drop_small_and_nms():
    rois, scores = props()
    np.testing.assert_allclose(rois, [[0, 0, 20, 20], [60, 50, 80, 70], [0, 60, 30, 80]])
    np.testing.assert_allclose(scores, [0.9, 0.7, 0.6])


def test_proposals_top_n_before_and_after_nms():
    np.testing.assert_allclose(props(post=2)[1], [0.9, 0.7])
    # pre-NMS top 2 are anchors 0 and 1 (after the small ones go); NMS leaves 0
    np.testing.assert_allclose(props(pre=2)[1], [0.9])
    # min size 8 keeps the clipped 10 x 10 box of anchor 3, now the best
    rois, scores = props(min_size=8)
    np.testing.assert_allclose(rois[0], [90, 90, 100, 100])
    np.testing.assert_allclose(scores, [0.95, 0.9, 0.7, 0.6])
