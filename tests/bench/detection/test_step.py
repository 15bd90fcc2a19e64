"""The host's work between a detector's stages (bench/detection/step.py) on a hand-made image, with the smoke
profile of frcnn-voc2012: 128 x 160 input (feature map 8 x 10 at stride 16), anchors of 32, 64 and 128 pixels
(9 per cell, ratio-major: a = ratio_index * 3 + scale_index), 32 RPN anchors and 8 RoIs per image, 14 x 14 RoIs.

The image: a 64 x 80 JPEG read at scale 2. Object 0, a cat (VOC label 7, class 8), annotated [13, 13, 28, 32]:
(12, 12, 28, 32) * 2 = [24, 24, 56, 64] in the input. Object 1, a difficult person (label 14, class 15),
annotated [45, 13, 76, 44]: [88, 24, 152, 88], exactly the 64-pixel square anchor of cell (3, 7).
"""

import math

import numpy as np
import pytest

from bench.detection import detector as det
from bench.detection import roialign, step  # step, not its names: step.test_rois would be collected as a test
from bench.detection.images import Example
from campaign import specs

CAT, PERSON = 7, 14   # VOC label indices (cat, person)
GT0 = [24, 24, 56, 64]
GT1 = [88, 24, 152, 88]
# Anchor (y, x, a) is row (y * 10 + x) * 9 + a.
ANCHOR_GT0 = (2 * 10 + 2) * 9 + 3  # 201: the 32-pixel square of cell (2, 2), centre (40, 40): [24, 24, 56, 56]
ANCHOR_GT1 = (3 * 10 + 7) * 9 + 4  # 337: the 64-pixel square of cell (3, 7), centre (120, 56): [88, 24, 152, 88]
VOC = ["aeroplane", "bicycle", "bird", "boat", "bottle", "bus", "car", "cat", "chair", "cow", "diningtable", "dog",
       "horse", "motorbike", "person", "pottedplant", "sheep", "sofa", "train", "tvmonitor"]


def spec(**test):
    s = specs.load("frcnn-voc2012", "smoke")
    s["model"]["test"].update(test)
    return s


@pytest.fixture(scope="module")
def plan():
    return det.plan(spec())


def example(difficult=(False, True), image_id="img"):
    return Example(pixels=np.zeros((1, 128, 160, 3), np.float32), height=128, width=160, scale=2.0,
                   boxes=np.array([GT0, GT1], np.float64), classes=np.array([CAT + 1, PERSON + 1]),
                   difficult=np.array(difficult, bool),
                   original_boxes=np.array([[13, 13, 28, 32], [45, 13, 76, 44]], np.float64), image_id=image_id)


def test_feature_size_and_anchors_of_the_padded_image(plan):
    ex = example()
    assert step.feature_size(plan, ex) == (8, 10)
    anchors = step.anchors_for(plan, ex)
    assert anchors.shape == (8 * 10 * 9, 4)
    np.testing.assert_allclose(anchors[ANCHOR_GT0], [24, 24, 56, 56])
    np.testing.assert_allclose(anchors[ANCHOR_GT1], GT1)


def test_training_truth_leaves_out_difficult_objects():
    boxes, classes = step.training_truth(example())
    np.testing.assert_array_equal(boxes, [GT0])
    np.testing.assert_array_equal(classes, [CAT + 1])


