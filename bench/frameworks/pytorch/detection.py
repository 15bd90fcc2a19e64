"""PyTorch, either era: the Faster R-CNN detector (bench/detection/detector.py's drawing) as a Network of
bench/detection/trainer.py, which DetectionTrainer wraps.

The trunk and the head are model.modules() of the planned layers (the classifier's builder; the plan's 'same'
pads are fixed amounts that hold for every padded image size, so nothing here depends on H and W). Between them:
the RPN (a 3x3 conv and ReLU, 1x1 convs of A logits and 4A deltas), RoIAlign as two matrix products (torch.matmul
of roialign.matrices' rows and cols: no image carries torchvision, and torchvision's roi_align had no aligned=True
before 0.6 anyway), and two nn.Linear outputs. The four losses are detector.losses written in torch ops; Adam
from trainer.make_optimizer with the weight decay applied decoupled before each update, as TorchTrainer does.

Era-neutral (both images carry it), CPython 3.6-clean, written with what PyTorch 0.4.1 already had: torch.matmul
(2-D mm and same-batch bmm; 0.2), torch.where (0.4.0), torch.no_grad (0.4.0), Tensor.to(device) (0.4.0),
F.cross_entropy with its default mean, Tensor.item() (0.4.0). What 0.4.1 lacks is done by hand: smooth L1 with a
beta (F.smooth_l1_loss's `beta` is 1.7) and the sigmoid cross-entropy with a per-anchor weight summed and divided
by the sampled count (written out as detector.losses does rather than through a `reduction` keyword whose
values changed after 0.4.1); forward passes without autograd run under torch.no_grad in both eras
(torch.inference_mode is 1.9). Unverified: the paper era is not run here (its image is not built in CI).
"""

from typing import Any, Callable, Dict, List, Tuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from bench import switches
from bench.detection import detector as det
from bench.detection import weights as neutral
from bench.detection.step import RoiBatch, RpnBatch
from bench.detection.trainer import DetectionTrainer
from bench.frameworks import common
from bench.frameworks.pytorch import model, trainer

# The modules that hold weights (_targets: bench/detection/weights.py's parts each takes, in its order of parameters).
WEIGHTED = (nn.Conv2d, nn.BatchNorm2d, nn.BatchNorm1d, nn.Linear)
ROI_OP = "RoIAlign as two matrix products (bench/detection/roialign.py): torch.matmul, the longer side contracted first"


def _targets(module: nn.Module) -> List[torch.Tensor]:
    """A weighted module's tensors in bench/detection/weights.py's order of parts; an absent bias left out."""
    if isinstance(module, (nn.BatchNorm2d, nn.BatchNorm1d)):
        return [module.weight, module.bias, module.running_mean, module.running_var]
    return [module.weight] + ([module.bias] if module.bias is not None else [])


