"""VOC detection evaluation against hand-worked examples of the devkit's definition (VOCevaldet.m, VOCap.m).

Every expected number below is worked by hand in the comment beside it; none is the code's output fed back.
Boxes are [xmin, ymin, xmax, ymax] in inclusive pixels: [0, 0, 9, 9] covers 10 x 10 = 100 pixels.
"""

import numpy as np
import pytest

from bench.detection import voc_eval
from bench.errors import UsageError

A = [0, 0, 9, 9]          # 100 pixels
B = [20, 20, 29, 29]      # 100 pixels, far from A
FAR = [50, 50, 59, 59]    # overlaps nothing above


def gt(boxes, labels=None, difficult=None):
    entry = {"boxes": np.array(boxes, dtype=np.float64).reshape(-1, 4),
             "labels": np.array(labels if labels is not None else [0] * len(boxes), dtype=np.int64)}
    if difficult is not None:
        entry["difficult"] = np.array(difficult, dtype=bool)
    return entry


def dets(rows):
    """rows: [(box, score)] or [(box, score, label)]."""
    return {"boxes": np.array([r[0] for r in rows], dtype=np.float64).reshape(-1, 4),
            "scores": np.array([r[1] for r in rows], dtype=np.float64),
            "labels": np.array([r[2] if len(r) > 2 else 0 for r in rows], dtype=np.int64)}


def ap_of(detections, ground_truth, method="voc2010", classes=("cat",)):
    return voc_eval.evaluate(detections, ground_truth, list(classes), method=method)["ap"]["cat"]


def test_a_perfect_detector_has_ap_one_by_both_methods():
    truth = {"img1": gt([A, B]), "img2": gt([A])}
    found = {"img1": dets([(A, 0.9), (B, 0.8)]), "img2": dets([(A, 0.7)])}
    for method in ("voc2010", "voc2007"):
        result = voc_eval.evaluate(found, truth, ["cat"], method=method)
        assert result["ap"]["cat"] == pytest.approx(1.0) and result["map"] == pytest.approx(1.0)


def test_one_false_positive_ranked_first():
    # Two objects; ranked: FP (0.9), TP (0.8), TP (0.7). tp = 0,1,2; fp = 1,1,1; recall 0, .5, 1;
    # precision 0, 1/2, 2/3. Envelope: 2/3 everywhere; recall steps .5 and .5 -> AP = 2/3.
    # 11-point: every level's best precision at recall >= t is 2/3 -> 2/3 too.
    truth = {"img1": gt([A, B])}
    found = {"img1": dets([(FAR, 0.9), (A, 0.8), (B, 0.7)])}
    assert ap_of(found, truth) == pytest.approx(2.0 / 3.0)
    assert ap_of(found, truth, "voc2007") == pytest.approx(2.0 / 3.0)
    curve = voc_eval.evaluate(found, truth, ["cat"])["classes"]["cat"]
    np.testing.assert_allclose(curve["recall"], [0.0, 0.5, 1.0])
    np.testing.assert_allclose(curve["precision"], [0.0, 0.5, 2.0 / 3.0])


def test_a_second_detection_of_a_matched_object_is_a_false_positive():
    # Objects A, B; ranked: A (0.9, TP), A again (0.8, duplicate: FP), B (0.7, TP).
    # recall .5, .5, 1; precision 1, 1/2, 2/3. Envelope at recall .5: 1, at 1: 2/3 -> AP = .5 + .5 * 2/3 = 5/6.
    # (Ignoring the duplicate would give 1; counting it a TP would push recall past 1.)
    truth = {"img1": gt([A, B])}
    found = {"img1": dets([(A, 0.9), (A, 0.8), (B, 0.7)])}
    result = voc_eval.evaluate(found, truth, ["cat"])["classes"]["cat"]
    assert result["ap"] == pytest.approx(5.0 / 6.0)
    assert (result["true_positives"], result["false_positives"]) == (2, 1)


def test_a_detection_whose_best_object_is_taken_is_a_false_positive_even_if_another_overlaps():
    # VOCevaldet assigns to the object of highest overlap among all of them, claimed or not.
    # A = [0,0,9,9] (100 px), C = [0,2,9,11] (100 px). Detection 2 = [0,0,9,10] (110 px): IoU with A
    # = 100/110 = .909, with C = 90/(110+100-90) = .75 >= .5, but A (its best) is claimed -> FP.
    # recall .5, .5; precision 1, 1/2 -> AP = .5 (matching C instead would give 1).
    truth = {"img1": gt([A, [0, 2, 9, 11]])}
    found = {"img1": dets([(A, 0.9), ([0, 0, 9, 10], 0.8)])}
    assert ap_of(found, truth) == pytest.approx(0.5)


