"""Theano 1.0.2, the paper era: a workload spec as a symbolic Theano graph and compiled training functions.

Written with the APIs of Theano 1.0.2 (DLBench's version) for CPython 3.6, with the fairness choices
of the current-era module (bench/frameworks/theano/current.py) in plain Theano, the way Theano's own
tutorials and Lasagne wrote models: parameters are shared variables, the model is one symbolic
expression built twice from the same parameters (a training graph with dropout, a deterministic one
without), the optimizers' updates are written by hand (SGD with momentum, Keras' Adam, Keras 2's
Adadelta, each with decoupled weight decay) and theano.function compiles the training and the
evaluation step once, at setup. The data live in shared variables in Theano's native layout (NCHW,
'bc01'); a compiled step takes only the batch's row indices (the tutorials' `givens` idiom).

- Convolutions: theano.tensor.nnet.conv2d (filter_flip=False: cross-correlation, as every other
  framework), which Theano's optimizer turns into CorrMM (im2col + BLAS gemm, C). Max pooling:
  theano.tensor.signal.pool.pool_2d. TensorFlow's 'same' padding, where it is asymmetric, is
  written out by hand (zeros before a conv, -inf before a pool), sizes from bench/modelplan.py.
- LSTMs: theano.scan over time steps, Keras' gate layout (i, f, c, o) and initialization with ONE
  bias per gate; with real lengths a (T, N) mask keeps h and c unchanged after each sequence's last
  real token, so the final state is the state after that token; each batch is cut to its longest
  sequence. An encoder-decoder's decoder scan starts from the encoder's final (h, c).
- Sequence losses fold the logits of every step into one (N*T, classes) matrix, so the output
  dense layer and the fused softmax-cross-entropy run once per batch; the loss and the accuracy
  count only each row's first y_len steps (common.token_mask).

What Theano 1.0.2 and CPython 3.6 make different from the current module: nothing in the graph
(the ops used here are the same in 1.0.2 and 1.0.5); NumPy 1.14 (shuffling with
np.random.RandomState(seed)); scan's compiled inner loop (scan_perform_ext, Cython) builds on
CPython 3.6, so there scan runs its Cython loop: info() reports which loop really ran.

Configuration (THEANO_FLAGS) must be in place before Theano is imported, so it is done at import
of this module; flags the user already set in THEANO_FLAGS win. See _configure_theano().
"""

import ctypes
import ctypes.util
import math
import os
import platform
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any, Dict, List, Optional, Tuple

from bench import modelplan, threads
from bench.frameworks import NonFiniteLoss, common
from bench.frameworks.theano import CAPABILITIES

NAME = "theano"
PACKAGE = CAPABILITIES.package  # whose version is the framework's version
PAPER = CAPABILITIES.eras["paper"]  # what this module translates and serves

# Theano's compiled cache lives beside the environment it was compiled for (see _compiledir()).
COMPILEDIR_NAME = "theano-compiledir"
SCAN_EXTENSION = "theano.scan_module.scan_perform_ext"


def _compiledir() -> Path:
    """A per-environment compile cache: <venv>/theano-compiledir, else a folder named after the
    interpreter's prefix in the user's cache (an image's system Python).

    Per environment, not per run: a cold cache costs minutes of g++ on a small machine, which would
    inflate every run's setup. Theano keys each compiled module by a hash of its C code, the
    compiler flags and the NumPy ABI, so reuse inside one environment is safe; ~/.theano, Theano's
    default, is shared by every environment and every checkout, where a stale module could hide an
    error.
    """
    prefix = Path(sys.prefix)
    if sys.prefix != getattr(sys, "base_prefix", sys.prefix) and os.access(str(prefix), os.W_OK):
        return prefix / COMPILEDIR_NAME
    return Path.home() / ".cache" / "dlrepro" / "theano-{}".format(prefix.name or "system")


def _configure_theano() -> Dict[str, str]:
    """Set THEANO_FLAGS and the BLAS thread count before Theano loads; return the flags set here.

    floatX=float32 (as every other framework trains), device=cpu (see _resolve_device),
    blas.ldflags=-lopenblas (without it Theano 1.0.2 looks for a BLAS through numpy.distutils),
    base_compiledir per environment. Flags already in THEANO_FLAGS win. $DLREPRO_THREADS becomes
    OPENBLAS_NUM_THREADS/OMP_NUM_THREADS, read when OpenBLAS loads (set again in _set_threads).
    """
    if "theano" in sys.modules:
        raise RuntimeError(
            "theano was imported before bench.frameworks.theano.paper, so its THEANO_FLAGS (floatX, blas.ldflags, "
            "base_compiledir) could not be set: import bench.frameworks.theano.paper first"
        )
    user = {}  # type: Dict[str, str]
    for item in os.environ.get("THEANO_FLAGS", "").split(","):
        if "=" in item:
            key, value = item.split("=", 1)
            user[key.strip()] = value.strip()
    defaults = {
        "floatX": "float32",
        "device": "cpu",
        "blas.ldflags": "-lopenblas",
        "base_compiledir": str(_compiledir()),
    }
    ours = {k: v for k, v in defaults.items() if k not in user}
    merged = dict(user)
    merged.update(ours)
    os.environ["THEANO_FLAGS"] = ",".join(f"{k}={v}" for k, v in merged.items())
    threads.pin(common.threads_from_env())
    return ours


