"""Faster R-CNN's framework-free half (issue 31): NumPy only, CPython 3.6-clean, so every framework of both
eras computes the same anchors, targets and proposals from the same code.

- config: DEFAULTS, every default value these modules use, and CITED, each with its source (Ren et al. 2015,
  py-faster-rcnn, torchvision, detectron2).
- boxes: IoU, the box encoding (dx, dy, dw, dh) and its inverse, clipping, small-box removal, greedy NMS.
- anchors: the base anchors of a stride (scales x ratios) and their grid over a feature map.
- targets: RPN anchor targets, RoI proposal targets, and proposal selection (decode, clip, NMS).
- voc_eval: the VOC detection evaluation (per-class AP, mAP).
- detector: the network every framework builds (a workload's model, architecture "faster_rcnn"), planned once, and
  its four losses' definition; roialign: RoIAlign as two matrices per RoI and its sample-by-sample reference.
- images: one prepared VOC image as the network reads it; step: the host's work between the network's stages for
  one image; trainer: the loop over images every framework's network runs in (DetectionTrainer).
- support: which framework modules build the detector (detection.py or <era>_detection.py in their package).

Boxes are (x1, y1, x2, y2) in pixels with the modern "+0" extent (width = x2 - x1, as torchvision and
detectron2 use), not py-faster-rcnn's "+1" (width = x2 - x1 + 1). voc_eval alone computes the VOC devkit's
"+1" overlap on the boxes as annotated (1-based inclusive pixels), as the published VOC numbers do: a box of the
kit's +0 convention converts as (x1 + 1, y1 + 1, x2, y2) before evaluation (data/voc.py keeps the annotated boxes).
"""
