"""The detector of a faster_rcnn workload (bench/detection/detector.py's drawing) in Theano, era-neutral: the
Network that bench.detection.trainer.DetectionTrainer drives (set_weights, train_step, detect, param_count,
synchronize, info).

The layers are graph.py's: the trunk, the head, the RPN's three convs and the two dense outputs are each a
graph.LayerStack over layers planned by bench/modelplan.py (the RPN's and the outputs' planned here from
detector.py's drawing), drawn with Keras' initialization as every Theano model of the kit and then replaced by
set_weights (DetectionTrainer sets bench/detection/weights.initial, the same numbers in every framework); the
trunk is built without H and W (LayerStack free_size), so one compiled function takes every padded image size (a
multiple of 16: the plan's pads hold for all of them). The optimizer is optimizers.training_updates (Adam, weight
decay applied as common.WEIGHT_DECAY_RULE says), the device, threads and toolchain runtime.py's.

Theano compiles whole functions and has no host stop inside one, so a training step is two compiled calls:
1. `rpn_train`: pixels -> the RPN's objectness and deltas, with the training graph's batchnorm (batch
   statistics), but without its updates: the host then computes the RoIs and their targets (rois_for);
2. `train`: pixels, the RPN's targets, the RoIs' RoIAlign matrices, labels and box targets -> the summed four
   losses (each computed before the update), with the optimizer's and batchnorm's updates. It recomputes the
   trunk and the RPN forward (the same symbolic graph as call 1, so the same values): the RoIs are constants of
   the gradient (approximate joint training), and a compiled gradient cannot start from values another call
   computed. The cost is one more trunk + RPN forward per step (info()["seconds_per_call"]: at the smoke profile
   call 1 took 2.0 s of the 34.2 s of training calls, ~6 %, the head's res5 on every RoI dominating), and
   compiling that forward twice (call 1 and inside call 2).
Detection (inference mode: batchnorm's moving statistics) is two calls too: `rpn_eval` (pixels -> the RPN's
outputs and the C4 features), then `head_eval` on the C4 features fed back as an input (no second trunk pass).

The RoI op: Theano has no RoIAlign, so it is bench/detection/roialign.py's two matrices, rows @ C4 @ cols^T, as
one T.tensordot (the columns) and one T.batched_dot (the rows): exact, differentiable in the features.

Weights: set_weights walks the stacks' weighted layers (graph.py's step dicts) in the plan's order beside
bench/detection/weights.owners and sets their shared variables, batchnorm's moving mean and variance included.
The neutral layout is already this builder's for convolutions: (out, in, kh, kw), and graph.py's conv2d runs with
filter_flip=False (cross-correlation), so a kernel is stored as given, not flipped; dense kernels are (in, out)
here and are transposed; the moving variance is the variance (graph.py divides by sqrt(var + epsilon), the plan's
epsilon); the RPN's 4A delta channels are already read as (anchor, coordinate) = 4a + k (_rpn).

Compile time is the main setup cost: the four functions compile lazily (the detection pair at the first
detect) and info()["compile_seconds"] holds each one's seconds (graph optimization and g++, cached per
environment: flags.compiledir).

Paper era (Theano 1.0.2 on CPython 3.6): every op used here (conv2d with None in its shape hint, pool_2d,
T.tensordot, T.batched_dot, T.nnet.softplus, T.nnet.crossentropy_softmax_1hot, T.switch, and a shared variable's
get_value(borrow=True) / set_value) is in Theano 1.0.0's API. set_weights and the four-loss train_step are run
here only on Theano 1.0.5, not yet in the paper image. CPython 3.6-clean; import it only after the era module has
set THEANO_FLAGS (flags.configure).
"""

import sys
import time
from typing import Any, Dict, Iterator, List, Optional, Tuple

import numpy as np
import theano
import theano.tensor as T

from bench import modelplan
from bench.detection import detector as det
from bench.detection import weights as neutral
from bench.detection.trainer import DetectionTrainer
from bench.frameworks import common
from bench.frameworks.theano import optimizers, runtime
from bench.frameworks.theano.graph import FLOATX, LayerStack, floatx
from bench.frameworks.theano.trainer import RECURSION_LIMIT, device_info