FLAGS_SET_HERE = _configure_theano()

import numpy as np  # noqa: E402
import scipy  # noqa: E402
import theano  # noqa: E402
import theano.tensor as T  # noqa: E402
from theano.sandbox.rng_mrg import MRG_RandomStreams  # noqa: E402
from theano.tensor.nnet import conv2d  # noqa: E402
from theano.tensor.signal.pool import pool_2d  # noqa: E402

FLOATX = theano.config.floatX
_ACTIVATIONS = {"relu": T.nnet.relu, "tanh": T.tanh, "sigmoid": T.nnet.sigmoid}
_LOSS_NAMES = {
    "categorical": "T.nnet.crossentropy_softmax_1hot",
    "binary": "softplus(z) - y * z",
    "sequence": "T.nnet.crossentropy_softmax_1hot over the (N*T, classes) logits, sum over counted tokens "
    "/ their number",
}


def versions() -> Dict[str, str]:
    """Versions of what this module really imported (Theano's BLAS is the system OpenBLAS)."""
    return {
        "theano": theano.__version__,
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "python": platform.python_version(),
    }


# -- initializers (Keras' defaults, so every framework starts from the same distributions) --------
def _glorot_uniform(rng: np.random.RandomState, shape: Tuple[int, ...], fan_in: int, fan_out: int) -> np.ndarray:
    limit = math.sqrt(6.0 / (fan_in + fan_out))
    return rng.uniform(-limit, limit, shape).astype(FLOATX)


def _orthogonal(rng: np.random.RandomState, rows: int, cols: int) -> np.ndarray:
    """keras.initializers.Orthogonal for a (rows, cols) matrix."""
    a = rng.normal(0.0, 1.0, (max(rows, cols), min(rows, cols)))
    q, r = np.linalg.qr(a)
    q *= np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return q.astype(FLOATX)


def _shared(value: np.ndarray, name: str) -> Any:
    return theano.shared(value.astype(FLOATX), name=name, borrow=True)


def _floatx(value: float) -> np.ndarray:
    """A float32 constant: a Python float would upcast Theano's float32 graph to float64."""
    return np.asarray(value, dtype=FLOATX)


def _pad(x: Any, pads: modelplan.Pads, value: float) -> Any:
    """x (N, C, H, W) surrounded by `value`: explicit, possibly asymmetric padding."""
    n, c, h, w = x.shape
    out = T.alloc(_floatx(value), n, c, h + pads.top + pads.bottom, w + pads.left + pads.right)
    return T.set_subtensor(out[:, :, pads.top:pads.top + h, pads.left:pads.left + w], x)