class DetectorNet(nn.Module):
    """The detector's modules (NCHW): trunk, RPN, RoI op, head, class and box outputs."""

    def __init__(self, detector: det.DetectorPlan):
        super().__init__()
        channels, hidden, anchors = detector.trunk_channels, detector.settings["rpn"]["channels"], detector.num_anchors
        # A detector's plan has no recurrent layer: the LSTM class model.modules asks for is never built.
        self.trunk = nn.Sequential(*model.modules(detector.trunk, model.LengthsLSTM))
        self.rpn_conv = nn.Conv2d(channels, hidden, 3, padding=1)  # 'same' for a 3x3 at stride 1: one cell a side
        self.rpn_logits = nn.Conv2d(hidden, anchors, 1)
        self.rpn_deltas = nn.Conv2d(hidden, 4 * anchors, 1)
        self.head = nn.Sequential(*model.modules(detector.head, model.LengthsLSTM))
        self.classes = nn.Linear(detector.features, detector.num_classes)
        self.boxes = nn.Linear(detector.features, 4 * detector.num_classes)

    def rpn(self, x: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(C4 features (1, C, Hf, Wf), objectness (Hf*Wf*A,), deltas (Hf*Wf*A, 4)) of an image (1, 3, Hp, Wp);
        the RPN's outputs in (y, x, anchor) order: channels last, and the 4A delta channels read as (A, 4)."""
        features = self.trunk(x)
        hidden = F.relu(self.rpn_conv(features))
        objectness = self.rpn_logits(hidden).permute(0, 2, 3, 1).contiguous().view(-1)
        deltas = self.rpn_deltas(hidden).permute(0, 2, 3, 1).contiguous().view(-1, 4)
        return features, objectness, deltas

    def roi_head(self, features: torch.Tensor, rows: torch.Tensor,
                 cols: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """(class logits (R, num_classes), box deltas (R, 4 * num_classes)) of the RoIs whose RoIAlign weights
        are rows (R, out, Hf) and cols (R, out, Wf)."""
        pooled = roi_align(features, rows, cols)
        vectors = self.head(pooled)
        return self.classes(vectors), self.boxes(vectors)


def roi_align(features: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor) -> torch.Tensor:
    """RoIAlign of (1, C, H, W) features as rows @ features @ cols^T per RoI: (R, C, out, out).

    Two plain products, no broadcast batch (torch.matmul would expand the features R times): one 2-D product
    of every RoI's weights over the first axis contracted, then one batched product per RoI over the second.
    The longer of H and W is contracted first, so the (R, out, C, shorter side) intermediate is the smaller one.
    Exact: the matrices hold RoIAlign's bilinear weights (bench/detection/roialign.py); they are constants.
    """
    feats = features[0]
    transposed = feats.size(2) > feats.size(1)  # wider than tall: contract the columns (W) first
    if transposed:
        feats, rows, cols = feats.transpose(1, 2), cols, rows
    c, h, w = feats.size()
    r, out = rows.size(0), rows.size(1)
    # (R*out, H) @ (H, C*W): each RoI row's weights over the feature rows, for every channel and column.
    first = torch.matmul(rows.contiguous().view(r * out, h), feats.permute(1, 0, 2).contiguous().view(h, c * w))
    # (R, out*C, W) @ (R, W, out): then each RoI's weights over the columns.
    pooled = torch.matmul(first.view(r, out * c, w), cols.transpose(1, 2)).view(r, out, c, out)
    # (R, i, C, j) -> (R, C, i, j); transposed, the first index was the column's: (R, C, j, i) -> (R, C, i, j).
    return pooled.permute(0, 2, 3, 1).contiguous() if transposed else pooled.permute(0, 2, 1, 3).contiguous()


def smooth_l1(d: torch.Tensor, beta: float) -> torch.Tensor:
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta, elementwise (detector.smooth_l1; F.smooth_l1_loss
    has no beta in 0.4.1)."""
    a = d.abs()
    return torch.where(a < beta, 0.5 * d * d / beta, a - 0.5 * beta)


class Network:
    """The detector as bench/detection/trainer.py's Network: train_step, detect, roi_features, param_count,
    synchronize, info."""

    def __init__(self, detector: det.DetectorPlan, spec: dict, device: torch.device, seed: int,
                 versions: Callable[[], Dict[str, str]], threads: Callable[[], Dict[str, int]]):
        self.detector = detector
        self.device = device
        self.cuda = device.type == "cuda"
        self.versions = versions
        self.threads = threads
        if self.cuda:  # as TorchTrainer: conv autotuning unless the cudnn_autotune switch turned it off
            torch.backends.cudnn.benchmark = switches.value(switches.AUTOTUNE) == "on"
        torch.manual_seed(seed)  # the initialization
        self.net = DetectorNet(detector).to(device)
        self.params = [p for p in self.net.parameters() if p.requires_grad]
        self.opt_settings = common.optimizer_settings(spec)
        self.optimizer = trainer.make_optimizer(self.params, self.opt_settings)

    def _tensor(self, array: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(array)).to(self.device)

    def _image(self, pixels: np.ndarray) -> torch.Tensor:
        """(1, Hp, Wp, 3) NHWC float32 -> (1, 3, Hp, Wp) on the device."""
        return self._tensor(pixels).permute(0, 3, 1, 2).contiguous()

    def _forward(self, pixels: np.ndarray, rois_for: Callable) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor,
                                                                         torch.Tensor, RoiBatch]:
        """Trunk and RPN, the host's RoIs from the RPN's outputs, then the RoI op and the head."""
        features, objectness, deltas = self.net.rpn(self._image(pixels))
        batch = rois_for(objectness.detach().cpu().numpy(), deltas.detach().cpu().numpy())
        if len(batch.rois) == 0:  # no proposal survived (test only: training appends the gt boxes)
            empty = features.new_zeros((0, self.detector.num_classes))
            return objectness, deltas, empty, features.new_zeros((0, 4 * self.detector.num_classes)), batch
        logits, boxes = self.net.roi_head(features, self._tensor(batch.rows), self._tensor(batch.cols))
        return objectness, deltas, logits, boxes, batch

    def losses(self, objectness: torch.Tensor, deltas: torch.Tensor, rpn: RpnBatch, logits: torch.Tensor,
               boxes: torch.Tensor, roi: RoiBatch) -> Dict[str, torch.Tensor]:
        """detector.losses in torch ops: the four losses (scalars) of one image."""
        settings = self.detector.settings
        labels, sampled = self._tensor(rpn.labels), self._tensor(rpn.sampled)
        # Sigmoid cross-entropy in its stable form, weighted by `sampled` and divided by the sampled count.
        bce = torch.clamp(objectness, min=0) - objectness * labels + torch.log1p(torch.exp(-objectness.abs()))
        rpn_box = smooth_l1(deltas - self._tensor(rpn.box_targets), settings["rpn"]["box_beta"])
        head_box = smooth_l1(boxes - self._tensor(roi.box_targets), settings["roi"]["box_beta"])
        return {
            "rpn_class": (bce * sampled).sum() / rpn.count,
            "rpn_box": (rpn_box * self._tensor(rpn.box_mask)).sum() / rpn.count,
            "head_class": F.cross_entropy(logits, self._tensor(roi.labels)),  # the mean over the RoIs
            "head_box": (head_box * self._tensor(roi.box_mask)).sum() / logits.size(0),
        }

    def set_weights(self, weights: Dict[str, np.ndarray]) -> None:
        """Take weights in bench/detection/weights.py's layout (its kernels are PyTorch's: (out, in, kh, kw) and
        (out, in)): the trunk's and the head's weighted modules in order beside the plan's, then the RPN and outputs."""
        modules = [m for m in self.net.trunk.modules() if isinstance(m, WEIGHTED)]
        modules += [m for m in self.net.head.modules() if isinstance(m, WEIGHTED)]
        modules += [self.net.rpn_conv, self.net.rpn_logits, self.net.rpn_deltas, self.net.classes, self.net.boxes]
        pairs = neutral.placed(self.detector, weights, modules, _targets, lambda t: tuple(t.shape))
        with torch.no_grad():
            for target, value in pairs:
                target.copy_(self._tensor(value))

    def train_step(self, pixels: np.ndarray, rpn: RpnBatch, rois_for: Callable) -> Dict[str, float]:
        """One image in training mode (batchnorm's batch statistics): the summed losses, backward, decoupled weight
        decay, one optimizer update; the four losses before the update."""
        self.net.train()
        objectness, deltas, logits, boxes, roi = self._forward(pixels, rois_for)
        parts = self.losses(objectness, deltas, rpn, logits, boxes, roi)
        loss = parts["rpn_class"] + parts["rpn_box"] + parts["head_class"] + parts["head_box"]
        self.optimizer.zero_grad()
        loss.backward()
        wd = self.opt_settings["weight_decay"]
        if wd:  # common.WEIGHT_DECAY_RULE, as TorchTrainer._decay: w -= lr * wd * w before the update
            for p in self.params:
                p.data.mul_(1.0 - self.opt_settings["lr"] * wd)
        self.optimizer.step()
        return {name: value.item() for name, value in parts.items()}

    def detect(self, pixels: np.ndarray, rois_for: Callable) -> Tuple[np.ndarray, np.ndarray]:
        """The forward pass in inference mode (batchnorm's moving statistics, no autograd): (class logits,
        box deltas) as NumPy arrays."""
        self.net.eval()
        with torch.no_grad():
            _, _, logits, boxes, _ = self._forward(pixels, rois_for)
            return logits.cpu().numpy(), boxes.cpu().numpy()

    def roi_features(self, features: np.ndarray, batch: RoiBatch) -> np.ndarray:
        """This network's RoI op on (1, Hf, Wf, C) NHWC features: (R, C, out, out) (the probe's parity check)."""
        with torch.no_grad():
            pooled = roi_align(self._image(features), self._tensor(batch.rows), self._tensor(batch.cols))
            return pooled.cpu().numpy()

    def param_count(self) -> int:
        """Trainable parameters."""
        return int(sum(p.numel() for p in self.params))

    def synchronize(self) -> None:
        """Wait for queued CUDA work; nothing to wait for on the CPU."""
        if self.cuda:
            torch.cuda.synchronize()

    def info(self) -> dict:
        """What was really used: device, threads, RoI op, layout, losses, optimizer semantics, versions."""
        threads = self.threads()
        return {
            "framework": trainer.NAME,
            "versions": self.versions(),
            "device": str(self.device),
            "device_name": torch.cuda.get_device_name(self.device.index or 0) if self.cuda else common.cpu_name(),
            "threads": threads,
            "cudnn_benchmark": bool(torch.backends.cudnn.benchmark) if self.cuda else False,
            "roi_op": ROI_OP,
            "data_layout": "NCHW (each NHWC image permuted on the device)",
            "loss": "the sum of detector.losses' four in torch ops: sigmoid cross-entropy and smooth L1 written out "
                    "(0.4.1 has no smooth_l1_loss beta), F.cross_entropy",
            "optimizer": self.opt_settings,
            "weight_decay_rule": common.WEIGHT_DECAY_RULE,
        }


def make_trainer(spec: dict, data: Any, device: torch.device, seed: int, versions: Callable[[], Dict[str, str]],
                 threads: Callable[[], Dict[str, int]]) -> DetectionTrainer:
    """The detector workload's Trainer on `device` (an era module resolves it and sets the threads first);
    `versions`, `threads`: the era module's versions() and threads() (the thread pools differ by era)."""
    detector = det.plan(spec)
    return DetectionTrainer(Network(detector, spec, device, seed, versions, threads), detector, data, seed)
