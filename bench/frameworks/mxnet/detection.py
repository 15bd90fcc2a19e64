"""frcnn-voc2012's detector (bench/detection/detector.py draws it) in MXNet Gluon: the Network that
bench.detection.trainer.DetectionTrainer drives, for today's MXNet and MXNet 1.3.0 alike (CPython 3.6-clean).

- Trunk and head: blocks.build_images of the planned layers (the kit's ResNet-50 blocks), each hybridized with
  static_alloc but not static_shape: every image has its own padded size and every step its own RoI count, and
  the cached graph re-infers its shapes when they change.
- RPN: one HybridBlock of three Conv2D (3x3 pad 1 + ReLU, 1x1 objectness logits, 1x1 deltas); the head's two
  Dense outputs are hybridized with the head.
- RoI op: mx.nd.contrib.ROIAlign(aligned=..., sample_ratio=...) where the installed MXNet's op has `aligned`
  (read off the op's docstring, not the version: today's MXNet has it); otherwise RoIAlign as two matrix
  products (bench/detection/roialign.py) by nd.dot and nd.batch_dot, which is exact.
- Training step: the Gluon idiom, autograd.record around the whole forward pass, loss.backward(), the decoupled
  weight decay and gluon.Trainer.step. The host stop (asnumpy of the RPN's outputs, for the proposals) happens
  inside the record scope: the RoIs are constants to the gradient (approximate joint training).
- Weights: set_weights takes bench/detection/weights.py's neutral layout, whose kernels are already MXNet's
  (Convolution is a cross-correlation with (out, in, kh, kw) kernels, Dense's weight is (out, in)), by
  Parameter.set_data on the network's context; DetectionTrainer sets weights.initial before training, so the
  Xavier draw of `initialize` (which allocates the parameters) is overwritten.
- Device, threads, seed, optimizer and weight decay: MXNetTrainer's (trainer.py), inherited.

The paper era (MXNet 1.3.0) relies on APIs the kit's MXNet classifier already uses there (gluon.HybridBlock,
nn.Conv2D/Dense/BatchNorm, hybridize(static_alloc=...), autograd.record, gluon.Trainer, the Gluon losses) and on
nd.dot, nd.batch_dot(transpose_b=True), nd.smooth_l1(scalar=...), nd.transpose and nd.reshape, all MXNet 1.x
operators; set_weights on Parameter.set_data and .shape, the blocks' gamma/beta/running_mean/running_var and
weight/bias attributes (bias None without use_bias), and Block._children, the OrderedDict of a block's children
in registration order that Gluon keeps throughout 1.x (private, but Block.apply, the public walk, is not known
to be in 1.3.0). MXNet 1.3.0's contrib.ROIAlign has no `aligned` (a later addition), so that era takes the matrix
products; its ROIAlign's other rules were not checked here. Unverified here (no 1.3.0 environment on this
machine): that its CachedOp with static_alloc takes a new input shape on each call as 1.9's does.
"""

import re
from typing import Callable, Dict, List, Tuple

import numpy as np

from bench.detection import detector as det
from bench.detection import weights as neutral
from bench.detection.detector import DetectorPlan
from bench.detection.step import RoiBatch, RpnBatch
from bench.detection.trainer import DetectionTrainer
from bench.frameworks import common
from bench.frameworks.mxnet import blocks
from bench.frameworks.mxnet.library import autograd, gluon, mx, nd, nn, set_threads
from bench.frameworks.mxnet.trainer import MXNetTrainer

NATIVE_ROI = "mxnet contrib.ROIAlign (aligned)"
MATRIX_ROI = "RoIAlign as two matrix products (bench/detection/roialign.py): nd.dot, nd.batch_dot"
# The blocks that hold weights, each with its parameters' attributes in bench/detection/weights.py's order of parts.
WEIGHTED = ((nn.BatchNorm, ("gamma", "beta", "running_mean", "running_var")), (nn.Conv2D, ("weight", "bias")),
            (nn.Dense, ("weight", "bias")))


def weighted_blocks(block: gluon.Block) -> List[gluon.Block]:
    """The Conv2D, BatchNorm and Dense blocks under `block` (itself included), depth first in the order their
    parents registered them: blocks.build_images registers a plan's layers in order, a residual's branch before
    its shortcut and a concat's branches in order, which is bench/detection/weights.owners' order."""
    if any(isinstance(block, kind) for kind, _ in WEIGHTED):
        return [block]
    found = []  # type: List[gluon.Block]
    for child in block._children.values():  # an OrderedDict in every MXNet 1.x, 1.3.0 included
        found += weighted_blocks(child)
    return found