class SpecNet:
    """The spec's layers as Theano parameters plus a function that builds the symbolic output.

    forward() is called once with deterministic=False (dropout on: the training graph) and once
    with deterministic=True (dropout off: the evaluation graph); both read the same parameters.
    An encoder-decoder model holds two layer lists: the encoder's (over x) and the decoder's (over x_dec).
    """

    def __init__(self, model: modelplan.ModelPlan, seed: int) -> None:
        self.model = model
        rng = np.random.RandomState(seed)  # initialization
        # Dropout masks, drawn inside the compiled graph. MRG refuses seed 0 (the runs' default)
        # and seeds >= 2**31 - 1: map every seed to 1 .. 2**31 - 2.
        self.srng = MRG_RandomStreams(seed % (2 ** 31 - 2) + 1)
        self.params = []  # type: List[Any]
        self.uses_lengths = False
        self.encoder_steps = None  # type: Optional[List[Dict[str, Any]]]
        if model.encoder is not None:
            self.encoder_steps = self._build(model.encoder, rng, "encoder.")
            if any(layer.get("use_lengths") for layer in model.layers):
                raise modelplan.SpecError("a decoder LSTM cannot use_lengths: the lengths belong to the source x")
        self.steps = self._build(model.layers, rng, "decoder." if model.encoder else "")
        output = model.layers[-1].output
        if model.kind == "sequence" and output.kind != modelplan.SEQUENCE:
            raise modelplan.SpecError(
                f"a sequence loss needs logits at every step (got {output.kind} {output.dims})")
        if model.kind != "sequence" and output.kind != modelplan.VECTOR:
            raise modelplan.SpecError(
                f"the model must end on a flat output (got {output.kind} {output.dims})")

    def _build(self, layers: List[modelplan.Layer], rng: np.random.RandomState, prefix: str) -> List[Dict[str, Any]]:
        """Parameters and forward steps of one planned layer list (sizes and padding from the plan)."""
        steps = []
        for layer in layers:
            name = f"{prefix}{layer.type}{layer.index}"
            step = {"type": layer.type, "activation": layer.get("activation")}  # type: Dict[str, Any]
            if layer.type == "conv2d":
                step.update(self._conv(layer, rng, name))
            elif layer.type == "maxpool2d":
                pads = layer.pads
                step.update(pool=layer["pool"], stride=layer["stride"], pad=(0, 0), explicit_pads=None)
                if pads.symmetric:
                    step["pad"] = (pads.top, pads.left)  # Theano's max pool never picks its padding
                else:  # TF puts the odd pixel after: pad with -inf so max never picks it
                    step["explicit_pads"] = pads
            elif layer.type == "dropout":
                step["rate"] = float(layer["rate"])
            elif layer.type == "dense":  # on a sequence: the same dense at every step
                n_in, n_out = layer.input.features, layer["units"]
                W = _shared(_glorot_uniform(rng, (n_in, n_out), n_in, n_out), name + ".W")
                b = _shared(np.zeros(n_out), name + ".b")
                self.params += [W, b]
                step.update(W=W, b=b, units=n_out)
            elif layer.type == "embedding":
                E = _shared(rng.uniform(-0.05, 0.05, (layer["input_dim"], layer["output_dim"])), name + ".W")
                self.params.append(E)
                step["W"] = E
            elif layer.type == "lstm":
                step.update(self._lstm(layer, rng, name))
            steps.append(step)
        return steps

    def _conv(self, layer: modelplan.Layer, rng: np.random.RandomState, name: str) -> Dict[str, Any]:
        h, w, c = layer.input.dims
        k, s, f = layer["kernel"], layer["stride"], layer["filters"]
        W = _shared(_glorot_uniform(rng, (f, c, k, k), c * k * k, f * k * k), name + ".W")
        b = _shared(np.zeros(f), name + ".b")
        self.params += [W, b]
        step = {"W": W, "b": b, "stride": s, "filter_shape": (f, c, k, k), "input_shape": (None, c, h, w),
                "border_mode": "valid", "explicit_pads": None}  # type: Dict[str, Any]
        pads = layer.pads
        if not pads.symmetric:  # TF puts the odd pixel after: pad by hand, then 'valid'
            step["explicit_pads"] = pads
            # The shape hint is the padded input's: conv2d infers its output shape (and its gradient's) from it.
            step["input_shape"] = (None, c, h + pads.top + pads.bottom, w + pads.left + pads.right)
        elif layer["padding"] == "same":  # symmetric: Theano pads itself ('half' for odd k, stride 1)
            step["border_mode"] = "half" if (s == 1 and k % 2 == 1) else (pads.top, pads.left)
        return step

    def _lstm(self, layer: modelplan.Layer, rng: np.random.RandomState, name: str) -> Dict[str, Any]:
        # Keras' layout and initialization: gates (i, f, c, o) side by side, Glorot-uniform input
        # kernel, orthogonal recurrent kernel, ONE bias per gate, forget bias 1.
        n_in, units = layer.input.features, layer["units"]
        W = _shared(_glorot_uniform(rng, (n_in, 4 * units), n_in, 4 * units), name + ".W")
        U = _shared(_orthogonal(rng, units, 4 * units), name + ".U")
        bias = np.zeros(4 * units)
        bias[units:2 * units] = 1.0
        b = _shared(bias, name + ".b")
        self.params += [W, U, b]
        self.uses_lengths = self.uses_lengths or bool(layer["use_lengths"])
        return {"W": W, "U": U, "b": b, "units": units, "use_lengths": bool(layer["use_lengths"]),
                "return_sequences": bool(layer["return_sequences"]),
                "takes_state": layer["initial_state"] == "encoder"}

    def forward(self, x: Any, lengths: Any, deterministic: bool, x_dec: Any = None) -> Any:
        """Symbolic logits: (N, classes), or (N, T, classes) for a sequence loss.

        x: float32 (N, C, H, W) images or int32 (N, T) token ids; lengths: x's real lengths (or
        None), for LSTMs with use_lengths. An encoder-decoder encodes x and decodes x_dec (N, T_dec)
        from the encoder's final (h, c).
        """
        if self.encoder_steps is None:
            return self._run(self.steps, x, lengths, deterministic)[0]
        _, state = self._run(self.encoder_steps, x, lengths, deterministic)
        return self._run(self.steps, x_dec, None, deterministic, state)[0]

    def _run(self, steps: List[Dict[str, Any]], x: Any, lengths: Any, deterministic: bool,
             state: Optional[Tuple[Any, Any]] = None) -> Tuple[Any, Optional[Tuple[Any, Any]]]:
        """Steps of one layer list over x; (its output, the last LSTM's final (h, c))."""
        final = None
        for step in steps:
            kind = step["type"]
            if kind == "conv2d":
                if step["explicit_pads"]:
                    x = _pad(x, step["explicit_pads"], 0.0)
                x = conv2d(x, step["W"], input_shape=step["input_shape"], filter_shape=step["filter_shape"],
                           border_mode=step["border_mode"], subsample=(step["stride"], step["stride"]),
                           filter_flip=False)  # cross-correlation, as in every other framework
                x = x + step["b"].dimshuffle("x", 0, "x", "x")
            elif kind == "maxpool2d":
                if step["explicit_pads"]:
                    x = _pad(x, step["explicit_pads"], -np.inf)
                x = pool_2d(x, ws=(step["pool"], step["pool"]), stride=(step["stride"], step["stride"]),
                            pad=step["pad"], ignore_border=True, mode="max")
            elif kind == "dropout":
                if not deterministic and step["rate"] > 0:
                    keep = 1.0 - step["rate"]
                    mask = self.srng.binomial(x.shape, p=keep, dtype=FLOATX)
                    x = x * mask / _floatx(keep)  # inverted dropout, as Keras
            elif kind == "flatten":
                x = x.flatten(2)
            elif kind == "dense":
                x = _dense(x, step)
            elif kind == "embedding":
                x = step["W"][x]  # (N, T, D)
            elif kind == "lstm":
                x, final = _lstm(x, lengths if step["use_lengths"] else None, step,
                                 state if step["takes_state"] else None)
            activation = step["activation"]
            if activation not in (None, "linear"):
                x = _ACTIVATIONS[activation](x)
        return x, final


