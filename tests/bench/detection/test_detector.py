"""The detector's plan (bench/detection/detector.py) of frcnn-voc2012 and its refusals, and its NumPy losses
against numbers worked by hand."""

import math

import numpy as np
import pytest

from bench.detection import detector as det
from bench.detection.step import RoiBatch, RpnBatch
from bench.modelplan import SpecError
from campaign import specs


def smoke():
    return specs.load("frcnn-voc2012", "smoke")


@pytest.fixture(scope="module")
def plan():
    return det.plan(smoke())


def test_smoke_plan(plan):
    assert (plan.num_classes, plan.num_anchors) == (21, 9)  # 3 scales x 3 ratios
    assert plan.trunk_channels == 1024 and plan.features == 2048  # res4's and res5's outputs
    # 128 x 160 (both multiples of 16 already) / 16 = 8 x 10 cells of C4
    assert plan.trunk[-1].output.dims == (8, 10, 1024)
    assert plan.head[-1].output.dims == (2048,)
    assert plan.settings["roi"]["output"] == 14 and plan.settings["rpn"]["batch"] == 32
    assert set(plan.settings) == set(det.TABLES)


def test_paper_plan_pads_the_nominal_image():
    paper = det.plan(specs.load("frcnn-voc2012", "paper"))
    # 600 x 1000 padded to 608 x 1008: 38 x 63 cells
    assert paper.trunk[-1].output.dims == (38, 63, 1024)
    assert paper.settings["rpn"]["post_nms_train"] == 2000


def test_is_detector():
    assert det.is_detector(smoke())
    assert not det.is_detector({"model": {"architecture": "resnet"}}) and not det.is_detector({})


def refused(spec, *words):
    with pytest.raises(SpecError) as info:
        det.plan(spec)
    for word in words:
        assert word in str(info.value)


def test_refuses_another_loss():
    s = smoke()
    s["training"]["loss"] = "cross_entropy"
    refused(s, '"faster_rcnn"', "'cross_entropy'")


def test_refuses_an_extra_model_key():
    s = smoke()
    s["model"]["dropout"] = 0.5
    refused(s, "'dropout'")


@pytest.mark.parametrize("table, key", [("rpn", "batch"), ("roi", "sampling_ratio"), ("test", "ap"),
                                        ("image", "size_divisor"), ("boxes", "head_weights")])
def test_refuses_a_table_missing_a_key(table, key):
    s = smoke()
    del s["model"][table][key]
    refused(s, f"model.{table} must be a table of exactly", key)


@pytest.mark.parametrize("key", ["num_classes", "trunk", "head"])
def test_refuses_a_missing_model_key(key):
    s = smoke()
    del s["model"][key]
    refused(s, repr(key))


def test_refuses_fewer_than_two_classes():
    s = smoke()
    s["model"]["num_classes"] = 1
    refused(s, "num_classes")


def test_refuses_a_table_with_an_extra_key_or_missing_whole():
    s = smoke()
    s["model"]["anchors"]["base"] = 16
    refused(s, "model.anchors")
    s = smoke()
    del s["model"]["test"]
    refused(s, "model.test")


@pytest.mark.parametrize("divisor", [8, 24])
def test_refuses_a_size_divisor_that_is_not_a_multiple_of_the_stride(divisor):
    s = smoke()
    s["model"]["image"]["size_divisor"] = divisor
    refused(s, f"size_divisor {divisor}", "stride 16")


def test_a_size_divisor_multiple_of_the_stride_plans():
    s = smoke()
    s["model"]["image"]["size_divisor"] = 32
    s["model"]["image"]["short_side"] = 100  # padded to 128 (a multiple of 32), then / 16: 8 rows of cells
    assert det.plan(s).trunk[-1].output.dims == (8, 10, 1024)


def test_refuses_a_trunk_that_does_not_reduce_by_the_stride():
    s = smoke()
    s["model"]["anchors"]["stride"] = 32
    s["model"]["image"]["size_divisor"] = 32
    refused(s, "stride 32")  # the trunk reduces by 16


def test_refuses_a_head_that_does_not_end_with_a_vector():
    s = smoke()
    s["model"]["head"] = s["model"]["head"][:-1]  # res5 without the global average pool
    refused(s, "the head must end with a vector")


def test_padded():
    assert det.padded(600, 16) == 608
    assert det.padded(608, 16) == 608
    assert det.padded(1, 16) == 16
    assert det.padded(1000, 32) == 1024
    assert det.padded(0, 16) == 0


def test_extra_params_by_hand(plan):
    # RPN 3x3 conv 1024 -> 512: 9 * 1024 * 512 + 512 = 4,719,104; objectness 512 -> 9: 4,617; deltas
    # 512 -> 36: 18,468; class logits 2048 -> 21: 43,029; box deltas 2048 -> 84: 172,116; total 4,957,334
    assert det.extra_params(plan) == 4_957_334


def test_record():
    r = det.record(smoke())
    assert r["roi_align"] == {"output": 14, "sampling_ratio": 2, "aligned": True}
    assert r["ap"] == "voc2010" and r["image"]["short_side"] == 128 and "from scratch" in r["weights"]


def test_smooth_l1_below_at_and_above_beta():
    np.testing.assert_allclose(det.smooth_l1(np.array([0.5, -0.5]), 1.0), [0.125, 0.125])     # 0.5 * 0.25 / 1
    np.testing.assert_allclose(det.smooth_l1(np.array([3.0, -3.0]), 1.0), [2.5, 2.5])         # 3 - 0.5
    np.testing.assert_allclose(det.smooth_l1(np.array([1.0]), 1.0), [0.5])                    # both pieces: 0.5
    np.testing.assert_allclose(det.smooth_l1(np.array([0.05, 1.0]), 1 / 9), [0.01125, 1 - 1 / 18])
    # 0.5 * 0.0025 * 9 = 0.01125; 1 - 0.5 / 9