ROI_OP = "RoIAlign as two matrix products (bench/detection/roialign.py): T.tensordot then T.batched_dot"
# A weighted step's (graph.py's step dict) shared variables, in bench/detection/weights.py's order of its parts
# (kernel, bias; gamma, beta, mean, var). A conv2d without a bias has None as its "b" and no neutral bias.
WEIGHT_KEYS = {"conv2d": ("W", "b"), "batchnorm": ("gamma", "beta", "mean", "var"), "dense": ("W", "b")}


def make_trainer(spec: dict, data: Any, device: str, seed: int, flags_set_here: Dict[str, str]) -> DetectionTrainer:
    """The detector's Trainer: a TheanoDetector in bench.detection.trainer.DetectionTrainer."""
    network = TheanoDetector(spec, device, seed, flags_set_here)
    return DetectionTrainer(network, network.plan, data, seed)


def roi_align(features: T.TensorVariable, rows: T.TensorVariable, cols: T.TensorVariable) -> T.TensorVariable:
    """RoIAlign of features (C, H, W) with rows (R, out, H) and cols (R, out, W): (R, C, out, out), the head's
    NCHW input. pooled[r, c, i, j] = sum_h sum_w rows[r, i, h] features[c, h, w] cols[r, j, w]."""
    channels, out = features.shape[0], rows.shape[1]
    # The columns first (landscape images: the kept axis, H, is the shorter): (C, H, R, out) ...
    by_cols = T.tensordot(features, cols, axes=[[2], [2]])
    # ... then, per RoI, its rows times (H, C * out): one gemm per RoI.
    per_roi = by_cols.dimshuffle(2, 1, 0, 3).reshape((rows.shape[0], features.shape[1], channels * out))
    pooled = T.batched_dot(rows, per_roi)  # (R, out_i, C * out_j)
    return pooled.reshape((rows.shape[0], out, channels, out)).dimshuffle(0, 2, 1, 3)


def smooth_l1(d: T.TensorVariable, beta: float) -> T.TensorVariable:
    """detector.smooth_l1 elementwise: 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta."""
    a = abs(d)
    return T.switch(T.lt(a, floatx(beta)), floatx(0.5 / beta) * d * d, a - floatx(0.5 * beta))