def _dense(x: Any, step: Dict[str, Any]) -> Any:
    """x W + b; on a sequence (N, T, D) one gemm over all N*T steps, reshaped back to (N, T, units)."""
    if x.ndim == 2:
        return T.dot(x, step["W"]) + step["b"]
    n, t = x.shape[0], x.shape[1]
    flat = x.reshape((n * t, x.shape[2]))
    return (T.dot(flat, step["W"]) + step["b"]).reshape((n, t, step["units"]))


def _lstm(x: Any, lengths: Any, step: Dict[str, Any], state: Optional[Tuple[Any, Any]] = None) -> Tuple[Any, Any]:
    """theano.scan over time: (N, T, D) -> (output, final (h, c)).

    output: the last real hidden state (N, units), or every state (N, T, units) with
    return_sequences. The input projection of all steps is one matrix product before the loop;
    the loop holds only the recurrent product. With lengths, a (T, N) mask keeps h and c unchanged
    after a sequence's last real token. state: the initial (h, c) (an encoder's); zeros without.
    """
    units, U = step["units"], step["U"]
    xs = x.dimshuffle(1, 0, 2)  # time-major (T, N, D): scan iterates over the first axis
    proj = T.dot(xs, step["W"]) + step["b"]  # (T, N, 4 units)
    n_steps, batch = xs.shape[0], xs.shape[1]
    if state is None:
        zeros = T.alloc(_floatx(0.0), batch, units)
        state = (zeros, zeros)

    def cell(p_t, h_prev, c_prev, U):  # noqa: N803 (scan passes the non-sequence by position)
        z = p_t + T.dot(h_prev, U)
        i = T.nnet.sigmoid(z[:, :units])
        f = T.nnet.sigmoid(z[:, units:2 * units])
        g = T.tanh(z[:, 2 * units:3 * units])
        o = T.nnet.sigmoid(z[:, 3 * units:])
        c = f * c_prev + i * g
        return o * T.tanh(c), c

    def masked_cell(p_t, m_t, h_prev, c_prev, U):  # noqa: N803
        h, c = cell(p_t, h_prev, c_prev, U)
        m = m_t.dimshuffle(0, "x")
        return m * h + (1.0 - m) * h_prev, m * c + (1.0 - m) * c_prev

    if lengths is None:  # every step is real (no padding): no mask to apply
        (hs, cs), _ = theano.scan(cell, sequences=[proj], outputs_info=list(state),
                                  non_sequences=[U], strict=True, name="lstm")
        out = hs.dimshuffle(1, 0, 2) if step["return_sequences"] else hs[-1]
        return out, (hs[-1], cs[-1])
    mask = T.cast(T.lt(T.arange(n_steps).dimshuffle(0, "x"), lengths.dimshuffle("x", 0)), FLOATX)
    (hs, cs), _ = theano.scan(masked_cell, sequences=[proj, mask], outputs_info=list(state),
                              non_sequences=[U], strict=True, name="lstm")
    if step["return_sequences"]:
        out = (hs * mask.dimshuffle(0, 1, "x")).dimshuffle(1, 0, 2)  # zeros after each end
    else:
        out = hs[-1]
    return out, (hs[-1], cs[-1])


def _sequence_loss(logits: Any, y: Any, y_len: Any) -> Tuple[Any, Any]:
    """Per-token cross-entropy summed over counted tokens / their number; and how many are right.

    The (N, T, classes) logits are one (N*T, classes) matrix, so the fused softmax-cross-entropy
    op runs once per batch. Counted: each row's first y_len steps (all steps without y_len).
    """
    n, steps = y.shape
    flat = logits.reshape((n * steps, logits.shape[2]))
    targets = y.flatten()
    nll = T.nnet.crossentropy_softmax_1hot(flat, targets)[0]
    hits = T.eq(T.argmax(flat, axis=1), targets)
    if y_len is None:
        return nll.mean(), hits.sum()
    counted = T.lt(T.arange(steps).dimshuffle("x", 0), y_len.dimshuffle(0, "x")).flatten()
    weights = T.cast(counted, FLOATX)
    return (nll * weights).sum() / weights.sum(), (hits * counted).sum()


# -- optimizers: Keras' formulas as shared-variable updates, decoupled weight decay first ---------
def _slot(p: Any, what: str) -> Any:
    """A zero-initialized optimizer state shaped like parameter p."""
    return theano.shared(np.zeros(p.get_value(borrow=True).shape, dtype=FLOATX), name=f"{p.name}.{what}")


