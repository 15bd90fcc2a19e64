"""The Trainer protocol (bench.frameworks.Trainer) for Chainer, the same in both eras (Chainer 7 and 4.5.0).

The loop is the Chainer idiom: model.cleargrads(), loss.backward(), optimizer.update(). The whole split lives
on the device as one array and batches are rows picked by a seeded permutation (no per-step host feeding);
images are converted once to float32 NCHW. type_check is off in the loops (Chainer's performance guide).
Weight decay is a decoupled 'pre' optimizer hook (call_for_each_param and timing exist in 4.5 as in 7).

What differs between the eras lives in the era adapters (current.py, paper.py), as the hooks SpecTrainer
leaves to them: the device (Chainer 7's chainer.get_device objects vs 4.5's cuda.get_device_from_id and
Link.to_gpu), setting and reading OpenBLAS' thread count (threadpoolctl vs OpenBLAS' C API), the GPU's
name and the versions() reported. Written with what both versions have: CPython 3.6-clean (images/compat.py).
"""

import math
import platform
from typing import Any, Dict, List, Optional, Tuple

import chainer
import chainer.functions as F  # noqa: N812 (Chainer's own convention)
import numpy as np
from chainer.backends import cuda

from bench import modelplan
from bench.frameworks import NonFiniteLoss, common
from bench.frameworks.chainer.layers import build_model

NAME = "chainer"
# On a GPU the loss is read back every this many steps rather than every step (a host read is a
# device sync). A NaN is still caught within that many steps. On the CPU every step is checked.
GPU_CHECK_EVERY = 20

# Lengths stay on the host: they size the split of a batch into sequences.
_HOST_ROLES = ("len", "y_len")
_LOSS_NAMES = {
    "categorical": "softmax_cross_entropy",
    "binary": "sigmoid_cross_entropy",
    "sequence": "softmax_cross_entropy over the counted tokens' rows (mean = sum / counted tokens)",
    "features": "none: a features model (model.output = 'features') is only run forward (infer)",
}


def versions(blas: Optional[str]) -> Dict[str, str]:
    """Versions of what was really imported (and CuPy/cuDNN where a GPU build is present); `blas`: the
    era's description of its BLAS, if it found one."""
    out = {"chainer": chainer.__version__, "numpy": np.__version__, "python": platform.python_version()}
    if blas:
        out["blas"] = blas
    if cuda.available:
        out["cupy"] = cuda.cupy.__version__
        if cuda.cudnn_enabled:
            out["cudnn"] = str(cuda.cuda.cudnn.getVersion())
    return out


def no_cuda(wanted: str) -> RuntimeError:
    """The failure of device 'gpu' where Chainer has no CUDA backend; `wanted`: the CuPy its version asks for."""
    return RuntimeError(f"device 'gpu' requested but Chainer has no CUDA backend (chainer {chainer.__version__}: "
                        f"CuPy is not installed in this environment; {wanted})")


def check_device(device: str, wanted: str) -> bool:
    """True for 'gpu' once CuPy and a CUDA device are there, False for 'cpu'; `wanted` as no_cuda()'s."""
    if device == "cpu":
        return False
    if device != "gpu":
        raise ValueError(f"unknown device {device!r}; expected 'cpu' or 'gpu'")
    if not cuda.available:
        raise no_cuda(wanted)
    if cuda.cupy.cuda.runtime.getDeviceCount() < 1:
        raise RuntimeError("device 'gpu' requested but CuPy sees no CUDA device")
    return True


class _DecoupledWeightDecay:
    """Optimizer hook: w -= lr * weight_decay * w before each update (common.WEIGHT_DECAY_RULE, Keras 3's).

    chainer.optimizer_hooks.WeightDecay adds rate * w to the gradient (coupled L2), which Adam
    would rescale; this one shrinks the weights themselves, before the update rule runs.
    """

    name = "DecoupledWeightDecay"
    call_for_each_param = True
    timing = "pre"

    def __init__(self, lr: float, weight_decay: float) -> None:
        self.factor = 1.0 - lr * weight_decay

    def __call__(self, rule: Any, param: chainer.Parameter) -> None:
        weights = param.array
        if weights is not None and param.grad is not None:
            weights *= self.factor  # in place, on the parameter's device