def block_parameters(block: gluon.Block) -> List[gluon.Parameter]:
    """A weighted block's parameters in bench/detection/weights.py's order of parts; an absent bias left out."""
    for kind, attributes in WEIGHTED:
        if isinstance(block, kind):
            return [p for p in (getattr(block, a, None) for a in attributes) if p is not None]
    raise TypeError(f"{type(block).__name__} holds no weights set_weights knows")


def native_roi_align() -> bool:
    """Whether this MXNet's contrib.ROIAlign takes `aligned` (detectron2's half-cell shift), i.e. computes
    bench/detection/roialign.py's op itself."""
    # The parameter's own entry in the docstring ("aligned : boolean, ..."), not a word of the op's prose.
    return re.search(r"^aligned\s*:", nd.contrib.ROIAlign.__doc__ or "", re.MULTILINE) is not None


class _RPN(gluon.HybridBlock):
    """The region proposal head on C4: a 3x3 conv + ReLU, then objectness logits and box deltas per anchor."""

    def __init__(self, in_channels: int, channels: int, anchors: int, **kwargs) -> None:
        super().__init__(**kwargs)
        with self.name_scope():
            self.conv = nn.Conv2D(channels, 3, padding=1, activation="relu", in_channels=in_channels)
            self.logits = nn.Conv2D(anchors, 1, in_channels=channels)
            self.deltas = nn.Conv2D(4 * anchors, 1, in_channels=channels)

    def hybrid_forward(self, F, x):  # noqa: N803 (Gluon's signature)
        h = self.conv(x)
        # NCHW (1, A, Hf, Wf) -> NHWC, flattened: rows in (y, x, anchor) order, the 4A channels read as (anchor, 4).
        objectness = F.reshape(F.transpose(self.logits(h), axes=(0, 2, 3, 1)), shape=(-1,))
        deltas = F.reshape(F.transpose(self.deltas(h), axes=(0, 2, 3, 1)), shape=(-1, 4))
        return objectness, deltas


class _Head(gluon.HybridBlock):
    """The per-RoI head: the planned layers (res5, global average pool), then class logits and box deltas."""

    def __init__(self, detector: DetectorPlan, **kwargs) -> None:
        super().__init__(**kwargs)
        with self.name_scope():
            self.body = blocks.build_images(detector.head)
            self.classes = nn.Dense(detector.num_classes, in_units=detector.features)
            self.boxes = nn.Dense(4 * detector.num_classes, in_units=detector.features)

    def hybrid_forward(self, F, x):  # noqa: N803
        h = self.body(x)
        return self.classes(h), self.boxes(h)