def _sgd_updates(params: List[Any], grads: List[Any], opt: dict, decay: np.ndarray) -> List[Tuple[Any, Any]]:
    """SGD, with momentum as Keras: v = momentum v - lr g; w = w * decay + v."""
    lr, momentum = _floatx(opt["lr"]), _floatx(opt["momentum"])
    updates = []  # type: List[Tuple[Any, Any]]
    for p, g in zip(params, grads):
        if opt["momentum"]:
            v = _slot(p, "velocity")
            v_new = momentum * v - lr * g
            updates += [(v, v_new), (p, p * decay + v_new)]
        else:
            updates.append((p, p * decay - lr * g))
    return updates


def _adam_updates(params: List[Any], grads: List[Any], opt: dict, decay: np.ndarray) -> List[Tuple[Any, Any]]:
    """Keras' Adam: alpha = lr * sqrt(1 - beta2^t) / (1 - beta1^t); w -= alpha * m / (sqrt(v) + eps)."""
    lr, b1, b2, eps = (_floatx(opt[k]) for k in ("lr", "beta1", "beta2", "epsilon"))
    one = _floatx(1.0)
    t = theano.shared(_floatx(0.0), name="adam.t")
    t_new = t + one
    alpha = lr * T.sqrt(one - b2 ** t_new) / (one - b1 ** t_new)
    updates = [(t, t_new)]  # type: List[Tuple[Any, Any]]
    for p, g in zip(params, grads):
        m, v = _slot(p, "m"), _slot(p, "v")
        m_new = b1 * m + (one - b1) * g
        v_new = b2 * v + (one - b2) * T.sqr(g)
        updates += [(m, m_new), (v, v_new), (p, p * decay - alpha * m_new / (T.sqrt(v_new) + eps))]
    return updates


def _adadelta_updates(params: List[Any], grads: List[Any], opt: dict, decay: np.ndarray) -> List[Tuple[Any, Any]]:
    """Keras 2's Adadelta: a = rho a + (1 - rho) g^2; step = g sqrt(d + eps) / sqrt(a + eps);
    d = rho d + (1 - rho) step^2; w -= lr step."""
    lr, rho, eps = (_floatx(opt[k]) for k in ("lr", "rho", "epsilon"))
    one = _floatx(1.0)
    updates = []  # type: List[Tuple[Any, Any]]
    for p, g in zip(params, grads):
        a, d = _slot(p, "accumulator"), _slot(p, "delta_accumulator")
        a_new = rho * a + (one - rho) * T.sqr(g)
        step = g * T.sqrt(d + eps) / T.sqrt(a_new + eps)
        d_new = rho * d + (one - rho) * T.sqr(step)
        updates += [(a, a_new), (d, d_new), (p, p * decay - lr * step)]
    return updates


_OPTIMIZERS = {"sgd": _sgd_updates, "adam": _adam_updates, "adadelta": _adadelta_updates}


# -- runtime: device, toolchain, threads ---------------------------------------------------------
def _resolve_device(device: str) -> str:
    """'cpu' (checked against THEANO_FLAGS), or a clear error: this environment has no GPU backend."""
    if device == "cpu":
        if theano.config.device != "cpu":
            raise RuntimeError(
                f"device 'cpu' requested but THEANO_FLAGS sets device={theano.config.device} (Theano picks its "
                "device at import); unset it")
        return "cpu"
    if device == "gpu":
        raise RuntimeError(
            "device 'gpu' requested but this Theano environment is CPU only: Theano's GPU backend "
            "(theano.gpuarray, device=cuda) needs pygpu/libgpuarray, which no PyPI release provides "
            f"(Theano {theano.__version__}, Python {platform.python_version()})")
    raise ValueError(f"unknown device {device!r}; expected 'cpu' or 'gpu'")


def _check_toolchain() -> None:
    """Fail clearly where Theano would otherwise fall back to slow Python code or a link error."""
    if not theano.config.cxx:
        raise RuntimeError(
            "Theano found no C++ compiler (g++): without it every op runs as slow Python code. "
            "Install g++ (Debian: apt-get install g++) and the Python headers")
    if "openblas" in theano.config.blas.ldflags and not ctypes.util.find_library("openblas"):
        raise RuntimeError(
            f"THEANO_FLAGS blas.ldflags={theano.config.blas.ldflags} but no OpenBLAS library is installed "
            "(Debian: apt-get install libopenblas-dev)")


def _openblas() -> Any:
    """The OpenBLAS that Theano's compiled modules link against (-lopenblas), or None."""
    name = ctypes.util.find_library("openblas")
    if not name:
        return None
    try:
        return ctypes.CDLL(name)
    except OSError:
        return None


def set_threads() -> Dict[str, Any]:
    """Apply $DLREPRO_THREADS to OpenBLAS (the threads of Theano's gemm, conv and dense); report them."""
    n = common.threads_from_env()
    lib = _openblas()
    blas_threads = None
    if lib is not None:
        if n is not None:
            lib.openblas_set_num_threads(int(n))
        blas_threads = int(lib.openblas_get_num_threads())
    return {
        # Theano's ops run one after another (no inter-op pool); inside one, OpenBLAS's threads.
        "intra_op": blas_threads if blas_threads is not None else n,
        "inter_op": 1,
        "openblas": blas_threads,
        "openmp": bool(theano.config.openmp),  # Theano's default: off (only a few ops use it)
    }