def make_optimizer(opt: dict, model: chainer.Link) -> chainer.Optimizer:
    """The optimizer of common.optimizer_settings() set up on `model`, with decoupled weight decay if asked."""
    if opt["name"] == "sgd":
        if opt["momentum"]:
            optimizer = chainer.optimizers.MomentumSGD(lr=opt["lr"], momentum=opt["momentum"])
        else:
            optimizer = chainer.optimizers.SGD(lr=opt["lr"])
    elif opt["name"] == "adadelta":
        # Zeiler's rule has no learning rate, and Chainer's AdaDelta none either: Keras' lr 1.0 only.
        if opt["lr"] != 1.0:
            raise modelplan.SpecError(f"adadelta lr {opt['lr']}: Chainer's AdaDelta has no learning rate (1.0 only)")
        optimizer = chainer.optimizers.AdaDelta(rho=opt["rho"], eps=opt["epsilon"])
    else:
        optimizer = chainer.optimizers.Adam(alpha=opt["lr"], beta1=opt["beta1"], beta2=opt["beta2"],
                                            eps=opt["epsilon"])
    optimizer.setup(model)
    if opt["weight_decay"]:
        optimizer.add_hook(_DecoupledWeightDecay(opt["lr"], opt["weight_decay"]))
    return optimizer