def rpn_batch(labels, sampled, targets=None, mask=None):
    labels, sampled = np.array(labels, np.float32), np.array(sampled, np.float32)
    targets = np.zeros((len(labels), 4), np.float32) if targets is None else np.array(targets, np.float32)
    mask = np.repeat(labels[:, None], 4, axis=1) if mask is None else np.array(mask, np.float32)
    return RpnBatch(labels, sampled, targets, mask, float(max(sampled.sum(), 1)))


def roi_batch(labels, targets, mask):
    return RoiBatch(None, None, None, np.array(labels, np.int64), np.array(targets, np.float64),
                    np.array(mask, np.float64))


def no_rois(rows=1):
    return np.zeros((rows, 21)), np.zeros((rows, 84)), roi_batch([0] * rows, np.zeros((rows, 84)), np.zeros((rows, 84)))


def test_rpn_class_one_anchor_logit_zero_label_one_is_log_two(plan):
    logits, deltas, roi = no_rois()
    out = det.losses(plan, [0.0], np.zeros((1, 4)), rpn_batch([1], [1]), logits, deltas, roi)
    assert out["rpn_class"] == pytest.approx(math.log(2))
    assert out["rpn_box"] == 0


def test_rpn_class_sums_the_sampled_over_their_count(plan):
    logits, deltas, roi = no_rois()
    # anchor 0: logit 0, positive: log 2; anchor 1: logit 2, negative: log(1 + e^2); anchor 2: logit 100,
    # negative but not sampled: left out. Count 2.
    out = det.losses(plan, [0.0, 2.0, 100.0], np.zeros((3, 4)), rpn_batch([1, 0, 0], [1, 1, 0]), logits, deltas, roi)
    assert out["rpn_class"] == pytest.approx((math.log(2) + math.log(1 + math.e ** 2)) / 2)


def test_rpn_class_is_stable_at_large_logits(plan):
    logits, deltas, roi = no_rois()
    # -log sigmoid(-1000) for a positive and -log(1 - sigmoid(1000)) for a negative: 1000 each
    out = det.losses(plan, [-1000.0, 1000.0], np.zeros((2, 4)), rpn_batch([1, 0], [1, 1]), logits, deltas, roi)
    assert out["rpn_class"] == pytest.approx(1000)


def test_rpn_box_smooth_l1_of_the_positives_over_the_sampled_count(plan):
    logits, deltas, roi = no_rois()
    # beta 1/9. Anchor 0 (positive): deltas - targets = (0.05, -1, 0, 0): 0.01125 + (1 - 1/18); anchor 1
    # (negative, sampled): its deltas are not counted; anchor 2 (not sampled). Count 2.
    rpn = rpn_batch([1, 0, 0], [1, 1, 0], targets=[[0.0, 1.0, 0.5, 0], [0, 0, 0, 0], [0, 0, 0, 0]])
    out = det.losses(plan, [0.0, 0.0, 0.0], [[0.05, 0.0, 0.5, 0], [7, 7, 7, 7], [7, 7, 7, 7]], rpn, logits, deltas,
                     roi)
    assert out["rpn_box"] == pytest.approx((0.01125 + 1 - 1 / 18) / 2)


def test_head_class_equal_logits_is_log_num_classes(plan):
    _, deltas, roi = no_rois(rows=3)
    out = det.losses(plan, [0.0], np.zeros((1, 4)), rpn_batch([0], [1]), np.zeros((3, 21)), deltas, roi)
    assert out["head_class"] == pytest.approx(math.log(21))


def test_head_class_reads_the_true_label(plan):
    # row 0: label 5, logit log 20 there and 0 elsewhere: -log(20 / (20 + 20)) = log 2; row 1: label 0, equal
    # logits: log 21. Mean (log 2 + log 21) / 2.
    logits = np.zeros((2, 21))
    logits[0, 5] = math.log(20)
    roi = roi_batch([5, 0], np.zeros((2, 84)), np.zeros((2, 84)))
    out = det.losses(plan, [0.0], np.zeros((1, 4)), rpn_batch([0], [1]), logits, np.zeros((2, 84)), roi)
    assert out["head_class"] == pytest.approx((math.log(2) + math.log(21)) / 2)


def test_head_box_true_class_columns_over_the_rois(plan):
    # beta 1. Row 0 is class 2 (columns 8..11): deltas - targets = (0.5, -3, 0, 0): 0.125 + 2.5; row 1 background:
    # nothing. Everything outside the mask (columns 0..7 of row 0 and all of row 1) is off by 100. Divided by 2.
    targets, mask = np.zeros((2, 84)), np.zeros((2, 84))
    targets[0, 8:12] = [1.0, 3.0, 0.25, 0.0]
    mask[0, 8:12] = 1
    deltas = np.full((2, 84), 100.0)
    deltas[0, 8:12] = [1.5, 0.0, 0.25, 0.0]
    roi = roi_batch([2, 0], targets, mask)
    out = det.losses(plan, [0.0], np.zeros((1, 4)), rpn_batch([0], [1]), np.zeros((2, 21)), deltas, roi)
    assert out["head_box"] == pytest.approx((0.125 + 2.5) / 2)
    assert set(out) == set(det.LOSS_NAMES)