class TheanoDetector:
    """The Network of bench/detection/trainer.py in Theano (module docstring)."""

    def __init__(self, spec: dict, device: str, seed: int, flags_set_here: Dict[str, str]) -> None:
        self.device = runtime.resolve_device(device)
        runtime.check_toolchain()
        self.threads = runtime.set_threads()
        self.flags_set_here = flags_set_here
        self.plan = det.plan(spec)
        self.opt_settings = common.optimizer_settings(spec)
        # Theano's gradient and graph optimizer recurse once per op along the graph (trainer.py).
        sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))
        rng = np.random.RandomState(seed)  # initialization, one stream for every stack
        c4 = self.plan.trunk[-1].output.dims  # the nominal image's (Hf, Wf, C): only C matters (free_size)
        channels, anchors, classes = self.plan.settings["rpn"]["channels"], self.plan.num_anchors, self.plan.num_classes
        self.trunk = LayerStack(self.plan.trunk, rng, "trunk.", free_size=True)
        self.rpn_conv = LayerStack(_conv(3, channels, "relu", c4), rng, "rpn.conv.", free_size=True)
        rpn_in = c4[:2] + (channels,)
        self.rpn_class = LayerStack(_conv(1, anchors, None, rpn_in), rng, "rpn.class.", free_size=True)
        self.rpn_box = LayerStack(_conv(1, 4 * anchors, None, rpn_in), rng, "rpn.box.", free_size=True)
        self.head = LayerStack(self.plan.head, rng, "head.")
        self.class_out = LayerStack(_dense(classes, self.plan.features), rng, "class.")
        self.box_out = LayerStack(_dense(4 * classes, self.plan.features), rng, "box.")
        self.stacks = [self.trunk, self.rpn_conv, self.rpn_class, self.rpn_box, self.head, self.class_out,
                       self.box_out]
        self.params = [p for stack in self.stacks for p in stack.params]
        self.pixels = T.tensor4("pixels", dtype=FLOATX)  # (1, Hp, Wp, 3) NHWC, as DetectionTrainer passes it
        self.compile_seconds = {}  # type: Dict[str, float]
        self.call_seconds = {}  # type: Dict[str, float]
        self._fns = {}  # type: Dict[str, Any]
        self._train_graph = None  # type: Optional[Dict[str, Any]]

    # -- graphs ----------------------------------------------------------------------------------
    def _rpn(self, deterministic: bool) -> Tuple[Any, Any, Any]:
        """(C4 (1, C, Hf, Wf), objectness (Hf * Wf * A,), deltas (Hf * Wf * A, 4)) on self.pixels, both outputs in
        (y, x, anchor) order: NCHW's channels moved last, the 4A channels read as (anchor, 4)."""
        c4 = self.trunk.apply(self.pixels.dimshuffle(0, 3, 1, 2), deterministic)
        hidden = self.rpn_conv.apply(c4, deterministic)
        objectness = self.rpn_class.apply(hidden, deterministic).dimshuffle(0, 2, 3, 1).flatten()
        deltas = self.rpn_box.apply(hidden, deterministic).dimshuffle(0, 2, 3, 1).reshape((-1, 4))
        return c4, objectness, deltas

    def _head(self, c4: T.TensorVariable, rows: T.TensorVariable, cols: T.TensorVariable,
              deterministic: bool) -> Tuple[Any, Any]:
        """(class logits (R, classes), box deltas (R, 4 classes)) of the RoIs of C4 (1, C, Hf, Wf)."""
        features = self.head.apply(roi_align(c4[0], rows, cols), deterministic)  # (R, F)
        as_image = features.dimshuffle(0, 1, "x", "x")  # the outputs' planned input: a 1 x 1 x F image, flattened
        return self.class_out.apply(as_image, deterministic), self.box_out.apply(as_image, deterministic)

    def _training(self) -> Dict[str, Any]:
        """The training graph, built once: its symbolic inputs, RPN outputs, four losses and updates."""
        if self._train_graph is not None:
            return self._train_graph
        c4, objectness, deltas = self._rpn(deterministic=False)
        rows, cols = T.tensor3("rows", dtype=FLOATX), T.tensor3("cols", dtype=FLOATX)
        logits, box_deltas = self._head(c4, rows, cols, deterministic=False)
        rpn_labels, rpn_sampled = T.vector("rpn_labels", dtype=FLOATX), T.vector("rpn_sampled", dtype=FLOATX)
        rpn_targets, rpn_mask = T.matrix("rpn_targets", dtype=FLOATX), T.matrix("rpn_mask", dtype=FLOATX)
        rpn_count = T.scalar("rpn_count", dtype=FLOATX)
        labels = T.vector("labels", dtype="int32")
        box_targets, box_mask = T.matrix("box_targets", dtype=FLOATX), T.matrix("box_mask", dtype=FLOATX)
        rpn_beta, roi_beta = self.plan.settings["rpn"]["box_beta"], self.plan.settings["roi"]["box_beta"]
        roi_count = T.cast(logits.shape[0], FLOATX)
        losses = [
            # sigmoid cross-entropy from logits, softplus(x) - x y (Theano's softplus is overflow-safe)
            ((T.nnet.softplus(objectness) - objectness * rpn_labels) * rpn_sampled).sum() / rpn_count,
            (smooth_l1(deltas - rpn_targets, rpn_beta) * rpn_mask).sum() / rpn_count,
            T.nnet.crossentropy_softmax_1hot(logits, labels)[0].mean(),  # softmax and cross-entropy fused
            (smooth_l1(box_deltas - box_targets, roi_beta) * box_mask).sum() / roi_count,
        ]
        total = losses[0] + losses[1] + losses[2] + losses[3]
        updates = optimizers.training_updates(self.params, total, self.opt_settings)
        for stack in self.stacks:  # batchnorm's moving statistics, from this graph's batch statistics
            updates += stack.state_updates
        self._train_graph = {
            "rpn": [objectness, deltas], "losses": losses, "total": total, "updates": updates,
            "inputs": [self.pixels, rpn_labels, rpn_sampled, rpn_targets, rpn_mask, rpn_count, rows, cols, labels,
                       box_targets, box_mask],
        }
        return self._train_graph

    def _function(self, name: str) -> Any:
        """The compiled function `name`, compiled on first use (its seconds in compile_seconds)."""
        if name in self._fns:
            return self._fns[name]
        started = time.perf_counter()
        if name == "rpn_train":  # the training graph's RPN outputs: batch statistics, no update
            graph = self._training()
            fn = theano.function([self.pixels], graph["rpn"], name=name)
        elif name == "train":
            graph = self._training()
            fn = theano.function(graph["inputs"], [graph["total"]] + graph["losses"], updates=graph["updates"],
                                 name=name)
        elif name == "rpn_eval":
            c4, objectness, deltas = self._rpn(deterministic=True)
            fn = theano.function([self.pixels], [objectness, deltas, c4], name=name)
        elif name == "head_eval":
            c4 = T.tensor4("c4", dtype=FLOATX)
            rows, cols = T.tensor3("rows", dtype=FLOATX), T.tensor3("cols", dtype=FLOATX)
            fn = theano.function([c4, rows, cols], list(self._head(c4, rows, cols, deterministic=True)), name=name)
        else:  # "roi": the op alone, for roi_features
            c4 = T.tensor3("features", dtype=FLOATX)
            rows, cols = T.tensor3("rows", dtype=FLOATX), T.tensor3("cols", dtype=FLOATX)
            fn = theano.function([c4, rows, cols], roi_align(c4, rows, cols), name=name)
        self.compile_seconds[name] = round(time.perf_counter() - started, 2)
        self._fns[name] = fn
        return fn

    def _call(self, name: str, *args: Any) -> List[np.ndarray]:
        """Call compiled function `name`, adding its seconds to call_seconds."""
        fn = self._function(name)
        started = time.perf_counter()
        out = fn(*args)
        self.call_seconds[name] = self.call_seconds.get(name, 0.0) + time.perf_counter() - started
        return out

    # -- the Network -----------------------------------------------------------------------------
    def set_weights(self, weights: Dict[str, np.ndarray]) -> None:
        """Take weights in bench/detection/weights.py's layout: the trunk's and the head's weighted layers in the
        plan's order beside weights.owners, then the RPN's three convs and the two outputs; batchnorm's moving
        statistics included. Convolution kernels as given (filter_flip=False: module docstring), dense kernels
        transposed to (in, out). Raises ValueError on any difference in count or shape (set_value would take any)."""
        steps = []  # type: List[Dict[str, Any]]
        for stack in (self.trunk, self.head, self.rpn_conv, self.rpn_class, self.rpn_box, self.class_out,
                      self.box_out):
            steps += list(_weighted(stack.steps))
        for target, value in neutral.placed(self.plan, weights, steps, _step_weights,
                                            lambda t: t.get_value(borrow=True).shape, _dense_in_out):
            target.set_value(value.astype(FLOATX))

    def train_step(self, pixels: np.ndarray, rpn: Any, rois_for: Any) -> Dict[str, float]:
        """One image in training mode: the RPN's outputs (call 1), the host's RoIs, the losses and the update
        (call 2, recomputing the trunk); the four losses (det.LOSS_NAMES), computed before the update."""
        pixels = np.asarray(pixels, FLOATX)
        objectness, deltas = self._call("rpn_train", pixels)
        roi = rois_for(np.asarray(objectness), np.asarray(deltas))
        outputs = self._call("train", pixels, rpn.labels, rpn.sampled, rpn.box_targets, rpn.box_mask,
                             floatx(rpn.count), roi.rows, roi.cols, np.asarray(roi.labels, np.int32),
                             roi.box_targets, roi.box_mask)
        # outputs[0] is their sum, which the graph differentiates; the trainer sums the parts itself.
        return dict(zip(det.LOSS_NAMES, (float(v) for v in outputs[1:])))

    def detect(self, pixels: np.ndarray, rois_for: Any) -> Tuple[np.ndarray, np.ndarray]:
        """One image in inference mode: (class logits (R, classes), box deltas (R, 4 classes)); the head reads
        the C4 features the first call returned."""
        objectness, deltas, c4 = self._call("rpn_eval", np.asarray(pixels, FLOATX))
        roi = rois_for(np.asarray(objectness), np.asarray(deltas))
        if len(roi.rois) == 0:  # nothing proposed: no head pass (a batch of none)
            n = self.plan.num_classes
            return np.zeros((0, n), np.float32), np.zeros((0, 4 * n), np.float32)
        logits, box_deltas = self._call("head_eval", c4, roi.rows, roi.cols)
        return np.asarray(logits), np.asarray(box_deltas)

    def roi_features(self, features: np.ndarray, batch: Any) -> np.ndarray:
        """This network's RoI op on features (1, H, W, C) NHWC at batch's rows and cols: (R, C, out, out)."""
        chw = np.ascontiguousarray(np.asarray(features, FLOATX)[0].transpose(2, 0, 1))
        return np.asarray(self._call("roi", chw, np.asarray(batch.rows, FLOATX), np.asarray(batch.cols, FLOATX)))

    def param_count(self) -> int:
        """Trainable parameters: the trunk's, the RPN's, the head's and the outputs'."""
        return int(sum(p.get_value(borrow=True).size for p in self.params))

    def synchronize(self) -> None:
        """Nothing to wait for: a compiled Theano function returns when its CPU work is done."""

    def info(self) -> dict:
        """What was really used: device, threads, the RoI op, the optimizer, compile and call seconds."""
        return {
            **device_info(self.device, self.threads),
            "roi_op": ROI_OP,
            "data_layout": "NCHW ('bc01'): each NHWC image dimshuffled inside the compiled graph",
            "training_step": ("two compiled calls, pixels -> RPN outputs (batch statistics, no update), then "
                              "pixels + targets -> losses and updates, which recomputes the trunk and the RPN"),
            "detection": "two compiled calls, pixels -> RPN outputs and C4, then C4 + RoIs -> head outputs",
            "loss": ("softplus(x) - x y (RPN objectness), smooth L1 as T.switch, "
                     "T.nnet.crossentropy_softmax_1hot (head classes)"),
            "optimizer": self.opt_settings,
            "weight_decay_rule": common.WEIGHT_DECAY_RULE,
            "theano_config": runtime.config_info(self.flags_set_here),
            "compile_seconds": dict(self.compile_seconds),
            "seconds_per_call": {k: round(v, 2) for k, v in self.call_seconds.items()},
        }