def test_rpn_batch_masks(plan):
    ex = example()
    batch = step.rpn_batch(plan, ex, step.anchors_for(plan, ex), np.random.RandomState(0))
    # Only anchor 201 reaches IoU 0.7 with GT0 (32 * 32 / (32 * 40) = 0.8; a neighbour shifted 16 pixels has
    # 0.5 at most), and the difficult GT1 is no truth: one positive, 31 negatives drawn from the many below 0.3.
    assert np.flatnonzero(batch.labels).tolist() == [ANCHOR_GT0]
    assert batch.sampled.sum() == 32 == batch.count
    assert batch.sampled[ANCHOR_GT0] == 1
    assert set(np.flatnonzero(batch.labels)) <= set(np.flatnonzero(batch.sampled))
    np.testing.assert_array_equal(batch.box_mask, np.repeat(batch.labels[:, None], 4, axis=1))
    # anchor 201 (centre 40, 40, 32 x 32) -> GT0 (centre 40, 44, 32 x 40): (0, 4 / 32, 0, log(40 / 32))
    np.testing.assert_allclose(batch.box_targets[ANCHOR_GT0], [0, 0.125, 0, math.log(1.25)], rtol=1e-6, atol=1e-7)
    assert not np.delete(batch.box_targets, ANCHOR_GT0, axis=0).any()
    for array in (batch.labels, batch.sampled, batch.box_targets, batch.box_mask):
        assert array.dtype == np.float32


def test_rpn_batch_trains_on_a_difficult_object_only_when_it_is_not_marked(plan):
    ex = example(difficult=(False, False))
    batch = step.rpn_batch(plan, ex, step.anchors_for(plan, ex), np.random.RandomState(0))
    assert np.flatnonzero(batch.labels).tolist() == [ANCHOR_GT0, ANCHOR_GT1]  # GT1 is anchor 337 exactly
    np.testing.assert_allclose(batch.box_targets[ANCHOR_GT1], 0, atol=1e-7)


def test_rpn_batch_without_truth_samples_negatives_only(plan):
    ex = example(difficult=(True, True))
    batch = step.rpn_batch(plan, ex, step.anchors_for(plan, ex), np.random.RandomState(0))
    assert not batch.labels.any() and not batch.box_mask.any()
    assert batch.count == batch.sampled.sum() == 32


def rpn_outputs(favourite=ANCHOR_GT0):
    """Objectness that ranks one anchor first (the rest by index), zero deltas: the proposals are anchors."""
    objectness = np.zeros(720)
    objectness[favourite] = 5.0
    return objectness, np.zeros((720, 4))


def test_roi_batch_shapes_and_labels(plan):
    ex = example()
    objectness, deltas = rpn_outputs()
    batch = step.roi_batch(plan, ex, step.anchors_for(plan, ex), objectness, deltas, np.random.RandomState(0))
    r = len(batch.rois)
    assert 1 <= r <= 8  # roi.batch 8
    assert batch.rows.shape == (r, 14, 8) and batch.cols.shape == (r, 14, 10)
    assert batch.box_targets.shape == batch.box_mask.shape == (r, 84)
    assert batch.labels.shape == (r,) and batch.labels.dtype == np.int64
    # GT0 is appended to the proposals: at least one cat; the difficult person is never a class
    assert (batch.labels == CAT + 1).sum() >= 1 and set(batch.labels.tolist()) <= {0, CAT + 1}
    for label, mask in zip(batch.labels, batch.box_mask):
        expected = np.zeros(84)
        if label:
            expected[4 * label:4 * label + 4] = 1
        np.testing.assert_array_equal(mask, expected)
    assert not batch.box_targets[batch.box_mask == 0].any()
    # the RoIs lie in the image: pooling a constant map gives the constant
    np.testing.assert_allclose(roialign.pool(np.ones((1, 8, 10)), batch.rows, batch.cols), 1, rtol=1e-5)


def test_roi_batch_pools_at_the_feature_stride(plan):
    ex = example()
    objectness, deltas = rpn_outputs()
    batch = step.roi_batch(plan, ex, step.anchors_for(plan, ex), objectness, deltas, np.random.RandomState(0))
    rows, cols = roialign.matrices(batch.rois, 1 / 16, 14, 2, 8, 10, True)  # the smoke profile's roi table
    np.testing.assert_array_equal(batch.rows, rows)
    np.testing.assert_array_equal(batch.cols, cols)


