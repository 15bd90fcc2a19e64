"""The defaults of bench/detection, each with the source it follows, in one place.

The workload spec (frcnn-voc2012) will carry every value; these are what the functions take when a caller
passes none, and what the spec's `choices` entries cite. CITED maps a name to (value, source); DEFAULTS to the
value alone. CPython 3.6-clean.

Sources: Ren, He, Girshick, Sun, "Faster R-CNN: Towards Real-Time Object Detection with Region Proposal
Networks", NIPS 2015 (Ren et al.); py-faster-rcnn, lib/fast_rcnn/config.py and the RPN layers of lib/rpn/
(the authors' Python code, whose ResNet runs used these defaults); torchvision.models.detection (BoxCoder,
RPN, RoIHeads); detectron2's defaults (config/defaults.py).
"""

import math
from collections import namedtuple

Cited = namedtuple("Cited", "value source")

CITED = {
    # Anchors (bench/detection/anchors.py).
    "anchor_stride": Cited(16, "py-faster-rcnn feat_stride 16: the stride of the conv feature map (VGG conv5, "
                               "ResNet C4)"),
    "anchor_scales": Cited((8, 16, 32), "py-faster-rcnn generate_anchors scales 2**arange(3, 6); Ren et al. "
                                        "Sec 3.3: box areas 128^2, 256^2, 512^2 at stride 16"),
    "anchor_ratios": Cited((0.5, 1.0, 2.0), "Ren et al. Sec 3.1.1, 3.3: aspect ratios 1:2, 1:1, 2:1 (height/width)"),
    "anchor_offset": Cited(0.5, "detectron2 MODEL.ANCHOR_GENERATOR.OFFSET, the recommended 0.5: anchors centred on "
                                "their cell, as py-faster-rcnn's (7.5, 7.5) is in its +1 convention"),
    # Box coding (bench/detection/boxes.py).
    "rpn_box_weights": Cited((1.0, 1.0, 1.0, 1.0), "py-faster-rcnn anchor_target_layer: RPN targets unnormalised; "
                                                   "torchvision RPN BoxCoder weights (1, 1, 1, 1)"),
    "head_box_weights": Cited((10.0, 10.0, 5.0, 5.0), "py-faster-rcnn TRAIN.BBOX_NORMALIZE_STDS (0.1, 0.1, 0.2, 0.2) "
                                                      "with zero means; torchvision RoIHeads BoxCoder (10, 10, 5, 5)"),
    "box_delta_clip": Cited(math.log(1000.0 / 16), "torchvision BoxCoder bbox_xform_clip = log(1000 / 16): exp(dw) "
                                                   "and exp(dh) never overflow"),
    # RPN anchor targets (bench/detection/targets.py rpn_targets).
    "rpn_positive_iou": Cited(0.7, "Ren et al. Sec 3.1.2; py-faster-rcnn TRAIN.RPN_POSITIVE_OVERLAP"),
    "rpn_negative_iou": Cited(0.3, "Ren et al. Sec 3.1.2; py-faster-rcnn TRAIN.RPN_NEGATIVE_OVERLAP"),
    "rpn_batch": Cited(256, "Ren et al. Sec 3.1.3; py-faster-rcnn TRAIN.RPN_BATCHSIZE"),
    "rpn_positive_fraction": Cited(0.5, "Ren et al. Sec 3.1.3 (positives:negatives up to 1:1); py-faster-rcnn "
                                        "TRAIN.RPN_FG_FRACTION"),
    "rpn_allowed_border": Cited(0, "py-faster-rcnn anchor_target_layer allowed_border 0; Ren et al. Sec 3.3 ignores "
                                   "cross-boundary anchors in training"),
    # Proposals (bench/detection/targets.py proposals).
    "rpn_nms_iou": Cited(0.7, "Ren et al. Sec 3.3; py-faster-rcnn TRAIN/TEST.RPN_NMS_THRESH"),
    "rpn_pre_nms_top_n_train": Cited(12000, "py-faster-rcnn TRAIN.RPN_PRE_NMS_TOP_N"),
    "rpn_post_nms_top_n_train": Cited(2000, "py-faster-rcnn TRAIN.RPN_POST_NMS_TOP_N; Ren et al. Sec 3.3"),
    "rpn_pre_nms_top_n_test": Cited(6000, "py-faster-rcnn TEST.RPN_PRE_NMS_TOP_N"),
    "rpn_post_nms_top_n_test": Cited(300, "py-faster-rcnn TEST.RPN_POST_NMS_TOP_N; Ren et al. Sec 4.1 (300 "
                                          "proposals at test)"),
    "rpn_min_size": Cited(16, "py-faster-rcnn TRAIN/TEST.RPN_MIN_SIZE, in pixels of the original image: the caller "
                              "multiplies it by the image's resize factor"),
    # RoI proposal targets (bench/detection/targets.py proposal_targets).
    "roi_batch": Cited(128, "py-faster-rcnn TRAIN.BATCH_SIZE (RoIs per image)"),
    "roi_fg_fraction": Cited(0.25, "py-faster-rcnn TRAIN.FG_FRACTION (Fast R-CNN's 25 % foreground)"),
    "roi_fg_iou": Cited(0.5, "py-faster-rcnn TRAIN.FG_THRESH"),
    "roi_bg_iou_hi": Cited(0.5, "py-faster-rcnn TRAIN.BG_THRESH_HI"),
    "roi_bg_iou_lo": Cited(0.0, "torchvision RoIHeads and detectron2 (every RoI below 0.5 may be background); "
                                "py-faster-rcnn's config has 0.1, Fast R-CNN's hard-negative heuristic"),
    # Detection post-processing (the head's output, evaluated by voc_eval).
    "test_nms_iou": Cited(0.3, "py-faster-rcnn TEST.NMS, per class"),
    "num_classes": Cited(21, "PASCAL VOC's 20 classes and the background, class 0"),
}

DEFAULTS = {name: cited.value for name, cited in CITED.items()}