def prepare_runtime(device: str) -> Tuple[str, Dict[str, Any]]:
    """Check device and toolchain, set the threads: (device, threads) for info(). Keras on Theano uses it too."""
    resolved = _resolve_device(device)
    _check_toolchain()
    return resolved, set_threads()


def scan_loop() -> str:
    """Which inner loop Theano's scan ran: its compiled Cython loop, or its Python loop."""
    if isinstance(sys.modules.get(SCAN_EXTENSION), ModuleType):
        return "Cython loop (scan_perform_ext)"
    return (f"Python loop (scan_perform_ext not available on Python {platform.python_version()}; "
            "each step runs compiled C)")


def config_info() -> Dict[str, Any]:
    """The Theano configuration in force, for info()."""
    return {
        "floatX": theano.config.floatX,
        "linker": theano.config.linker,
        "optimizer": theano.config.optimizer,
        "blas.ldflags": theano.config.blas.ldflags,
        "compiledir": theano.config.compiledir,
        "flags_set_by_dlrepro": FLAGS_SET_HERE,
    }


def graph_ops(fn: Any) -> List[str]:
    """Names of the op types in a compiled theano.function's graph."""
    return sorted({type(node.op).__name__ for node in fn.maker.fgraph.toposort()})


def blas_name() -> str:
    """The BLAS Theano's compiled modules link against, in words."""
    ldflags = theano.config.blas.ldflags
    return "OpenBLAS" if "openblas" in ldflags else (ldflags or "NumPy C-API BLAS")


class InferenceModel:
    """The trained network as a plain function of NumPy inputs, in inference mode (dropout off).

    Called like a Keras model, `model(x, training=False)`; outputs(batch) takes a dict of role arrays
    (an encoder-decoder's x, len, x_dec). The whole sequence is fed, padding included: the mask alone
    must keep the state. Compiled on first use (training and evaluation run their own compiled steps).
    """

    def __init__(self, trainer: "TheanoTrainer") -> None:
        self.trainer = trainer
        self.fn = None  # type: Any

    def __call__(self, x: np.ndarray, training: bool = False, lengths: Optional[np.ndarray] = None) -> np.ndarray:
        if training:
            raise ValueError("InferenceModel only runs in inference mode")
        return self.outputs({"x": x} if lengths is None else {"x": x, "len": lengths})

    def outputs(self, batch: Dict[str, np.ndarray]) -> np.ndarray:
        """Logits for a batch of role arrays: (N, classes), or (N, T, classes) for a sequence loss."""
        inputs = self.trainer.inputs
        if self.fn is None:
            self.fn = theano.function(list(inputs.values()), self.trainer.logits_eval, name="predict")
        args = []
        for role in inputs:
            if role == "x" and np.ndim(batch["x"]) == 4:
                args.append(_images(batch["x"]))
            elif role == "len" and "len" not in batch:
                args.append((np.asarray(batch["x"]) != 0).sum(axis=1).astype(np.int32))
            else:
                args.append(np.asarray(batch[role], dtype=np.int32))
        return np.asarray(self.fn(*args))


def _images(x: np.ndarray) -> np.ndarray:
    """uint8 NHWC -> float32 NCHW ('bc01', Theano's layout) in [0, 1]."""
    out = np.ascontiguousarray(np.asarray(x).transpose(0, 3, 1, 2), dtype=FLOATX)
    out /= _floatx(255.0)  # in place: the converted split is the only copy
    return out