def test_test_rois_have_no_targets(plan):
    ex = example()
    objectness, deltas = rpn_outputs()
    batch = step.test_rois(plan, ex, step.anchors_for(plan, ex), objectness, deltas)
    r = len(batch.rois)
    assert 1 <= r <= 16  # rpn.post_nms_test 16
    np.testing.assert_allclose(batch.rois[0], [24, 24, 56, 56])  # the favourite anchor ranks first
    assert batch.labels is None
    assert batch.rows.shape == (r, 14, 8) and batch.cols.shape == (r, 14, 10)
    assert batch.box_targets.shape == (r, 84) and not batch.box_targets.any() and not batch.box_mask.any()


def logits_for(rows):
    """(R, 21) logits: each row a dict {class: logit}, the others 0."""
    out = np.zeros((len(rows), 21))
    for i, row in enumerate(rows):
        for cls, value in row.items():
            out[i, cls] = value
    return out


def test_a_confident_roi_comes_back_in_the_annotations_coordinates(plan):
    rois = np.array([GT0], np.float64)
    found = step.detections(plan, example(), rois, logits_for([{CAT + 1: 10.0}]), np.zeros((1, 84)))
    # [24, 24, 56, 64] / 2 + (1, 1, 0, 0) = [13, 13, 28, 32], the annotation itself
    np.testing.assert_allclose(found["boxes"], [[13, 13, 28, 32]])
    np.testing.assert_array_equal(found["labels"], [CAT])
    # softmax: e^10 / (e^10 + 20 e^0); every other class has 1 / (e^10 + 20) < 0.05 and is dropped
    np.testing.assert_allclose(found["scores"], [1 / (1 + 20 * math.exp(-10))])


def test_the_true_class_deltas_move_the_box_and_clipping_holds(plan):
    rois = np.array([GT0, [140, 100, 170, 140]], np.float64)
    deltas = np.zeros((2, 84))
    deltas[0, 4 * (CAT + 1):4 * (CAT + 2)] = [2.5, 0, 0, 0]  # 2.5 / 10 of the width 32: 8 pixels right
    deltas[0, 0:4] = [9, 9, 9, 9]  # the background's and another class's columns are not read
    deltas[0, 4:8] = [-9, -9, 1, 1]
    found = step.detections(plan, example(), rois, logits_for([{CAT + 1: 10.0}, {CAT + 1: 9.0}]), deltas)
    # [32, 24, 64, 64] -> [17, 13, 32, 32]; the second, clipped to the 160 x 128 image: [140, 100, 160, 128] ->
    # [71, 51, 80, 64], the original image's last pixel (80 x 64)
    np.testing.assert_allclose(found["boxes"], [[17, 13, 32, 32], [71, 51, 80, 64]])


def test_score_threshold(plan):
    # probabilities 0.9 (background), 0.06 (class 1, aeroplane) and 0.04 (class 2, bicycle); threshold 0.05
    logits = np.full((1, 21), -60.0)
    logits[0, :3] = np.log([0.9, 0.06, 0.04])
    found = step.detections(plan, example(), np.array([GT0], np.float64), logits, np.zeros((1, 84)))
    np.testing.assert_array_equal(found["labels"], [0])
    np.testing.assert_allclose(found["scores"], [0.06], rtol=1e-9)


def test_nothing_above_the_threshold_is_empty(plan):
    # 21 equal logits: 1 / 21 = 0.0476 < 0.05 for every class
    found = step.detections(plan, example(), np.array([GT0], np.float64), np.zeros((1, 21)), np.zeros((1, 84)))
    assert found["boxes"].shape == (0, 4) and found["labels"].shape == (0,) and found["scores"].shape == (0,)


