"""PASCAL VOC detection evaluation: per-class average precision (AP) at IoU 0.5 and their mean (mAP).

The definition is the VOC devkit's (VOCdevkit/VOCcode/VOCevaldet.m and VOCap.m; Everingham et al.,
"The PASCAL Visual Object Classes (VOC) Challenge", IJCV 2010, Sec. 4.2), which py-faster-rcnn's
lib/datasets/voc_eval.py (Ren et al. 2015, "Faster R-CNN") re-implements and reports as mAP:

- per class, the detections of every image are ranked by descending confidence. Ties keep the order
  of the input (a stable sort, as MATLAB's sort in the devkit): images in the iteration order of
  `detections` (a list's index order, a mapping's insertion order), then the rows of each image;
- each detection, in rank order, is assigned to the ground-truth object of its image (and class) it
  overlaps most, over all of them, matched or not (the devkit's ``ovmax``; the first object wins a
  tie). If that overlap is >= the IoU threshold (0.5): a "difficult" object makes the detection
  neither a true nor a false positive; an object no detection claimed yet makes it a true positive
  (and claims it); an object already claimed makes it a false positive (a duplicate detection), even
  when another, unclaimed object overlaps it by >= 0.5 too. Below the threshold it is a false positive;
- recall = true positives / non-difficult objects, precision = true positives / counted detections,
  cumulated down the ranking. Detections that matched a difficult object are left out of the ranking:
  the devkit's curve repeats the previous point there (0/0 before any counted detection, which its
  VOCap ignores), so the AP is the same;
- AP, method "voc2010" (the default; VOC2010 onwards, VOCap): the area under the precision envelope
  (precision made monotone non-increasing from the right), summed over every step of recall, with the
  curve closed at recall 0 and 1 by precision 0;
- AP, method "voc2007" (VOC2007's devkit and py-faster-rcnn's use_07_metric): the mean, over the 11
  recall levels t = 0, 0.1, ..., 1, of the highest precision at recall >= t (0 where recall never
  reaches t). The levels are k / 10 exactly (the IJCV paper's definition): the devkit's ``0:0.1:1``
  and NumPy's arange give 0.30000000000000004 for the fourth, which a recall of exactly 3/10 misses;
- a class without non-difficult ground truth has no AP (recall is undefined; the devkit divides by
  zero): it is reported as None and left out of the mean. A class with ground truth and no detection
  has AP 0 and counts;
- mAP = the mean AP over the classes that have one.

Overlap is the devkit's, on inclusive pixel coordinates: a box [xmin, ymin, xmax, ymax] covers
(xmax - xmin + 1) x (ymax - ymin + 1) pixels, and two boxes intersect only where both the width and
the height of the intersection, counted the same way, are > 0. VOC's annotations are such pixel
indices (1-based), and the published VOC numbers were computed this way; a "+0" IoU would move
small boxes across the 0.5 threshold.

Inputs are plain Python / NumPy (one image's entry is a dict of arrays; N objects, D detections):

    ground_truth: {image_id: {"boxes": (N, 4) float [xmin, ymin, xmax, ymax], "labels": (N,) int
                   indices into `classes`, "difficult": (N,) bool (optional: all False)}}
    detections:   {image_id: {"boxes": (D, 4) float, "labels": (D,) int, "scores": (D,) float}}

Either may also be a list, whose index is the image id. Every image a detection names must be in
ground_truth (the devkit refuses unknown images); an image there with no object of a class is one
where every detection of the class is a false positive.

CPython 3.6-clean, standard library and NumPy >= 1.14 only: the entrypoint runs it inside images of
every era, after each epoch.
"""

from typing import Any, Dict, List, Mapping, Sequence, Tuple

import numpy as np

from bench.errors import UsageError

VOC2010 = "voc2010"
VOC2007 = "voc2007"
# method -> how a report labels the AP it gives.
METHODS = {
    VOC2010: "VOC2010+ all-point interpolated AP (area under the precision envelope)",
    VOC2007: "VOC2007 11-point interpolated AP",
}
IOU_THRESHOLD = 0.5
# The recall levels of the 11-point AP, written k / 10 so that a recall of exactly 3/10 reaches 0.3.
ELEVEN_POINTS = [k / 10.0 for k in range(11)]