class SpecTrainer:
    """The Trainer protocol for Chainer; an era adapter subclasses it with the hooks below."""

    # -- the era's hooks -----------------------------------------------------------------------
    def _open_device(self, device: str) -> None:
        """Set self.gpu, self.xp and self.device_label ('@numpy', '@cupy:0') for `device`; make it current."""
        raise NotImplementedError

    def _send(self, array: np.ndarray) -> Any:
        """A host array on the trainer's device."""
        raise NotImplementedError

    def _place(self, model: chainer.Link) -> None:
        """Move the built model to the trainer's device."""
        raise NotImplementedError

    def _set_threads(self) -> Any:
        """Set OpenBLAS' threads to $DLREPRO_THREADS (what was set, kept as self.threads_set)."""
        raise NotImplementedError

    def _blas(self) -> Tuple[str, Optional[int]]:
        """(the BLAS' description, its thread count or None where it cannot be read)."""
        raise NotImplementedError

    def _threads(self, blas_name: str, blas_threads: Optional[int]) -> Dict[str, Any]:
        """info()'s "threads": one Python thread issues every op; OpenBLAS (CPU) is the only thread pool."""
        raise NotImplementedError

    def _device_name(self) -> str:
        """The device's name (the CPU's model, or the GPU's)."""
        raise NotImplementedError

    def _versions(self) -> Dict[str, str]:
        """The era module's versions()."""
        raise NotImplementedError

    # -- setup ---------------------------------------------------------------------------------
    def __init__(self, spec: dict, data: Any, device: str, seed: int) -> None:
        self._open_device(device)
        self.threads_set = self._set_threads()
        np.random.seed(seed)  # Chainer's initializers and CPU dropout draw from NumPy's global generator
        if self.gpu:
            cuda.cupy.random.seed(seed)
        # Shuffling has its own generator so its order depends on the seed alone.
        self.order_rng = np.random.RandomState(seed)
        self.spec_model = modelplan.plan(spec)
        self.kind = self.spec_model.kind
        self.model = build_model(self.spec_model)
        self._place(self.model)
        training = spec["training"]
        self.batch_size = int(training["batch_size"])
        self.shuffle = bool(training.get("shuffle", True))
        self.opt_settings = common.optimizer_settings(spec)
        self.optimizer = make_optimizer(self.opt_settings, self.model)
        self.train = self._arrays(data.train)
        self.test = self._arrays(data.test)
        self.epoch = 0
        self.steps = 0  # Trainer.step() calls so far
        self._ring = None  # type: Optional[common.StepRing]  # step()'s batch order, made on its first call
        self._ring_dev = None  # type: Any  # its rows on the device

    def _inputs(self, split: Dict[str, np.ndarray]) -> Dict[str, Any]:
        """The model's input roles: x and x_dec on the device, lengths (len, y_len) on the host."""
        x = split["x"]
        if x.ndim == 4:
            # uint8 NHWC -> float32 NCHW in [0, 1], once (Chainer's layout).
            x = np.ascontiguousarray(x.transpose(0, 3, 1, 2), dtype=np.float32) / np.float32(255.0)
        else:
            x = np.ascontiguousarray(x, dtype=np.int32)  # token ids, EmbedID takes int32
        out = {"x": self._send(x)}
        if "x_dec" in split:
            out["x_dec"] = self._send(np.ascontiguousarray(split["x_dec"], dtype=np.int32))
        for role in _HOST_ROLES:
            if role in split:
                out[role] = np.asarray(split[role], dtype=np.int64)
        return out

    def _arrays(self, split: Dict[str, np.ndarray]) -> Dict[str, Any]:
        if "len" in split:
            common.check_post_padded(split["x"], split["len"])
        arrays = self._inputs(split)
        y = np.asarray(split["y"], dtype=np.int32)
        if self.kind == "binary":
            y = y.reshape(-1, 1)  # sigmoid_cross_entropy wants t shaped like the logits
        arrays["y"] = self._send(y)
        return arrays

    # -- the per-batch code --------------------------------------------------------------------
    def param_count(self) -> int:
        """Trainable parameters (links.NStepLSTM has two bias vectors per gate where Keras has one)."""
        return int(sum(p.size for p in self.model.params()))

    def _logits(self, batch: Dict[str, Any], every_step: bool = False) -> chainer.Variable:
        """The model's logits; for sequences only the counted steps (y_len), unless every_step."""
        if "x_dec" in batch:
            return self.model(batch["x"], batch["len"], batch["x_dec"], None if every_step else batch.get("y_len"))
        return self.model(batch["x"], batch.get("len"))

    def _targets(self, batch: Dict[str, Any]) -> Any:
        """The labels the logits' rows stand for: per example, or the counted tokens in row-major order."""
        y = batch["y"]
        if self.kind != "sequence":
            return y
        if "y_len" not in batch:
            return y.reshape(-1)
        counted = np.flatnonzero(common.token_mask(y, batch["y_len"]))  # the mask's shape only: no device read
        return y.reshape(-1)[self.xp.asarray(counted)]

    def _loss(self, logits: chainer.Variable, t: Any) -> chainer.Variable:
        if self.kind == "binary":
            return F.sigmoid_cross_entropy(logits, t)
        # Mean over the rows: examples, or counted tokens (sequence after sequence).
        return F.softmax_cross_entropy(logits, t)

    def _correct(self, logits: Any, t: Any) -> Any:
        if self.kind == "binary":
            return ((logits > 0).astype(np.int32) == t).sum()
        return (logits.argmax(axis=1) == t).sum()

    def _check_finite(self, losses: List[Any], first: int) -> None:
        values = cuda.to_cpu(self.xp.stack(losses)) if self.gpu else np.asarray(losses)
        bad = np.flatnonzero(~np.isfinite(values))
        if len(bad):
            raise NonFiniteLoss(f"loss became {values[bad[0]]} at step {first + bad[0] + 1} of epoch {self.epoch}")

    @staticmethod
    def _rows(split: Dict[str, Any], host_idx: Any, device_idx: Any) -> Dict[str, Any]:
        """A batch of a split: rows host_idx of its lengths (host), device_idx of its arrays (device)."""
        return {role: arr[host_idx if role in _HOST_ROLES else device_idx] for role, arr in split.items()}

    def _forward(self, batch: Dict[str, Any]) -> Tuple[Any, chainer.Variable, chainer.Variable]:
        """(targets, logits, mean loss) of a training batch; call it in train mode."""
        t = self._targets(batch)
        logits = self._logits(batch)
        return t, logits, self._loss(logits, t)

    def _update(self, loss: chainer.Variable) -> None:
        """Backward from a batch's loss and one optimizer update."""
        self.model.cleargrads()
        loss.backward()
        self.optimizer.update()

    # -- the protocols -------------------------------------------------------------------------
    def _start_ring(self) -> None:
        """step()'s and infer()'s batch order (common.StepRing) and its rows on the device, made once."""
        if self._ring is None:
            self._ring = common.StepRing(len(self.train["y"]), self.batch_size)
            self._ring_dev = self._send(self._ring.ring)

    def _next_batch(self) -> Dict[str, Any]:
        self._start_ring()
        rows = self._ring.take()
        return self._rows(self.train, self._ring.ring[rows], self._ring_dev[rows])

    def step(self) -> float:
        """One update on the next batch of the training set in order (wrapping around); its mean loss,
        checked before the update as train_epoch checks it."""
        batch = self._next_batch()
        self.steps += 1
        with chainer.using_config("train", True), chainer.using_config("type_check", False):
            _, _, loss = self._forward(batch)
            value = float(loss.array)
            if not math.isfinite(value):
                raise NonFiniteLoss(f"loss became {value} at step {self.steps} (Trainer.step)")
            self._update(loss)
        return value

    def infer(self) -> np.ndarray:
        """One forward pass with chainer.config.train False (batchnorm's moving statistics, dropout off) and
        enable_backprop False (no graph kept) on the next batch of the training set in order, wrapping around as
        step() does; its outputs copied to the host (N, output values), as ilkarman's feature extraction does."""
        batch = self._next_batch()
        with chainer.using_config("train", False), chainer.using_config("enable_backprop", False), \
                chainer.using_config("type_check", False):
            return cuda.to_cpu(self._logits(batch).array)

    def train_epoch(self) -> Tuple[float, Optional[float]]:
        """One pass in training mode; (mean loss, training accuracy), per example or per counted token."""
        self.epoch += 1
        n = len(self.train["y"])
        order = self.order_rng.permutation(n) if self.shuffle else np.arange(n)
        order_dev = self._send(order)
        weighted, correct, counts = [], [], []
        pending = []  # type: List[Any]  # losses not yet checked (GPU)
        check_every = GPU_CHECK_EVERY if self.gpu else 1
        starts = common.batches(n, self.batch_size)
        with chainer.using_config("train", True), chainer.using_config("type_check", False):
            for b, start in enumerate(starts):
                stop = start + self.batch_size
                batch = self._rows(self.train, order[start:stop], order_dev[start:stop])
                t, logits, loss = self._forward(batch)
                pending.append(loss.array)
                if len(pending) == check_every or b == len(starts) - 1:
                    self._check_finite(pending, b + 1 - len(pending))
                    pending = []
                self._update(loss)
                weighted.append(loss.array * len(t))
                correct.append(self._correct(logits.array, t))
                counts.append(len(t))
        total = float(self.xp.stack(weighted).sum())
        return total / sum(counts), int(self.xp.stack(correct).sum()) / sum(counts)

    def evaluate(self) -> float:
        """Test accuracy (per example or counted token) with chainer.config.train False (dropout off), no graph kept."""
        n = len(self.test["y"])
        correct, count = [], 0
        with chainer.using_config("train", False), chainer.using_config("enable_backprop", False), \
                chainer.using_config("type_check", False):
            for start in common.batches(n, self.batch_size):
                rows = slice(start, start + self.batch_size)
                batch = self._rows(self.test, rows, rows)
                t = self._targets(batch)
                correct.append(self._correct(self._logits(batch).array, t))
                count += len(t)
        return int(self.xp.stack(correct).sum()) / count

    def outputs(self, batch: Dict[str, np.ndarray]) -> np.ndarray:
        """Logits for a batch of role arrays (x, len, x_dec; others ignored), in inference mode, as NumPy.

        Sequence outputs are (N, T, classes), every decoder step included.
        """
        inputs = self._inputs(batch)
        with chainer.using_config("train", False), chainer.using_config("enable_backprop", False):
            logits = cuda.to_cpu(self._logits(inputs, every_step=True).array)
        if self.kind != "sequence":
            return logits
        steps = inputs["x_dec"] if "x_dec" in inputs else inputs["x"]
        return logits.reshape(steps.shape[0], steps.shape[1], -1)

    def synchronize(self) -> None:
        """Wait for queued CUDA work; Chainer's NumPy path is synchronous."""
        if self.gpu:
            cuda.Stream.null.synchronize()

    # -- what was used -------------------------------------------------------------------------
    def info(self) -> dict:
        """What was really used: device, threads, kernels, layout, optimizer semantics, versions."""
        blas_name, blas_threads = self._blas()
        return {
            "framework": NAME,
            "versions": self._versions(),
            "device": self.device_label,
            "device_name": self._device_name(),
            "threads": self._threads(blas_name, blas_threads),
            "kernels": self._kernels(self.gpu and cuda.cudnn_enabled, blas_name),
            "config": {
                "type_check": False,
                "use_cudnn": chainer.config.use_cudnn if self.gpu else "n/a (CPU)",
                "autotune": bool(chainer.config.autotune) if self.gpu else False,
                "use_ideep": chainer.config.use_ideep,
            },
            "data_layout": "NCHW (converted once at setup)" if self.spec_model.input_shape
            else "ids (N, T) -> list of real-length sequences",
            "input_pipeline": "whole split as device arrays, rows picked by a seeded permutation each epoch",
            "loss": _LOSS_NAMES[self.kind] + ("" if self.kind == modelplan.FEATURES
                                              else " on logits (output activation folded into the loss)"),
            "optimizer": self.opt_settings,
            "optimizer_impl": {"sgd": "optimizers.SGD / MomentumSGD", "adam": "optimizers.Adam(alpha=lr, eps)",
                               "adadelta": "optimizers.AdaDelta(rho, eps): no learning rate, i.e. Keras' lr 1.0"}
            [self.opt_settings["name"]],
            "weight_decay_rule": common.WEIGHT_DECAY_RULE + " (a 'pre' optimizer hook, not WeightDecay's L2)",
        }

    def _kernels(self, cudnn: bool, blas_name: str) -> Dict[str, str]:
        types = {layer.type for layer in self.spec_model.flat_layers}
        kernels = {}
        if "batchnorm" in types:
            kernels["batchnorm"] = ("links.BatchNormalization (decay = the plan's momentum; batch statistics while "
                                    "chainer.config.train, moving ones in evaluation)")
        if "residual" in types:
            kernels["residual"] = "activation(branch(x) + shortcut(x)); projection = 1x1 Convolution2D(nobias) + BN"
        if "concat" in types:
            kernels["concat"] = "functions.concat of the branches' outputs on channels (axis 1, NCHW)"
        if "lrn" in types:
            kernels["lrn"] = ("functions.local_response_normalization across channels (NCHW; n = 2 * depth_radius + 1, "
                              "k = bias, alpha and beta as the plan's: Chainer does not divide alpha by n)")
        if "conv2d" in types:
            kernels["conv2d"] = (
                f"links.Convolution2D (cuDNN, autotune {'on' if chainer.config.autotune else 'off'})" if cudnn
                else f"links.Convolution2D (CPU: NumPy im2col + {blas_name} GEMM; no iDeep)"
            )
            kernels["maxpool2d"] = "functions.max_pooling_2d(cover_all=False); asymmetric 'same' via F.pad(-inf)"
        if "lstm" in types:
            kernels.update(self._lstm_kernels(cudnn))
        if "gru" in types:
            kernels["gru"] = ("links.NStepGRU (cuDNN fused RNN)" if cudnn else "links.NStepGRU (CPU: functions."
                              "n_step_gru, a NumPy loop over time steps)") + ", every step including padding"
        if self.kind == "sequence":
            kernels["dense"] = "links.Linear over the concatenated real steps: one GEMM over (sum of lengths, units)"
        return kernels

    def _lstm_kernels(self, cudnn: bool) -> Dict[str, str]:
        kernels = {
            "lstm": "links.NStepLSTM (cuDNN fused RNN)" if cudnn
            else "links.NStepLSTM (CPU: functions.n_step_lstm, a NumPy loop over time steps, batch shrinking as "
                 "sequences end)",
            "lstm_lengths": "list of variable-length sequences (real lengths); final hidden state hy",
        }
        if self.spec_model.encoder is not None:
            kernels["lstm_encoder_state"] = "NStepLSTM's final (hy, cy): each source's state after its last real token"
            kernels["lstm_decoder"] = ("NStepLSTM from (hx, cx) = the encoder's (hy, cy), over each row's first "
                                       "y_len steps of x_dec")
        return kernels