def test_a_detection_of_a_difficult_object_is_neither_true_nor_false_and_difficult_objects_are_not_counted():
    # Objects A, B (non-difficult) and D (difficult). Ranked: D (0.95), D again (0.9), A (0.8); B missed.
    # The two detections of D are ignored; A is TP: recall 1/2, precision 1 -> AP = .5.
    # (D as a FP would give .25; D counted as an object to recall would give 1/3 or 2/3.)
    d = [40, 40, 49, 49]
    truth = {"img1": gt([A, B, d], difficult=[False, False, True])}
    found = {"img1": dets([(d, 0.95), (d, 0.9), (A, 0.8)])}
    result = voc_eval.evaluate(found, truth, ["cat"])["classes"]["cat"]
    assert result["ap"] == pytest.approx(0.5)
    assert (result["positives"], result["ignored"], result["true_positives"], result["false_positives"]) == (2, 2, 1, 0)


def test_a_class_without_non_difficult_ground_truth_has_no_ap_and_is_left_out_of_the_mean():
    # cat: AP 1. dog: detections but no object -> no AP. bird: one difficult object only -> no AP.
    # horse: an object but no detection -> AP 0, which counts. mAP = (1 + 0) / 2 = .5.
    truth = {"img1": gt([A, B, FAR], labels=[0, 2, 3], difficult=[False, True, False])}
    found = {"img1": dets([(A, 0.9, 0), (A, 0.8, 1), (B, 0.7, 2)])}
    result = voc_eval.evaluate(found, truth, ["cat", "dog", "bird", "horse"])
    assert result["ap"] == {"cat": pytest.approx(1.0), "dog": None, "bird": None, "horse": 0.0}
    assert result["no_ground_truth"] == ["dog", "bird"]
    assert result["map"] == pytest.approx(0.5)
    assert "no AP" in voc_eval.summary(result) and "dog, bird" in voc_eval.summary(result)
    assert voc_eval.evaluate({}, {"img1": gt([], [])}, ["cat"])["map"] is None


def test_tied_scores_keep_the_input_order():
    # One object A; a FP and a TP both at 0.5. FP first: recall 0, 1; precision 0, 1/2 -> AP = 1 * 1/2.
    # TP first: recall 1, 1; precision 1, 1/2 -> AP = 1. Across images, the order of the images given.
    truth = {"img1": gt([A]), "img2": gt([])}
    assert ap_of({"img1": dets([(FAR, 0.5), (A, 0.5)])}, truth) == pytest.approx(0.5)
    assert ap_of({"img1": dets([(A, 0.5), (FAR, 0.5)])}, truth) == pytest.approx(1.0)
    assert ap_of({"img2": dets([(A, 0.5)]), "img1": dets([(A, 0.5)])}, truth) == pytest.approx(0.5)
    assert ap_of({"img1": dets([(A, 0.5)]), "img2": dets([(A, 0.5)])}, truth) == pytest.approx(1.0)
    # Many ties (past the size where NumPy's unstable quicksort reorders equal keys): a FP at 0.9 ranked
    # first, then at 0.5 a FP, the TP, 28 FPs: the TP is 3rd -> recall 1 at precision 1/3, AP 1/3.
    found = {"img1": dets([(FAR, 0.5), (A, 0.5)] + [(FAR, 0.5)] * 28 + [(FAR, 0.9)])}
    assert ap_of(found, truth) == pytest.approx(1.0 / 3.0)