class TheanoTrainer:
    """The Trainer protocol (bench.frameworks.Trainer) for Theano 1.0.2."""

    def __init__(self, spec: dict, data: Any, device: str, seed: int) -> None:
        self.device, self.threads = prepare_runtime(device)
        self.rng = np.random.RandomState(seed)  # shuffling: depends on the seed alone
        self.spec_model = modelplan.plan(spec)
        modelplan.require(self.spec_model, PAPER.layer_types, f"{NAME} (paper era)", PAPER.bias_free_conv)
        self.kind = self.spec_model.kind
        self.net = SpecNet(self.spec_model, seed)
        self.params = self.net.params
        training = spec["training"]
        self.batch_size = int(training["batch_size"])
        self.shuffle = bool(training.get("shuffle", True))
        self.opt_settings = common.optimizer_settings(spec)
        self.inputs, self.labels = self._symbolic_inputs(data.train)
        self.train_data = self._to_shared(data.train, "train")
        self.test_data = self._to_shared(data.test, "test")
        self.n_train = int(data.train["y"].shape[0])
        self.n_test = int(data.test["y"].shape[0])
        # What each row adds to the means: its counted tokens (sequence labels) or 1.
        self.train_weights = self._row_weights(data.train)
        self.test_weight = int(self._row_weights(data.test).sum())
        started = time.perf_counter()
        self._compile()  # graph optimization and g++ (cached per environment): part of setup
        self.compile_seconds = round(time.perf_counter() - started, 2)
        self.model = InferenceModel(self)
        self.epoch = 0

    # -- setup ---------------------------------------------------------------------------------
    def _symbolic_inputs(self, split: dict) -> Tuple[Dict[str, Any], Dict[str, Any]]:
        """The graph's inputs by role, ({x, len?, x_dec?}, {y, y_len?}): only the roles the model reads."""
        images = self.spec_model.input_shape is not None
        inputs = {"x": T.tensor4("x", dtype=FLOATX) if images else T.matrix("x", dtype="int32")}
        if self.net.uses_lengths:
            inputs["len"] = T.vector("len", dtype="int32")
        if self.net.encoder_steps is not None:
            inputs["x_dec"] = T.matrix("x_dec", dtype="int32")
        if self.kind == "sequence":
            labels = {"y": T.matrix("y", dtype="int32")}
            if "y_len" in split:
                labels["y_len"] = T.vector("y_len", dtype="int32")
        else:
            labels = {"y": T.vector("y", dtype=FLOATX if self.kind == "binary" else "int32")}
        return inputs, labels

    def _roles(self) -> List[str]:
        return list(self.inputs) + list(self.labels)

    def _to_shared(self, split: dict, name: str) -> Dict[str, Any]:
        """The roles the graph reads, as shared variables converted once (the tutorials' load_data)."""
        out = {}  # type: Dict[str, Any]
        for role in self._roles():
            if role not in split:
                raise modelplan.SpecError(f"the model reads '{role}' but the {name} data has no such array")
            arr = np.asarray(split[role])
            if role == "x" and arr.ndim == 4:
                arr = _images(arr)
            elif role == "y" and self.kind == "binary":
                arr = arr.astype(FLOATX)
            else:
                arr = arr.astype(np.int32)
            out[role] = theano.shared(arr, name=f"{name}.{role}", borrow=True)
        if "len" in out:
            common.check_post_padded(split["x"], split["len"])  # the mask and the batch cut rely on it
        return out

    def _row_weights(self, split: dict) -> np.ndarray:
        """Per row, how many predictions count: its counted tokens (sequence labels) or 1."""
        y = np.asarray(split["y"])
        if self.kind != "sequence":
            return np.ones(len(y), dtype=np.int64)
        return common.token_mask(y, split["y_len"] if "y_len" in self.labels else None).sum(axis=1)

    def _loss_and_correct(self, logits: Any, labels: Dict[str, Any]) -> Tuple[Any, Any]:
        """(mean loss over the batch's counted predictions, how many of them are right)."""
        y = labels["y"]
        if self.kind == "categorical":
            # Softmax and cross-entropy fused, from logits (CrossentropySoftmaxArgmax1HotWithBias).
            loss = T.nnet.crossentropy_softmax_1hot(logits, y)[0].mean()
            correct = T.eq(T.argmax(logits, axis=1), y).sum()
        elif self.kind == "sequence":
            loss, correct = _sequence_loss(logits, y, labels.get("y_len"))
        else:
            z = logits.flatten()  # (N, 1) -> (N,)
            # -[y log sigmoid(z) + (1 - y) log(1 - sigmoid(z))] = softplus(z) - y z, from logits
            # (Theano's softplus is overflow-safe; T.nnet.sigmoid_binary_crossentropy's gradient
            # override is broken in Theano 1.0.x).
            loss = (T.nnet.softplus(z) - y * z).mean()
            correct = T.eq(T.gt(z, 0), y).sum()  # logit 0 = probability 0.5
        return loss, correct

    def _updates(self, loss: Any) -> List[Tuple[Any, Any]]:
        """Hand-written updates with Keras semantics, decoupled weight decay included
        (common.WEIGHT_DECAY_RULE: w -= lr * weight_decay * w, then the step from the gradient at the old w)."""
        opt = self.opt_settings
        decay = _floatx(1.0 - opt["lr"] * opt["weight_decay"])
        return _OPTIMIZERS[opt["name"]](self.params, T.grad(loss, self.params), opt, decay)

    def _batch_givens(self, split: Dict[str, Any], rows: Any) -> Dict[Any, Any]:
        """Each graph input -> the batch's rows of the split's shared variable, padding cut off.

        Post-padded sources are cut to the batch's longest sequence (the steps after it are all
        padding); a decoder's input and its labels to the longest counted target (later steps
        count nowhere, and a left-to-right LSTM never reads ahead).
        """
        batch = {role: split[role][rows] for role in self._roles()}
        if "len" in batch:
            batch["x"] = batch["x"][:, :T.max(batch["len"])]
        if "x_dec" in batch and "y_len" in batch:
            steps = T.max(batch["y_len"])
            batch["x_dec"], batch["y"] = batch["x_dec"][:, :steps], batch["y"][:, :steps]
        variables = dict(self.inputs, **self.labels)
        return {var: batch[role] for role, var in variables.items()}

    def _compile(self) -> None:
        """Build the two graphs and compile the training step and the evaluation step."""
        x, lengths, x_dec = self.inputs["x"], self.inputs.get("len"), self.inputs.get("x_dec")
        logits_train = self.net.forward(x, lengths, deterministic=False, x_dec=x_dec)
        self.logits_eval = self.net.forward(x, lengths, deterministic=True, x_dec=x_dec)
        loss, correct = self._loss_and_correct(logits_train, self.labels)
        _, correct_eval = self._loss_and_correct(self.logits_eval, self.labels)
        idx = T.vector("idx", dtype="int64")  # the batch's rows of the shuffled epoch
        self._train = theano.function([idx], [loss, correct], updates=self._updates(loss),
                                      givens=self._batch_givens(self.train_data, idx), name="train_step")
        start, stop = T.lscalar("start"), T.lscalar("stop")
        self._eval = theano.function([start, stop], correct_eval,
                                     givens=self._batch_givens(self.test_data, slice(start, stop)), name="eval_step")

    # -- protocol ------------------------------------------------------------------------------
    def param_count(self) -> int:
        """Trainable parameters (the LSTM has one bias per gate, as Keras)."""
        return int(sum(p.get_value(borrow=True).size for p in self.params))

    def train_epoch(self) -> Tuple[float, Optional[float]]:
        """One pass in training mode; (mean loss, training accuracy), both per example or per counted token."""
        self.epoch += 1
        order = self.rng.permutation(self.n_train) if self.shuffle else np.arange(self.n_train)
        total, correct, seen = 0.0, 0, 0
        for b, start in enumerate(common.batches(self.n_train, self.batch_size)):
            rows = order[start:start + self.batch_size]
            loss, right = self._train(rows)
            loss = float(loss)  # on the CPU the value is already on the host: check every step
            if not math.isfinite(loss):
                raise NonFiniteLoss(f"loss became {loss} at step {b + 1} of epoch {self.epoch}")
            weight = int(self.train_weights[rows].sum())
            total += loss * weight
            correct += int(right)
            seen += weight
        return total / seen, correct / seen

    def evaluate(self) -> float:
        """Test accuracy (per example or per counted token) from the deterministic graph (dropout off),
        in batches of the training batch size."""
        correct = 0
        for start in common.batches(self.n_test, self.batch_size):
            correct += int(self._eval(start, min(start + self.batch_size, self.n_test)))
        return correct / self.test_weight

    def outputs(self, batch: Dict[str, np.ndarray]) -> np.ndarray:
        """Logits (N, T, classes) for a batch of role arrays (x, len, x_dec), in inference mode."""
        return self.model.outputs(batch)

    def synchronize(self) -> None:
        """Nothing to wait for: a compiled Theano function returns when its CPU work is done."""

    def _kernels(self) -> Dict[str, str]:
        """Each layer type -> the op that ran it, read from the compiled training graph."""
        ops = graph_ops(self._train)
        blas = blas_name()
        kernels = {}
        types = {layer.type for layer in self.spec_model.all_layers}
        if "conv2d" in types:
            conv_ops = [o for o in ops if o.startswith(("CorrMM", "Conv", "AbstractConv"))]
            kernels["conv2d"] = f"theano.tensor.nnet.conv2d -> {', '.join(conv_ops)} (im2col + {blas} gemm, C)"
        if "maxpool2d" in types:
            pool_ops = [o for o in ops if "Pool" in o]
            kernels["maxpool2d"] = "theano.tensor.signal.pool.pool_2d -> {} (C)".format(", ".join(pool_ops))
        if "dense" in types:
            dots = [o for o in ops if o in ("Gemm", "Dot22", "Dot22Scalar", "Gemv", "Ger")]
            per_step = " at every step as one product over (N*T, units)" if self.kind == "sequence" else ""
            kernels["dense"] = "T.dot{} -> {} ({})".format(per_step, ", ".join(dots), blas)
        if "lstm" in types:
            kernels["lstm"] = (f"theano.scan over time steps ({scan_loop()}), Keras gates (i, f, c, o), "
                               "one bias per gate")
            if self.net.uses_lengths:
                kernels["lstm_lengths"] = (
                    "mask from real lengths keeps h, c after the last real token; each batch cut to its longest "
                    "sequence")
            if self.net.encoder_steps is not None:
                kernels["lstm_initial_state"] = "the decoder's scan starts from the encoder's final (h, c)"
        return kernels

    def info(self) -> dict:
        """What was really used: device, threads, kernels (read from the compiled graph), layout, ..."""
        return {
            "framework": NAME,
            "versions": versions(),
            "device": self.device,
            "device_name": common.cpu_name(),
            "threads": self.threads,
            "kernels": self._kernels(),
            "data_layout": "NCHW ('bc01', converted once at setup)" if self.spec_model.input_shape else "ids (N, T)",
            "input_pipeline": (
                "whole split in Theano shared variables; each compiled step takes the batch's row indices "
                "(seeded permutation each epoch) and gathers inside the graph (givens)"),
            "loss": _LOSS_NAMES[self.kind] + " on logits (output activation folded into the loss)",
            "optimizer": self.opt_settings,
            "weight_decay_rule": common.WEIGHT_DECAY_RULE,
            "theano_config": config_info(),
            "compile_seconds": self.compile_seconds,
        }


def make_trainer(spec: dict, data: Any, device: str, seed: int) -> TheanoTrainer:
    """Build the spec's model, compile its training and evaluation steps for `device` ('cpu')."""
    return TheanoTrainer(spec, data, device, seed)