def _step_weights(step: Dict[str, Any]) -> List[Any]:
    """A weighted step's shared variables in bench/detection/weights.py's order of parts; an absent bias left out."""
    return [step[key] for key in WEIGHT_KEYS[step["type"]] if step[key] is not None]


def _dense_in_out(name: str, value: np.ndarray) -> np.ndarray:
    """A neutral array in this builder's layout: dense kernels (out, in) to (in, out) (x W + b); conv kernels as
    they are (filter_flip=False: the module docstring), vectors as they are."""
    return value.T if name.endswith(".kernel") and value.ndim == 2 else value


def _weighted(steps: List[Dict[str, Any]]) -> Iterator[Dict[str, Any]]:
    """The weighted steps (conv2d, batchnorm, dense) of graph.py's step dicts in the plan's order, as
    bench/detection/weights.py walks the layers: a residual's branch then its shortcut, a concat's branches in turn."""
    for step in steps:
        if step["type"] in WEIGHT_KEYS:
            yield step
        for sub in [step.get("branch"), step.get("shortcut")] + list(step.get("branches") or []):
            yield from _weighted(sub or [])


def _conv(kernel: int, filters: int, activation: Optional[str], input_shape: Tuple[int, ...]) -> List[Any]:
    """One planned conv2d 'same' with a bias (an RPN layer of detector.py's drawing) on (H, W, C)."""
    raw = {"type": "conv2d", "filters": filters, "kernel": kernel, "padding": "same", "activation": activation}
    return modelplan.plan_images([raw], input_shape, "RPN layer")


def _dense(units: int, features: int) -> List[Any]:
    """A planned dense output (units, with bias) on the head's features, planned as a flattened 1 x 1 x features
    image (plan_images plans image inputs; the flatten of a 1 x 1 image is the vector itself)."""
    return modelplan.plan_images([{"type": "flatten"}, {"type": "dense", "units": units}], (1, 1, features),
                                 "output layer")