def test_eleven_point_and_all_point_differ_on_the_same_curve():
    # recall .5, .5, 1; precision 1, 1/2, 2/3 (the duplicate example's curve).
    # All-point: .5 * 1 + .5 * 2/3 = 5/6. 11-point: levels 0...0.5 (6 of them) reach precision 1,
    # levels 0.6...1 (5) reach 2/3: (6 + 5 * 2/3) / 11 = 28/33.
    recall, precision = [0.5, 0.5, 1.0], [1.0, 0.5, 2.0 / 3.0]
    assert voc_eval.average_precision(recall, precision, "voc2010") == pytest.approx(5.0 / 6.0)
    assert voc_eval.average_precision(recall, precision, "voc2007") == pytest.approx(28.0 / 33.0)
    truth = {"img1": gt([A, B])}
    found = {"img1": dets([(A, 0.9), (A, 0.8), (B, 0.7)])}
    result = voc_eval.evaluate(found, truth, ["cat"], method="voc2007")
    assert result["ap"]["cat"] == pytest.approx(28.0 / 33.0)
    assert result["method_label"] == "VOC2007 11-point interpolated AP" and "11-point" in voc_eval.summary(result)


def test_recall_that_stops_short_of_one():
    # Four objects, two found first with precision 1: recall .25, .5. All-point: .25 + .25 = .5 (precision 0
    # past the last point). 11-point: levels 0 ... 0.5 (6) reach precision 1, the other 5 none: 6/11.
    assert voc_eval.average_precision([0.25, 0.5], [1.0, 1.0]) == pytest.approx(0.5)
    assert voc_eval.average_precision([0.25, 0.5], [1.0, 1.0], "voc2007") == pytest.approx(6.0 / 11.0)
    assert voc_eval.average_precision([], [], "voc2010") == 0.0 == voc_eval.average_precision([], [], "voc2007")


def test_eleven_point_levels_are_exact_tenths():
    # Recall exactly 3/10 reaches the level 0.3 (k / 10), which 0.1 * 3 = 0.30000000000000004 would miss:
    # levels 0, .1, .2, .3 reach precision 1 -> 4/11 (3/11 with arange's levels).
    assert voc_eval.average_precision([0.1, 0.2, 3 / 10], [1.0, 1.0, 1.0], "voc2007") == pytest.approx(4.0 / 11.0)


def test_overlap_counts_inclusive_pixels_and_half_is_enough():
    # [0,0,4,9] covers 5 x 10 = 50 of A's 100 pixels: IoU = 50/100 = .5 exactly -> a TP (>= 0.5).
    # Without the devkit's +1 it would be 4*9 / (9*9) = .44: a FP.
    assert voc_eval.voc_iou(A, [[0, 0, 4, 9]])[0] == 0.5
    assert ap_of({"img1": dets([([0, 0, 4, 9], 0.9)])}, {"img1": gt([A])}) == pytest.approx(1.0)
    # Boxes that share one pixel column intersect (width 1); boxes side by side do not.
    np.testing.assert_allclose(voc_eval.voc_iou(A, [[9, 0, 18, 9], [10, 0, 19, 9]]), [10.0 / 190.0, 0.0])


def test_lists_are_indexed_by_image():
    truth = [gt([A]), gt([B])]
    found = [dets([(A, 0.9)]), dets([(A, 0.8)])]  # the second image's detection misses B
    # recall .5, .5; precision 1, 1/2 -> AP .5
    assert ap_of(found, truth) == pytest.approx(0.5)


@pytest.mark.parametrize("call, words", [
    (lambda: voc_eval.evaluate({}, {}, ["cat"], method="coco"), "unknown VOC AP method 'coco'"),
    (lambda: voc_eval.evaluate({"x": dets([(A, 1.0)])}, {"y": gt([A])}, ["cat"]), "ground truth lacks"),
    (lambda: voc_eval.evaluate({}, {"y": gt([A], labels=[3])}, ["cat"]), "label 3, outside the 1 classes"),
    (lambda: voc_eval.evaluate({}, {"y": {"boxes": [[0, 0, 1]], "labels": [0]}}, ["cat"]), "has shape"),
    (lambda: voc_eval.evaluate({"y": {"boxes": [A], "labels": [0]}}, {"y": gt([A])}, ["cat"]), "no 'scores'"),
    (lambda: voc_eval.evaluate({"y": dets([(A, np.nan)])}, {"y": gt([A])}, ["cat"]), "NaN"),
    (lambda: voc_eval.evaluate({}, {"y": gt([A])}, ["cat"], iou_threshold=0), "not in (0, 1]"),
    (lambda: voc_eval.average_precision([0.5], [1.0, 0.5]), "one precision per recall point"),
])
def test_bad_input_is_one_line(call, words):
    with pytest.raises(UsageError) as err:
        call()
    assert words in str(err.value) and "\n" not in str(err.value)