def check_method(method: str) -> str:
    """Return method if it is a known AP method, else raise a UsageError naming the choices."""
    if method not in METHODS:
        raise UsageError(f"unknown VOC AP method '{method}'", f"choose from: {', '.join(sorted(METHODS))}")
    return method


def voc_iou(box, boxes) -> np.ndarray:
    """IoU of one box (4,) with each of boxes (N, 4), VOCevaldet's way: inclusive pixel coordinates
    ("+1" widths and heights), 0 where the boxes do not intersect. Returns (N,) float64."""
    box = np.asarray(box, dtype=np.float64)
    boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    iw = np.minimum(box[2], boxes[:, 2]) - np.maximum(box[0], boxes[:, 0]) + 1.0
    ih = np.minimum(box[3], boxes[:, 3]) - np.maximum(box[1], boxes[:, 1]) + 1.0
    inter = iw * ih
    union = ((box[2] - box[0] + 1.0) * (box[3] - box[1] + 1.0)
             + (boxes[:, 2] - boxes[:, 0] + 1.0) * (boxes[:, 3] - boxes[:, 1] + 1.0) - inter)
    # The devkit computes an overlap only where both sides are positive; elsewhere there is none.
    out = np.zeros(len(boxes), dtype=np.float64)
    hit = (iw > 0) & (ih > 0)
    out[hit] = inter[hit] / union[hit]
    return out


def average_precision(recall, precision, method: str = VOC2010) -> float:
    """AP of one precision/recall curve, recall (D,) non-decreasing and precision (D,) in rank order
    (the cumulated curve of evaluate_class): "voc2010", the devkit's VOCap (area under the precision
    envelope, summed where recall steps), or "voc2007", the 11-point mean. An empty curve has AP 0."""
    check_method(method)
    rec = np.asarray(recall, dtype=np.float64).reshape(-1)
    prec = np.asarray(precision, dtype=np.float64).reshape(-1)
    if rec.shape != prec.shape:
        raise UsageError(f"recall has {rec.size} points and precision {prec.size}",
                         "pass one precision per recall point")
    if method == VOC2007:
        return _eleven_point(rec, prec)
    return _all_point(rec, prec)


def _all_point(rec: np.ndarray, prec: np.ndarray) -> float:
    mrec = np.concatenate(([0.0], rec, [1.0]))
    mpre = np.concatenate(([0.0], prec, [0.0]))
    # The envelope: each precision raised to the best precision at any higher recall.
    mpre = np.maximum.accumulate(mpre[::-1])[::-1]
    steps = np.nonzero(mrec[1:] != mrec[:-1])[0] + 1
    return float(np.sum((mrec[steps] - mrec[steps - 1]) * mpre[steps]))


def _eleven_point(rec: np.ndarray, prec: np.ndarray) -> float:
    total = 0.0
    for level in ELEVEN_POINTS:
        reached = prec[rec >= level]
        total += float(reached.max()) if reached.size else 0.0
    return total / len(ELEVEN_POINTS)


def _images(table, what: str) -> List[Tuple[Any, Mapping]]:
    """(image id, entry) pairs of a mapping or a list (the index is the id), in their order."""
    pairs = list(table.items()) if hasattr(table, "items") else list(enumerate(table))
    for image_id, entry in pairs:
        if not hasattr(entry, "get"):
            raise UsageError(f"{what} of image {image_id!r} is a {type(entry).__name__}, not a dict of arrays",
                             "give each image a dict with 'boxes' and 'labels' (see bench/detection/voc_eval.py)")
    return pairs


def _column(entry: Mapping, key: str, image_id, what: str, rows: int, dtype) -> np.ndarray:
    if key not in entry:
        raise UsageError(f"{what} of image {image_id!r} has no '{key}'",
                         "give each image 'boxes' and 'labels' (and 'scores' for detections)")
    values = np.asarray(entry[key], dtype=dtype)
    values = values.reshape(-1, 4) if key == "boxes" and values.size == 0 else values
    shape = (rows, 4) if key == "boxes" else (rows,)
    if values.shape != shape:
        raise UsageError(f"{what} '{key}' of image {image_id!r} has shape {values.shape}, not {shape}",
                         "give boxes as (N, 4) [xmin, ymin, xmax, ymax] and one label (and score) per box")
    if values.dtype.kind == "f" and not np.all(np.isfinite(values)):
        raise UsageError(f"{what} '{key}' of image {image_id!r} holds a NaN or infinite value",
                         "pass finite boxes and scores")
    return values