def test_nms_is_per_class(plan):
    # A = GT0 and B = [28, 24, 60, 64] overlap by 28 * 40 / (36 * 40) = 0.78 > 0.3. A says cat (~1.0); B says cat
    # and dog equally (e^5 / (2 e^5 + 19) = 0.4966 each). Cat: B is suppressed by A; dog: B alone, kept.
    rois = np.array([GT0, [28, 24, 60, 64]], np.float64)
    found = step.detections(plan, example(), rois, logits_for([{CAT + 1: 10.0}, {CAT + 1: 5.0, 12: 5.0}]),
                            np.zeros((2, 84)))
    np.testing.assert_array_equal(found["labels"], [CAT, 11])
    np.testing.assert_allclose(found["boxes"], [[13, 13, 28, 32], [15, 13, 30, 32]])
    np.testing.assert_allclose(found["scores"][1], math.exp(5) / (2 * math.exp(5) + 19))


def test_detections_per_image_keeps_the_highest_scores():
    plan = det.plan(spec(detections_per_image=2))
    rois = np.array([[0, 0, 20, 20], [40, 0, 60, 20], [80, 0, 100, 20]], np.float64)  # no overlaps
    logits = logits_for([{1: 4.0}, {1: 6.0}, {3: 5.0}])  # highest: RoI 1 (aeroplane), then RoI 2 (bird)
    found = step.detections(plan, example(), rois, logits, np.zeros((3, 84)))
    np.testing.assert_array_equal(found["labels"], [0, 2])
    np.testing.assert_allclose(found["boxes"], [[21, 1, 30, 10], [41, 1, 50, 10]])


def test_perfect_detections_through_evaluation_give_map_one(plan):
    # the network's RoI at the cat with a confident cat logit: detections() then Evaluation, end to end
    evaluation = step.Evaluation(plan, VOC)
    ex = example()
    evaluation.add(ex, step.detections(plan, ex, np.array([GT0], np.float64), logits_for([{CAT + 1: 10.0}]),
                                       np.zeros((1, 84))))
    result = evaluation.result()
    assert result["map"] == 1.0 and result["ap"]["cat"] == 1.0
    # the person is difficult: no non-difficult truth, no AP; undetected, it costs nothing
    assert result["ap"]["person"] is None and "person" in result["no_ground_truth"]
    assert result["method"] == "voc2010"


def test_evaluation_of_a_difficult_detection_and_a_false_positive(plan):
    evaluation = step.Evaluation(plan, VOC)
    ex = example()
    # ranked: a cat far from the cat (0.9, false positive), the cat (0.8, true positive), the difficult person
    # (0.7, neither): cat precision 1/2 at recall 1 -> AP 0.5 (all-point); mAP over the cat alone
    evaluation.add(ex, {"boxes": np.array([[40, 40, 60, 60], [13, 13, 28, 32], [45, 13, 76, 44]], np.float64),
                        "labels": np.array([CAT, CAT, PERSON]), "scores": np.array([0.9, 0.8, 0.7])})
    result = evaluation.result()
    assert result["ap"]["cat"] == pytest.approx(0.5) and result["map"] == pytest.approx(0.5)
    assert result["ap"]["person"] is None


def test_evaluation_over_two_images():
    plan = det.plan(spec(ap="voc2007"))
    evaluation = step.Evaluation(plan, VOC)
    # image 2 has its person not difficult and missed: person AP 0; image 1's cat found: cat AP 1; mAP 0.5
    first, second = example(image_id="a"), example(difficult=(False, False), image_id="b")
    evaluation.add(first, {"boxes": np.array([[13, 13, 28, 32]], np.float64), "labels": np.array([CAT]),
                           "scores": np.array([0.9])})
    evaluation.add(second, {"boxes": np.array([[13, 13, 28, 32]], np.float64), "labels": np.array([CAT]),
                            "scores": np.array([0.8])})
    result = evaluation.result()
    assert result["method"] == "voc2007"
    assert result["ap"]["cat"] == 1.0 and result["ap"]["person"] == 0.0 and result["map"] == 0.5