class DetectorNetwork(MXNetTrainer):
    """The detector as a bench.detection.trainer Network.

    It subclasses MXNetTrainer for its helpers only (the context, the optimizer, the decoupled weight decay, the
    parameter count, synchronize); an era module combines it with its own MXNetTrainer subclass for that era's
    hooks (versions, build facts). The epoch loop, sampling and evaluation are DetectionTrainer's, not the
    inherited train_epoch/evaluate.
    """

    def __init__(self, detector: DetectorPlan, spec: dict, device: str, seed: int) -> None:  # noqa: D107
        self.ctx = self._context(device)
        self.gpu = self.ctx.device_type == "gpu"
        self.threads = set_threads()
        mx.random.seed(seed)  # initialization, on every context
        self.detector = detector
        self.roi = detector.settings["roi"]
        self.scale = 1.0 / detector.settings["anchors"]["stride"]
        self.native_roi = native_roi_align()
        self.trunk = blocks.build_images(detector.trunk)
        self.rpn = _RPN(detector.trunk_channels, detector.settings["rpn"]["channels"], detector.num_anchors)
        self.head = _Head(detector)
        self.params: List[gluon.Parameter] = []
        for block in (self.trunk, self.rpn, self.head):
            # As MXNetTrainer: Xavier (Glorot uniform) weights, zero biases, batchnorm's own (ones, zeros); this
            # allocates the parameters, which DetectionTrainer then overwrites with weights.initial (set_weights).
            block.initialize(mx.init.Xavier(), ctx=self.ctx)
            block.hybridize(static_alloc=True)  # not static_shape: image sizes and RoI counts vary
            self.params += [p for p in block.collect_params().values() if p.grad_req != "null"]
        self.opt_settings = common.optimizer_settings(spec)
        self.trainer = self._make_trainer(self.opt_settings)
        # Sigmoid cross-entropy on logits: relu(x) - x y + log(1 + exp(-|x|)), detector.losses' form.
        self.bce = gluon.loss.SigmoidBinaryCrossEntropyLoss(from_sigmoid=False)
        self.softmax_ce = gluon.loss.SoftmaxCrossEntropyLoss(sparse_label=True)
        # nd.smooth_l1's scalar sigma is 1 / sqrt(beta): 0.5 (sigma d)^2 below 1 / sigma^2, else |d| - 0.5 / sigma^2.
        self.rpn_sigma = float(detector.settings["rpn"]["box_beta"]) ** -0.5
        self.roi_sigma = float(self.roi["box_beta"]) ** -0.5

    # -- the Network interface (bench/detection/trainer.py) ------------------------------------------
    def set_weights(self, weights: Dict[str, np.ndarray]) -> None:
        """Take weights in bench/detection/weights.py's layout (its kernels are MXNet's: Conv2D (out, in, kh, kw),
        Dense (out, in); a batchnorm's moving variance is MXNet's running_var): the trunk's and the head's weighted
        blocks in order beside weights.owners, then the RPN's three convs and the head's two outputs."""
        blocks = weighted_blocks(self.trunk) + weighted_blocks(self.head.body)
        blocks += [self.rpn.conv, self.rpn.logits, self.rpn.deltas, self.head.classes, self.head.boxes]
        for param, value in neutral.placed(self.detector, weights, blocks, block_parameters, lambda p: p.shape):
            param.set_data(nd.array(value, ctx=self.ctx, dtype="float32"))

    def train_step(self, pixels: np.ndarray, rpn: RpnBatch, rois_for: Callable) -> Dict[str, float]:
        """One image in training mode (batchnorm's batch statistics): the four losses, summed, backward and one
        update; the four losses as computed before the update."""
        x = self._pixels(pixels)
        with autograd.record():
            features = self.trunk(x)
            objectness, deltas = self.rpn(features)
            batch = rois_for(objectness.asnumpy(), deltas.asnumpy())  # the RoIs: constants to the gradient
            logits, boxes = self.head(self.roi_align(features, batch))
            terms = self._terms(objectness, deltas, rpn, logits, boxes, batch)
            loss = terms["rpn_class"] + terms["rpn_box"] + terms["head_class"] + terms["head_box"]
        loss.backward()
        parts = {name: float(terms[name].asscalar()) for name in det.LOSS_NAMES}  # read before the update
        self._decay()
        self.trainer.step(1)  # the loss is already the four means' sum
        return parts

    def detect(self, pixels: np.ndarray, rois_for: Callable) -> Tuple[np.ndarray, np.ndarray]:
        """The forward pass in inference mode (outside autograd.record: moving statistics, no gradient)."""
        features = self.trunk(self._pixels(pixels))
        objectness, deltas = self.rpn(features)
        batch = rois_for(objectness.asnumpy(), deltas.asnumpy())
        n = self.detector.num_classes
        if not len(batch.rois):  # no proposal survived: nothing to classify
            return np.zeros((0, n), np.float32), np.zeros((0, 4 * n), np.float32)
        logits, boxes = self.head(self.roi_align(features, batch))
        return logits.asnumpy(), boxes.asnumpy()

    def roi_features(self, features: np.ndarray, batch: RoiBatch) -> np.ndarray:
        """This network's RoI op on NHWC (1, Hf, Wf, C) NumPy features: (R, C, out, out) NumPy."""
        x = nd.array(np.ascontiguousarray(features.transpose(0, 3, 1, 2)), ctx=self.ctx, dtype="float32")
        return self.roi_align(x, batch).asnumpy()

    def roi_align(self, features: nd.NDArray, batch: RoiBatch) -> nd.NDArray:
        """RoIAlign of NCHW (1, C, Hf, Wf) features at the batch's RoIs: (R, C, out, out)."""
        out = self.roi["output"]
        if self.native_roi:
            rois = np.concatenate([np.zeros((len(batch.rois), 1)), batch.rois], axis=1)  # (image 0, x1, y1, x2, y2)
            return nd.contrib.ROIAlign(features, nd.array(rois, ctx=self.ctx, dtype="float32"),
                                       pooled_size=(out, out), spatial_scale=self.scale,
                                       sample_ratio=self.roi["sampling_ratio"], aligned=self.roi["aligned"])
        # pooled[r, c, i, j] = sum_h sum_w rows[r, i, h] features[c, h, w] cols[r, j, w]
        _, channels, height, width = features.shape
        rows = nd.array(batch.rows, ctx=self.ctx, dtype="float32").reshape((-1, height))  # (R * out, Hf)
        cols = nd.array(batch.cols, ctx=self.ctx, dtype="float32")  # (R, out, Wf)
        by_row = features.reshape((channels, height, width)).transpose((1, 0, 2)).reshape((height, -1))
        left = nd.dot(rows, by_row).reshape((len(batch.rois), out * channels, width))  # (R, out * C, Wf)
        pooled = nd.batch_dot(left, cols, transpose_b=True)  # (R, out * C, out)
        return pooled.reshape((len(batch.rois), out, channels, out)).transpose((0, 2, 1, 3))

    def param_count(self) -> int:
        """Trainable parameters: the trunk's, the RPN's, the head's and its two outputs'."""
        return int(sum(int(np.prod(p.shape)) for p in self.params))

    def info(self) -> dict:
        """What was really used: device, threads, kernels, the RoI op, losses, optimizer, versions."""
        conv = "cuDNN" if self.gpu else "CPU" + self._cpu_library("conv")
        return {
            **self.device_info(),
            "roi_op": NATIVE_ROI if self.native_roi else MATRIX_ROI,
            "kernels": {
                "conv2d": "gluon.nn.Conv2D NCHW (" + conv + ")",
                "batchnorm": "gluon.nn.BatchNorm (batch statistics inside autograd.record, moving ones in detect)",
                "residual": "activation(branch(x) + shortcut(x)); projection = 1x1 Conv2D(use_bias=False) + BN",
                "maxpool2d": "gluon.nn.MaxPool2D; 'same' = nd.pad(-inf) with TensorFlow's asymmetric rule",
            },
            "hybridize": "trunk, RPN and head each: static_alloc=True, static_shape=False (cached graphs; image "
            "sizes and RoI counts vary); the RoI op and the losses imperative",
            "initializer": "bench/detection/weights.initial, set by set_weights over Gluon's allocation "
            "(Parameter.set_data)",
            "data_layout": "NCHW (each image transposed from NHWC)",
            "loss": "sum of rpn_class (gluon SigmoidBinaryCrossEntropyLoss on logits, sampled anchors / count), "
            "rpn_box (nd.smooth_l1, positives / count), head_class (gluon SoftmaxCrossEntropyLoss, mean), "
            "head_box (nd.smooth_l1 of the true class's deltas / RoIs)",
            "optimizer": self.opt_settings,
            "optimizer_impl": f"gluon.Trainer(kvstore=None) with mx.optimizer '{self.opt_settings['name']}'",
            "weight_decay_rule": common.WEIGHT_DECAY_RULE,
        }

    # -- helpers ------------------------------------------------------------------------------------
    def _pixels(self, pixels: np.ndarray) -> nd.NDArray:
        """(1, Hp, Wp, 3) float32 NHWC -> NCHW on the context."""
        return nd.array(np.ascontiguousarray(pixels.transpose(0, 3, 1, 2)), ctx=self.ctx, dtype="float32")

    def _const(self, values: np.ndarray) -> nd.NDArray:
        return nd.array(values, ctx=self.ctx, dtype="float32")

    def _terms(self, objectness: nd.NDArray, deltas: nd.NDArray, rpn: RpnBatch, logits: nd.NDArray,
               boxes: nd.NDArray, batch: RoiBatch) -> Dict[str, nd.NDArray]:
        """detector.losses' four terms in MXNet ops, each a (1,) NDArray."""
        count, rois = float(rpn.count), float(len(batch.rois))
        # (A, 1) columns: the Gluon losses average over every axis but the first.
        labels, sampled = self._const(rpn.labels).reshape((-1, 1)), self._const(rpn.sampled).reshape((-1, 1))
        rpn_box = nd.smooth_l1(deltas - self._const(rpn.box_targets), scalar=self.rpn_sigma)
        head_box = nd.smooth_l1(boxes - self._const(batch.box_targets), scalar=self.roi_sigma)
        return {
            "rpn_class": self.bce(objectness.reshape((-1, 1)), labels, sampled).sum() / count,
            "rpn_box": (rpn_box * self._const(rpn.box_mask)).sum() / count,
            "head_class": self.softmax_ce(logits, self._const(batch.labels)).mean(),
            "head_box": (head_box * self._const(batch.box_mask)).sum() / rois,
        }


def make_trainer(network_class: type, spec: dict, data, device: str, seed: int) -> DetectionTrainer:
    """A detector spec's DetectionTrainer over network_class (an era's DetectorNetwork) on `device`."""
    detector = det.plan(spec)
    return DetectionTrainer(network_class(detector, spec, device, seed), detector, data, seed)