def _labels(entry: Mapping, image_id, what: str, rows: int, num_classes: int) -> np.ndarray:
    labels = _column(entry, "labels", image_id, what, rows, None)
    if labels.size and labels.dtype.kind not in "iu":
        raise UsageError(f"{what} 'labels' of image {image_id!r} are {labels.dtype}, not integers",
                         "give labels as indices into the class list")
    labels = labels.astype(np.int64)
    outside = labels[(labels < 0) | (labels >= num_classes)]
    if outside.size:
        raise UsageError(f"{what} of image {image_id!r} has label {int(outside[0])}, outside the {num_classes} "
                         "classes", "give labels as indices into the class list")
    return labels


def _rows(entry: Mapping, image_id, what: str) -> int:
    if "boxes" not in entry:
        raise UsageError(f"{what} of image {image_id!r} has no 'boxes'", "give each image (N, 4) 'boxes'")
    return int(np.asarray(entry["boxes"]).size // 4)


def _ground_truth(ground_truth, num_classes: int) -> Dict[Any, Tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """image id -> (boxes (N, 4), labels (N,), difficult (N,) bool), checked."""
    out = {}
    for image_id, entry in _images(ground_truth, "ground truth"):
        rows = _rows(entry, image_id, "ground truth")
        boxes = _column(entry, "boxes", image_id, "ground truth", rows, np.float64)
        labels = _labels(entry, image_id, "ground truth", rows, num_classes)
        if "difficult" in entry:
            difficult = _column(entry, "difficult", image_id, "ground truth", rows, bool)
        else:
            difficult = np.zeros(rows, dtype=bool)
        out[image_id] = (boxes, labels, difficult)
    return out


def _detections(detections, num_classes: int, known) -> List[Tuple[Any, np.ndarray, np.ndarray, np.ndarray]]:
    """[(image id, boxes (D, 4), labels (D,), scores (D,))] in input order, checked."""
    out = []
    for image_id, entry in _images(detections, "detections"):
        if image_id not in known:
            raise UsageError(f"detections name image {image_id!r}, which the ground truth lacks",
                             "evaluate detections only of images whose annotations are given (empty ones too)")
        rows = _rows(entry, image_id, "detections")
        boxes = _column(entry, "boxes", image_id, "detections", rows, np.float64)
        labels = _labels(entry, image_id, "detections", rows, num_classes)
        scores = _column(entry, "scores", image_id, "detections", rows, np.float64)
        out.append((image_id, boxes, labels, scores))
    return out


def _outcomes(ranked: List[Tuple[Any, np.ndarray]], objects: Dict[Any, Tuple[np.ndarray, np.ndarray]],
              iou_threshold: float) -> List[int]:
    """VOCevaldet's assignment of ranked (image id, box) detections of one class to its objects
    (image id -> (boxes, difficult)): 1 true positive, 0 false positive, -1 neither (a difficult object)."""
    claimed = {image_id: np.zeros(len(boxes), dtype=bool) for image_id, (boxes, _) in objects.items()}
    out = []
    for image_id, box in ranked:
        boxes, difficult = objects.get(image_id, (np.zeros((0, 4)), np.zeros(0, dtype=bool)))
        overlaps = voc_iou(box, boxes)
        if not overlaps.size or overlaps.max() < iou_threshold:
            out.append(0)
            continue
        best = int(np.argmax(overlaps))  # the first of equal overlaps, as the devkit's strict '>'
        if difficult[best]:
            out.append(-1)
        elif claimed[image_id][best]:
            out.append(0)  # a second detection of the same object
        else:
            claimed[image_id][best] = True
            out.append(1)
    return out


def evaluate_class(detections: List[Tuple[Any, np.ndarray, float]],
                   objects: Dict[Any, Tuple[np.ndarray, np.ndarray]],
                   iou_threshold: float = IOU_THRESHOLD, method: str = VOC2010) -> Dict[str, Any]:
    """One class's evaluation. detections: [(image id, box (4,), score)] in input order; objects: image id ->
    (boxes (N, 4), difficult (N,) bool) of this class. Returns {"ap": float or None (no non-difficult
    object), "recall": (K,), "precision": (K,) over the K counted detections in rank order, "positives":
    non-difficult objects, "true_positives", "false_positives", "ignored": detections of difficult objects}."""
    check_method(method)
    scores = np.array([score for _, _, score in detections], dtype=np.float64)
    # A stable sort of the negated scores: equal scores keep their input order (the devkit's MATLAB sort).
    order = np.argsort(-scores, kind="mergesort")
    ranked = [(detections[i][0], detections[i][1]) for i in order]
    outcomes = np.array(_outcomes(ranked, objects, iou_threshold), dtype=np.int64)
    counted = outcomes[outcomes >= 0]
    tp = np.cumsum(counted == 1).astype(np.float64)
    fp = np.cumsum(counted == 0).astype(np.float64)
    positives = int(sum(int(np.sum(~difficult)) for _, difficult in objects.values()))
    result = {"positives": positives, "true_positives": int(np.sum(counted == 1)),
              "false_positives": int(np.sum(counted == 0)), "ignored": int(np.sum(outcomes < 0)),
              "precision": tp / (tp + fp)}  # every counted detection is one or the other: no 0 / 0
    if positives == 0:
        result.update(ap=None, recall=np.full(len(counted), np.nan))
        return result
    result["recall"] = tp / positives
    result["ap"] = average_precision(result["recall"], result["precision"], method)
    return result


def _check_threshold(iou_threshold) -> float:
    value = float(iou_threshold)
    if not 0.0 < value <= 1.0:
        raise UsageError(f"IoU threshold {iou_threshold!r} is not in (0, 1]", "VOC uses 0.5")
    return value


def evaluate(detections, ground_truth, classes: Sequence[str], iou_threshold: float = IOU_THRESHOLD,
             method: str = VOC2010) -> Dict[str, Any]:
    """The VOC detection evaluation of `detections` against `ground_truth` (shapes: the module docstring),
    labels indexing `classes`. Returns {"ap": {class: AP or None}, "map": the mean of the APs that are not
    None (None when none is), "no_ground_truth": [classes without non-difficult objects, hence no AP],
    "classes": {class: evaluate_class's result}, "method", "method_label", "iou_threshold"}."""
    check_method(method)
    threshold = _check_threshold(iou_threshold)
    classes = list(classes)
    if not classes:
        raise UsageError("no classes to evaluate", "pass the dataset's class names")
    truth = _ground_truth(ground_truth, len(classes))
    found = _detections(detections, len(classes), truth)
    per_class = {}
    for index, name in enumerate(classes):
        objects = {image_id: (boxes[labels == index], difficult[labels == index])
                   for image_id, (boxes, labels, difficult) in truth.items()}
        ranked = [(image_id, boxes[row], float(scores[row]))
                  for image_id, boxes, labels, scores in found for row in np.nonzero(labels == index)[0]]
        per_class[name] = evaluate_class(ranked, objects, threshold, method)
    aps = {name: result["ap"] for name, result in per_class.items()}
    scored = [ap for ap in aps.values() if ap is not None]
    return {"ap": aps, "map": float(np.mean(scored)) if scored else None,
            "no_ground_truth": [name for name in classes if aps[name] is None], "classes": per_class,
            "method": method, "method_label": METHODS[method], "iou_threshold": threshold}


def summary(result: Mapping[str, Any]) -> str:
    """One line of an evaluate() result: the mAP, its method and threshold, and the classes without AP."""
    mean = "n/a" if result["map"] is None else f"{100.0 * result['map']:.2f}%"
    line = f"mAP {mean} ({result['method_label']}, IoU >= {result['iou_threshold']:g})"
    missing = result["no_ground_truth"]
    return line + (f"; no AP (no non-difficult ground truth): {', '.join(missing)}" if missing else "")
