"""Theano: translates a workload spec into a symbolic Theano graph and compiled training functions.

Runs inside the theano environment (Theano 1.0.5, CPU). Written the way Theano's own tutorials and
Lasagne did it, in plain Theano (Lasagne 0.1 does not import with Theano 1.0.5): parameters are
shared variables, the model is one symbolic expression built twice from the same parameters (a
training graph with dropout, a deterministic one without), the updates are written by hand, and
theano.function compiles them once, at setup. The data live in shared variables in Theano's
native layout (NCHW, 'bc01'); a compiled step takes only the batch's row indices, so no batch is
fed from the host (the tutorials' `givens` idiom). The LSTM is a theano.scan over time steps with a
mask built from the real lengths, so the state after a sequence's last real token is kept.
Sequence losses (language model, encoder-decoder) fold the logits of every step into one
(N*T, classes) matrix, so the output dense layer and the fused softmax-cross-entropy run once per
batch; an encoder-decoder's decoder scan starts from the encoder's final (h, c). The optimizers
(SGD, Keras' Adam, Keras 2's Adadelta) are their formulas written as shared-variable updates.

Configuration (THEANO_FLAGS) must be in place before Theano is imported, so it is done at import
of this module; flags the user already set in THEANO_FLAGS win. See _configure_theano().
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

from bench import blas_backends, modelplan
from bench.frameworks import NonFiniteLoss, common
from bench.frameworks.theano import CAPABILITIES

NAME = "theano"
PACKAGE = CAPABILITIES.package  # whose version is the framework's version

# Theano's compiled cache lives beside the environment it was compiled for (see _compiledir()).
COMPILEDIR_NAME = "theano-compiledir"


def _compiledir() -> Path:
    """A per-environment compile cache: <venv>/theano-compiledir (fallback: the user's cache folder).

    Per environment, not per run: a cold cache costs minutes of g++ (measured on a busy 2-core
    machine: ~2.5 min for cnn-mnist, ~5 min for lstm-imdb; warm: ~1-10 s), which would inflate
    every run's setup and differ between runs. Theano keys each compiled module by a
    hash of its C code, the compiler flags and the NumPy ABI, so reuse inside one environment is
    safe; the environment's folder name carries its lock's sha256, so a changed lock (other Theano,
    NumPy or SciPy) starts from an empty cache and never loads modules built for other packages,
    and deleting the environment deletes its cache. (~/.theano, Theano's default, is shared by
    every environment and every checkout: a stale module there could hide an error.)
    """
    prefix = Path(sys.prefix)
    if sys.prefix != sys.base_prefix and os.access(prefix, os.W_OK):
        return prefix / COMPILEDIR_NAME
    return Path.home() / ".cache" / "dlrepro" / f"theano-{prefix.name or 'system'}"


def _configure_theano() -> dict[str, str]:
    """Set THEANO_FLAGS, the BLAS thread count and the scan fallback; return the flags set here.

    - floatX=float32 (as every other framework trains), device=cpu (no GPU backend: see
      _resolve_device), blas.ldflags=-lopenblas (Debian's libopenblas-dev; without it Theano's
      BLAS detection goes through numpy.distutils and fails), base_compiledir per environment.
    - Flags already in THEANO_FLAGS win, so a user can override any of them.
    - Theano's compiled scan loop (scan_perform_ext, Cython) does not build on Python 3.11
      (longintrepr.h was moved); a None in sys.modules makes its import fail cleanly, and scan
      falls back to its Python loop over steps (each step still runs compiled C thunks).
    - DLREPRO_THREADS becomes OPENBLAS_NUM_THREADS/OMP_NUM_THREADS for the OpenBLAS that Theano's
      compiled modules link against (read when that library loads; also set at run time in
      _set_threads, in case it was loaded already).
    """
    if "theano" in sys.modules:
        raise RuntimeError(
            "theano was imported before bench.frameworks.theano.current, so its THEANO_FLAGS (floatX, blas.ldflags, "
            "base_compiledir) could not be set: import bench.frameworks.theano.current first"
        )
    user: dict[str, str] = {}
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
    os.environ["THEANO_FLAGS"] = ",".join(f"{k}={v}" for k, v in {**user, **ours}.items())
    n = common.threads_from_env()
    if n is not None:
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
            os.environ[var] = str(n)
    sys.modules.setdefault("theano.scan_module.scan_perform_ext", None)  # type: ignore[arg-type]
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
RECURSION_LIMIT = 50_000  # see TheanoTrainer.__init__
_ACTIVATIONS = {"relu": T.nnet.relu, "tanh": T.tanh, "sigmoid": T.nnet.sigmoid}


def versions() -> dict[str, str]:
    """Versions of what this module really imported (Theano's BLAS is the system OpenBLAS)."""
    return {
        "theano": theano.__version__,
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "python": platform.python_version(),
    }


# -- initializers (Keras' defaults, so every framework starts from the same distributions) --------
def _glorot_uniform(rng: np.random.RandomState, shape: tuple[int, ...], fan_in: int, fan_out: int) -> np.ndarray:
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


def _shared(value: np.ndarray, name: str) -> theano.compile.SharedVariable:
    return theano.shared(value.astype(FLOATX), name=name, borrow=True)


def _pad(x: T.TensorVariable, top: int, bottom: int, left: int, right: int, value: float) -> T.TensorVariable:
    """x (N, C, H, W) surrounded by `value`: explicit, possibly asymmetric padding."""
    n, c, h, w = x.shape
    out = T.alloc(np.asarray(value, dtype=FLOATX), n, c, h + top + bottom, w + left + right)
    return T.set_subtensor(out[:, :, top : top + h, left : left + w], x)


class SpecNet:
    """The spec's layers as Theano parameters plus a function that builds the symbolic output.

    forward() is called once with deterministic=False (dropout on: the training graph) and once
    with deterministic=True (dropout off: the evaluation graph); both read the same parameters.
    An encoder-decoder model holds two plans: the encoder's (over x) and the decoder's (over x_dec).
    """

    def __init__(self, model: modelplan.ModelPlan, seed: int):
        self.model = model
        rng = np.random.RandomState(seed)  # initialization
        # Dropout masks, drawn inside the compiled graph. MRG refuses seed 0 (the runs' default)
        # and seeds >= 2**31 - 1: map every seed to 1 .. 2**31 - 2.
        self.srng = MRG_RandomStreams(seed % (2**31 - 2) + 1)
        self.params: list[theano.compile.SharedVariable] = []
        # Batchnorm's moving statistics: updated by the training graph (forward with deterministic=False).
        self.state_updates: list[tuple[Any, Any]] = []
        self.uses_lengths = False
        # Per layer, what forward() needs (an encoder's only for encoder-decoders).
        self.encoder_steps: list[dict[str, Any]] | None = None
        if model.encoder is not None:
            self.encoder_steps = self._build(model.encoder, rng, "encoder.")
            if any(layer.get("use_lengths") for layer in model.layers):
                raise modelplan.SpecError("a decoder LSTM cannot use_lengths: the lengths belong to the source x")
        self.steps = self._build(model.layers, rng, "decoder." if model.encoder else "")
        output = model.layers[-1].output
        if model.kind == "sequence" and output.kind != modelplan.SEQUENCE:
            raise modelplan.SpecError(f"a sequence loss needs logits at every step (got {output.kind} {output.dims})")
        if model.kind != "sequence" and output.kind != modelplan.VECTOR:
            raise modelplan.SpecError(f"the model must end on a flat output (got {output.kind} {output.dims})")

    def _build(self, layers: list[modelplan.Layer], rng: np.random.RandomState, prefix: str) -> list[dict[str, Any]]:
        """Parameters and forward steps of one planned layer list (sizes and padding from the plan)."""
        steps = []
        for layer in layers:
            i, kind = layer.index, layer.type
            step: dict[str, Any] = {"type": kind, "activation": layer.get("activation")}
            if kind == "conv2d":
                h, w, c = layer.input.dims
                k, s, f = layer["kernel"], layer["stride"], layer["filters"]
                W = _shared(_glorot_uniform(rng, (f, c, k, k), c * k * k, f * k * k), f"{prefix}conv{i}.W")
                b = _shared(np.zeros(f), f"{prefix}conv{i}.b") if layer["bias"] else None
                self.params += [W] + ([b] if layer["bias"] else [])
                step.update(W=W, b=b, stride=s, filter_shape=(f, c, k, k), input_shape=(None, c, h, w),
                            border_mode="valid", explicit_pads=None)
                pads = layer.pads
                if not pads.symmetric:  # TF puts the odd pixel after: pad by hand, then 'valid'
                    step["explicit_pads"] = pads
                    # The shape hint is the padded input's: conv2d infers its output shape from it.
                    step["input_shape"] = (None, c, h + pads.top + pads.bottom, w + pads.left + pads.right)
                elif layer["padding"] == "same":  # symmetric: Theano pads itself ('half' for odd k, stride 1)
                    step["border_mode"] = "half" if (s == 1 and k % 2 == 1) else (pads.top, pads.left)
            elif kind == "maxpool2d":
                pads = layer.pads
                step.update(pool=layer["pool"], stride=layer["stride"], pad=(0, 0), explicit_pads=None)
                if pads.symmetric:
                    step["pad"] = (pads.top, pads.left)  # Theano's max pool never picks its padding
                else:  # TF puts the odd pixel after: pad with -inf so max never picks it
                    step["explicit_pads"] = pads
            elif kind == "avgpool2d":  # padded: zeros, a full-window average, rescaled to the real values' mean
                pads = layer.pads
                step.update(pool=layer["pool"], stride=layer["stride"], explicit_pads=pads if any(pads) else None)
                if any(pads):
                    rows, cols = modelplan.pool_counts(layer)
                    window = layer["pool"] * layer["pool"]
                    step["factor"] = np.array([[window / (r * c) for c in cols] for r in rows], dtype=FLOATX)
            elif kind == "batchnorm":
                n = layer.input.features
                gamma, beta = _shared(np.ones(n), f"{prefix}bn{i}.gamma"), _shared(np.zeros(n), f"{prefix}bn{i}.beta")
                self.params += [gamma, beta]  # trainable; the moving mean and variance are not
                step.update(gamma=gamma, beta=beta, mean=_shared(np.zeros(n), f"{prefix}bn{i}.moving_mean"),
                            var=_shared(np.ones(n), f"{prefix}bn{i}.moving_var"), momentum=float(layer["momentum"]),
                            epsilon=float(layer["epsilon"]), image=layer.input.kind == modelplan.IMAGE)
            elif kind == "residual":
                step.update(branch=self._build(layer.branch, rng, f"{prefix}block{i}."),
                            shortcut=self._build(layer.shortcut, rng, f"{prefix}block{i}.shortcut."))
            elif kind == "concat":
                step["branches"] = [self._build(branch, rng, f"{prefix}concat{i}.branch{b}.")
                                    for b, branch in enumerate(layer.branches)]
            elif kind == "lrn":
                step.update({key: layer[key] for key in ("depth_radius", "bias", "alpha", "beta")})
            elif kind == "dropout":
                step["rate"] = float(layer["rate"])
            elif kind == "dense":  # on a sequence: the same dense at every step
                n_in, n_out = layer.input.features, layer["units"]
                W = _shared(_glorot_uniform(rng, (n_in, n_out), n_in, n_out), f"{prefix}dense{i}.W")
                b = _shared(np.zeros(n_out), f"{prefix}dense{i}.b")
                self.params += [W, b]
                step.update(W=W, b=b, units=n_out)
            elif kind == "embedding":
                E = _shared(rng.uniform(-0.05, 0.05, (layer["input_dim"], layer["output_dim"])),
                            f"{prefix}embedding{i}.W")
                self.params.append(E)
                step["W"] = E
            elif kind == "lstm":
                n_in, units = layer.input.features, layer["units"]
                # Keras' layout and initialization: gates (i, f, c, o) side by side, Glorot-uniform
                # input kernel, orthogonal recurrent kernel, ONE bias per gate, forget bias 1.
                W = _shared(_glorot_uniform(rng, (n_in, 4 * units), n_in, 4 * units), f"{prefix}lstm{i}.W")
                U = _shared(_orthogonal(rng, units, 4 * units), f"{prefix}lstm{i}.U")
                bias = np.zeros(4 * units)
                bias[units : 2 * units] = 1.0
                b = _shared(bias, f"{prefix}lstm{i}.b")
                self.params += [W, U, b]
                step.update(W=W, U=U, b=b, units=units, use_lengths=bool(layer["use_lengths"]),
                            return_sequences=bool(layer["return_sequences"]),
                            takes_state=layer["initial_state"] == "encoder")
                self.uses_lengths = self.uses_lengths or bool(layer["use_lengths"])
            elif kind == "gru":
                n_in, units = layer.input.features, layer["units"]
                # Keras' GRU(reset_after=True): gates (z, r, h) side by side, Glorot-uniform input kernel,
                # orthogonal recurrent kernel, an input bias and a recurrent bias per gate (zeros).
                W = _shared(_glorot_uniform(rng, (n_in, 3 * units), n_in, 3 * units), f"{prefix}gru{i}.W")
                U = _shared(_orthogonal(rng, units, 3 * units), f"{prefix}gru{i}.U")
                b = _shared(np.zeros(3 * units), f"{prefix}gru{i}.b")
                b_rec = _shared(np.zeros(3 * units), f"{prefix}gru{i}.b_rec")
                self.params += [W, U, b, b_rec]
                step.update(W=W, U=U, b=b, b_rec=b_rec, units=units,
                            return_sequences=bool(layer["return_sequences"]))
            steps.append(step)
        return steps

    def forward(self, x: T.TensorVariable, lengths: T.TensorVariable | None, deterministic: bool,
                x_dec: T.TensorVariable | None = None) -> T.TensorVariable:
        """Symbolic logits: (N, classes), or (N, T, classes) for a sequence loss.

        x: float32 (N, C, H, W) images or int32 (N, T) token ids; lengths: x's real lengths, for
        LSTMs with use_lengths. An encoder-decoder encodes x and decodes x_dec (N, T_dec) from the
        encoder's final (h, c).
        """
        if not deterministic:
            self.state_updates = []  # this training graph's batchnorm updates (see _batchnorm)
        if self.encoder_steps is None:
            return self._run(self.steps, x, lengths, deterministic)[0]
        _, state = self._run(self.encoder_steps, x, lengths, deterministic)
        return self._run(self.steps, x_dec, None, deterministic, state)[0]

    def _run(self, steps: list[dict], x: T.TensorVariable, lengths: T.TensorVariable | None, deterministic: bool,
             state: tuple[Any, Any] | None = None) -> tuple[T.TensorVariable, tuple[Any, Any] | None]:
        """Steps of one layer list over x; (its output, the last LSTM's final (h, c)). state: for the LSTM taking it."""
        final = None
        for step in steps:
            kind = step["type"]
            if kind == "conv2d":
                if step["explicit_pads"]:
                    x = _pad(x, *step["explicit_pads"], value=0.0)
                x = conv2d(
                    x, step["W"], input_shape=step["input_shape"], filter_shape=step["filter_shape"],
                    border_mode=step["border_mode"], subsample=(step["stride"], step["stride"]),
                    filter_flip=False,  # cross-correlation, as in every other framework
                )
                if step["b"] is not None:
                    x = x + step["b"].dimshuffle("x", 0, "x", "x")
            elif kind == "avgpool2d":
                ws, stride = (step["pool"], step["pool"]), (step["stride"], step["stride"])
                if step["explicit_pads"]:
                    x = pool_2d(_pad(x, *step["explicit_pads"], value=0.0), ws=ws, stride=stride, ignore_border=True,
                                mode="average_inc_pad") * step["factor"]
                else:
                    x = pool_2d(x, ws=ws, stride=stride, ignore_border=True, mode="average_inc_pad")
            elif kind == "lrn":
                x = _lrn(x, step)
            elif kind == "global_avgpool":
                x = x.mean(axis=(2, 3))
            elif kind == "batchnorm":
                x = self._batchnorm(x, step, deterministic)
            elif kind == "residual":
                x = (self._run(step["branch"], x, lengths, deterministic)[0]
                     + self._run(step["shortcut"], x, lengths, deterministic)[0])
            elif kind == "concat":  # NCHW: the branches' outputs stacked on axis 1
                x = T.concatenate([self._run(branch, x, lengths, deterministic)[0] for branch in step["branches"]],
                                  axis=1)
            elif kind == "maxpool2d":
                if step["explicit_pads"]:
                    x = _pad(x, *step["explicit_pads"], value=-np.inf)
                x = pool_2d(x, ws=(step["pool"], step["pool"]), stride=(step["stride"], step["stride"]),
                            pad=step["pad"], ignore_border=True, mode="max")
            elif kind == "dropout":
                if not deterministic and step["rate"] > 0:
                    keep = 1.0 - step["rate"]
                    mask = self.srng.binomial(x.shape, p=keep, dtype=FLOATX)
                    x = x * mask / np.asarray(keep, dtype=FLOATX)  # inverted dropout, as Keras
            elif kind == "flatten":
                x = x.flatten(2)
            elif kind == "dense":
                x = _dense(x, step)
            elif kind == "embedding":
                x = step["W"][x]  # (N, T, D)
            elif kind == "lstm":
                x, final = _lstm(x, lengths if step["use_lengths"] else None, step,
                                 state if step["takes_state"] else None)
            elif kind == "gru":
                x = _gru(x, step)
            activation = step["activation"]
            if activation not in (None, "linear"):
                x = _ACTIVATIONS[activation](x)
        return x, final


    def _batchnorm(self, x: T.TensorVariable, step: dict, deterministic: bool) -> T.TensorVariable:
        """Per channel (image) or feature (vector): batch statistics in training, whose (biased) mean and
        variance move the moving ones as Keras does (m * moving + (1 - m) * batch); moving ones otherwise."""
        axes = (0, 2, 3) if step["image"] else (0,)
        if deterministic:
            mean, var = step["mean"], step["var"]
        else:
            mean, var = T.cast(x.mean(axis=axes), FLOATX), T.cast(x.var(axis=axes), FLOATX)
            m = _floatx(step["momentum"])
            rest = _floatx(1.0 - step["momentum"])
            self.state_updates += [(step["mean"], m * step["mean"] + rest * mean),
                                   (step["var"], m * step["var"] + rest * var)]
        shape = ("x", 0, "x", "x") if step["image"] else ("x", 0)
        scale = step["gamma"] / T.sqrt(var + _floatx(step["epsilon"]))
        return (x - mean.dimshuffle(*shape)) * scale.dimshuffle(*shape) + step["beta"].dimshuffle(*shape)


def _lrn(x: T.TensorVariable, step: dict) -> T.TensorVariable:
    """Local response normalization across the channels of x (N, C, H, W), in the plan's (TensorFlow's) terms:
    Theano has no such op. The squares get depth_radius zero channels on each side; the window's sum is the
    2 * depth_radius + 1 channel-shifted slices of that, added."""
    r = step["depth_radius"]
    n, channels, h, w = x.shape
    squares = T.set_subtensor(T.zeros((n, channels + 2 * r, h, w), dtype=x.dtype)[:, r : r + channels], T.sqr(x))
    total = squares[:, :channels]
    for offset in range(1, 2 * r + 1):
        total = total + squares[:, offset : offset + channels]
    base = _floatx(step["bias"]) + _floatx(step["alpha"]) * total
    return x / base ** _floatx(step["beta"])


def _dense(x: T.TensorVariable, step: dict) -> T.TensorVariable:
    """x W + b; on a sequence (N, T, D) one gemm over all N*T steps, reshaped back to (N, T, units)."""
    if x.ndim == 2:
        return T.dot(x, step["W"]) + step["b"]
    n, t = x.shape[0], x.shape[1]
    flat = x.reshape((n * t, x.shape[2]))
    return (T.dot(flat, step["W"]) + step["b"]).reshape((n, t, step["units"]))


def _lstm(x: T.TensorVariable, lengths: T.TensorVariable | None, step: dict,
          state: tuple[Any, Any] | None = None) -> tuple[T.TensorVariable, tuple[Any, Any]]:
    """theano.scan over time: (N, T, D) -> (output, final (h, c)).

    output: the last real hidden state (N, units), or every state (N, T, units) with
    return_sequences. The input projection of all steps is one matrix product before the loop;
    the loop holds only the recurrent product. With lengths, a (T, N) mask keeps h and c unchanged
    after a sequence's last real token, so the final state is the state after that token.
    state: the initial (h, c) (an encoder's); zeros without.
    """
    units, U = step["units"], step["U"]
    xs = x.dimshuffle(1, 0, 2)  # time-major (T, N, D): scan iterates over the first axis
    proj = T.dot(xs, step["W"]) + step["b"]  # (T, N, 4 units)
    n_steps, batch = xs.shape[0], xs.shape[1]
    if state is None:
        zeros = T.alloc(np.asarray(0.0, dtype=FLOATX), batch, units)
        state = (zeros, zeros)

    def cell(p_t, h_prev, c_prev, U):
        z = p_t + T.dot(h_prev, U)
        i = T.nnet.sigmoid(z[:, :units])
        f = T.nnet.sigmoid(z[:, units : 2 * units])
        g = T.tanh(z[:, 2 * units : 3 * units])
        o = T.nnet.sigmoid(z[:, 3 * units :])
        c = f * c_prev + i * g
        return o * T.tanh(c), c

    def masked_cell(p_t, m_t, h_prev, c_prev, U):
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


def _gru(x: T.TensorVariable, step: dict) -> T.TensorVariable:
    """theano.scan over every step of (N, T, D), padding included: the last hidden state (N, units), or every
    state (N, T, units) with return_sequences.

    cuDNN's GRU ("reset_after", Keras 3's default): z = sig(x Wz + bz + h Uz + bz'), r likewise,
    h~ = tanh(x Wh + bh + r * (h Uh + bh')), h = z * h_prev + (1 - z) * h~. The input projection of all
    steps is one matrix product before the loop; the loop holds only the recurrent product.
    """
    units, U = step["units"], step["U"]
    xs = x.dimshuffle(1, 0, 2)  # time-major (T, N, D): scan iterates over the first axis
    proj = T.dot(xs, step["W"]) + step["b"]  # (T, N, 3 units)

    def cell(p_t, h_prev, U, b_rec):
        rec = T.dot(h_prev, U) + b_rec
        z = T.nnet.sigmoid(p_t[:, :units] + rec[:, :units])
        r = T.nnet.sigmoid(p_t[:, units : 2 * units] + rec[:, units : 2 * units])
        candidate = T.tanh(p_t[:, 2 * units :] + r * rec[:, 2 * units :])
        return z * h_prev + (1.0 - z) * candidate

    zeros = T.alloc(np.asarray(0.0, dtype=FLOATX), xs.shape[1], units)
    hs, _ = theano.scan(cell, sequences=[proj], outputs_info=[zeros], non_sequences=[U, step["b_rec"]],
                        strict=True, name="gru")
    return hs.dimshuffle(1, 0, 2) if step["return_sequences"] else hs[-1]


def _resolve_device(device: str) -> str:
    if device == "cpu":
        if theano.config.device != "cpu":
            raise RuntimeError(
                f"device 'cpu' requested but THEANO_FLAGS sets device={theano.config.device} "
                "(Theano picks its device at import); unset it"
            )
        return "cpu"
    if device == "gpu":
        raise RuntimeError(
            "device 'gpu' requested but this Theano environment is CPU only: Theano's GPU backend "
            "(theano.gpuarray, device=cuda) needs pygpu/libgpuarray, which no PyPI release provides "
            f"(Theano {theano.__version__}, Python {platform.python_version()})"
        )
    raise ValueError(f"unknown device {device!r}; expected 'cpu' or 'gpu'")


def _check_toolchain() -> None:
    """Fail clearly where Theano would otherwise fall back to slow Python code or a link error."""
    if not theano.config.cxx:
        raise RuntimeError(
            "Theano found no C++ compiler (g++): without it every op runs as slow Python code. "
            "Install g++ (Debian: apt-get install g++) and the Python headers"
        )
    if "openblas" in theano.config.blas.ldflags:  # the kit's default too, which no blas sweep point checked
        blas_backends.require_library("theano", "openblas")


def _openblas() -> Any:
    """The OpenBLAS that Theano's compiled modules link against (-lopenblas), or None."""
    name = ctypes.util.find_library("openblas")
    if not name:
        return None
    try:
        return ctypes.CDLL(name)
    except OSError:
        return None


def _set_threads() -> dict[str, Any]:
    """Apply DLREPRO_THREADS to OpenBLAS (the threads of Theano's gemm, conv and dense) when blas.ldflags links
    OpenBLAS; report them. Another BLAS is left alone: opening OpenBLAS here would load it into a run that
    computes with another (bench/blas_backends.py), MKL reads MKL_NUM_THREADS (bench/threads.py) when it loads,
    and the reference BLAS runs on one thread."""
    n = common.threads_from_env()
    ldflags = theano.config.blas.ldflags
    lib = _openblas() if "openblas" in ldflags else None
    blas_threads = None
    if lib is not None:
        if n is not None:
            lib.openblas_set_num_threads(int(n))
        blas_threads = int(lib.openblas_get_num_threads())
    elif f"-L{blas_backends.REFERENCE_BLAS_DIR} " in ldflags:  # Debian's reference BLAS: single-threaded
        blas_threads = 1
    return {
        # Theano's ops run one after another (no inter-op pool); inside one, the BLAS's threads.
        "intra_op": blas_threads if blas_threads is not None else n,
        "inter_op": 1,
        "openblas": blas_threads if lib is not None else None,  # None: blas.ldflags links another BLAS
        "openmp": bool(theano.config.openmp),  # Theano's default: off (only a few ops use it)
    }


class InferenceModel:
    """The trained network as a plain function of NumPy inputs, in inference mode (dropout off).

    Called like a Keras model, `model(x, training=False)`, so the tests' probe (its generic
    path) can compare outputs; outputs(batch) takes a dict of role arrays (an encoder-decoder's x, len,
    x_dec). x: uint8 NHWC images or post-padded int token ids; lengths default to the count of
    non-zero ids (the contract common.check_post_padded enforces on the data). The whole sequence
    is fed, padding included: the mask alone must keep the state. Compiled on first use (only the
    probe calls it; training and evaluation run their own compiled steps).
    """

    def __init__(self, trainer: TheanoTrainer):
        self.trainer = trainer
        self.fn = None

    def __call__(self, x: np.ndarray, training: bool = False, lengths: np.ndarray | None = None) -> np.ndarray:
        if training:
            raise ValueError("InferenceModel only runs in inference mode")
        return self.outputs({"x": x} if lengths is None else {"x": x, "len": lengths})

    def outputs(self, batch: dict[str, np.ndarray]) -> np.ndarray:
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
    out /= np.asarray(255.0, dtype=FLOATX)  # in place: the converted split is the only copy
    return out


def _slot(p: theano.compile.SharedVariable, what: str) -> theano.compile.SharedVariable:
    """A zero-initialized optimizer state shaped like parameter p."""
    return theano.shared(np.zeros(p.get_value(borrow=True).shape, dtype=FLOATX), name=f"{p.name}.{what}")


def _floatx(value: float) -> np.ndarray:
    """A float32 constant: a Python float would upcast Theano's float32 graph to float64."""
    return np.asarray(value, dtype=FLOATX)


def _sgd_updates(params: list, grads: list, opt: dict, decay: np.ndarray) -> list[tuple[Any, Any]]:
    """SGD, with momentum as Keras: v = momentum v - lr g; w += v."""
    lr, momentum = _floatx(opt["lr"]), _floatx(opt["momentum"])
    updates: list[tuple[Any, Any]] = []
    for p, g in zip(params, grads):
        if opt["momentum"]:
            v = _slot(p, "velocity")
            v_new = momentum * v - lr * g
            updates += [(v, v_new), (p, p * decay + v_new)]
        else:
            updates.append((p, p * decay - lr * g))
    return updates


def _adam_updates(params: list, grads: list, opt: dict, decay: np.ndarray) -> list[tuple[Any, Any]]:
    """Keras' Adam: alpha = lr * sqrt(1 - beta2^t) / (1 - beta1^t); w -= alpha * m / (sqrt(v) + eps)."""
    lr, b1, b2, eps = (_floatx(opt[k]) for k in ("lr", "beta1", "beta2", "epsilon"))
    one = _floatx(1.0)
    t = theano.shared(_floatx(0.0), name="adam.t")
    t_new = t + one
    alpha = lr * T.sqrt(one - b2**t_new) / (one - b1**t_new)
    updates: list[tuple[Any, Any]] = [(t, t_new)]
    for p, g in zip(params, grads):
        m, v = _slot(p, "m"), _slot(p, "v")
        m_new = b1 * m + (one - b1) * g
        v_new = b2 * v + (one - b2) * T.sqr(g)
        updates += [(m, m_new), (v, v_new), (p, p * decay - alpha * m_new / (T.sqrt(v_new) + eps))]
    return updates


def _adadelta_updates(params: list, grads: list, opt: dict, decay: np.ndarray) -> list[tuple[Any, Any]]:
    """Keras 2's Adadelta: a = rho a + (1 - rho) g^2; step = g sqrt(d + eps) / sqrt(a + eps);
    d = rho d + (1 - rho) step^2; w -= lr step."""
    lr, rho, eps = (_floatx(opt[k]) for k in ("lr", "rho", "epsilon"))
    one = _floatx(1.0)
    updates: list[tuple[Any, Any]] = []
    for p, g in zip(params, grads):
        a, d = _slot(p, "accumulator"), _slot(p, "delta_accumulator")
        a_new = rho * a + (one - rho) * T.sqr(g)
        step = g * T.sqrt(d + eps) / T.sqrt(a_new + eps)
        d_new = rho * d + (one - rho) * T.sqr(step)
        updates += [(a, a_new), (d, d_new), (p, p * decay - lr * step)]
    return updates


_OPTIMIZERS = {"sgd": _sgd_updates, "adam": _adam_updates, "adadelta": _adadelta_updates}
_LOSS_NAMES = {
    "categorical": "T.nnet.crossentropy_softmax_1hot",
    "binary": "softplus(z) - y * z",
    "sequence": "T.nnet.crossentropy_softmax_1hot over the (N*T, classes) logits, sum over counted tokens "
    "/ their number",
    "features": "none: a features model (model.output = 'features') is only run forward (infer)",
}


class TheanoTrainer:
    """The Trainer protocol (bench.frameworks.Trainer) for Theano."""

    def __init__(self, spec: dict, data: Any, device: str, seed: int):
        self.device = _resolve_device(device)
        _check_toolchain()
        self.threads = _set_threads()
        self.rng = np.random.default_rng(seed)  # shuffling: depends on the seed alone
        self.spec_model = modelplan.plan(spec)
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
        # Theano's gradient and graph optimizer recurse once per op along the graph: a deep network
        # (ResNet-56's ~500 ops per path) passes Python's default limit of 1,000 frames.
        sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))
        self._compile()  # graph optimization and g++ (cached per environment): part of setup
        self.compile_seconds = round(time.perf_counter() - started, 2)
        self.model = InferenceModel(self)
        self.epoch = 0
        self.steps = 0  # Trainer.step() calls so far
        self._ring: common.StepRing | None = None  # step()'s batch order, made on its first call

    # -- setup ---------------------------------------------------------------------------------
    def _symbolic_inputs(self, split: dict) -> tuple[dict[str, Any], dict[str, Any]]:
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

    def _to_shared(self, split: dict, name: str) -> dict[str, Any]:
        """The roles the graph reads, as shared variables converted once (the tutorials' load_data)."""
        out: dict[str, Any] = {}
        for role in (*self.inputs, *self.labels):
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

    def _loss_and_correct(self, logits: T.TensorVariable, labels: dict[str, Any]) -> tuple[Any, Any]:
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
            # (Theano's softplus is overflow-safe). T.nnet.sigmoid_binary_crossentropy computes the
            # same but its gradient override is broken in Theano 1.0.5 (ValueError in grad).
            loss = (T.nnet.softplus(z) - y * z).mean()
            correct = T.eq(T.gt(z, 0), y).sum()  # logit 0 = probability 0.5
        return loss, correct

    def _updates(self, loss: T.TensorVariable) -> list[tuple[Any, Any]]:
        """Hand-written updates with Keras semantics, decoupled weight decay included.

        w -= lr * weight_decay * w first (the factor `decay`), then the optimizer's step from the
        gradient at the old w.
        """
        opt = self.opt_settings
        decay = _floatx(1.0 - opt["lr"] * opt["weight_decay"])
        return _OPTIMIZERS[opt["name"]](self.params, T.grad(loss, self.params), opt, decay)

    def _batch_givens(self, split: dict, rows: Any) -> dict:
        """Each graph input -> the batch's rows of the split's shared variable, padding cut off.

        Post-padded sources are cut to the batch's longest sequence (the steps after it are all
        padding); a decoder's input and its labels to the longest counted target (later steps
        count nowhere, and a left-to-right LSTM never reads ahead).
        """
        batch = {role: split[role][rows] for role in (*self.inputs, *self.labels)}
        if "len" in batch:
            batch["x"] = batch["x"][:, : T.max(batch["len"])]
        if "x_dec" in batch and "y_len" in batch:
            steps = T.max(batch["y_len"])
            batch["x_dec"], batch["y"] = batch["x_dec"][:, :steps], batch["y"][:, :steps]
        return {var: batch[role] for role, var in (*self.inputs.items(), *self.labels.items())}

    def _compile(self) -> None:
        """Build the two graphs and compile the training step and the evaluation step."""
        forward_inputs = (self.inputs["x"], self.inputs.get("len"))
        logits_train = self.net.forward(*forward_inputs, deterministic=False, x_dec=self.inputs.get("x_dec"))
        self.logits_eval = self.net.forward(*forward_inputs, deterministic=True, x_dec=self.inputs.get("x_dec"))
        if self.kind == modelplan.FEATURES:  # only run forward (infer): no loss, no updates, no test pass
            self._infer = self._compile_infer()
            return
        loss, correct = self._loss_and_correct(logits_train, self.labels)
        _, correct_eval = self._loss_and_correct(self.logits_eval, self.labels)
        idx = T.vector("idx", dtype="int64")  # the batch's rows of the shuffled epoch
        self._train = theano.function([idx], [loss, correct], updates=self._updates(loss) + self.net.state_updates,
                                      givens=self._batch_givens(self.train_data, idx), name="train_step")
        start, stop = T.lscalar("start"), T.lscalar("stop")
        self._eval = theano.function([start, stop], correct_eval,
                                     givens=self._batch_givens(self.test_data, slice(start, stop)), name="eval_step")

    def _compile_infer(self) -> Any:
        """The forward graph on rows of the training set (inference mode), compiled."""
        rows = T.vector("rows", dtype="int64")
        givens = {var: self.train_data[role][rows] for role, var in self.inputs.items()}
        return theano.function([rows], self.logits_eval, givens=givens, name="infer_step")

    # -- protocol ------------------------------------------------------------------------------
    def param_count(self) -> int:
        """Trainable parameters (the LSTM has one bias per gate, as Keras)."""
        return int(sum(p.get_value(borrow=True).size for p in self.params))

    def step(self) -> float:
        """One update on the next batch of the training set in order (wrapping around); its mean loss."""
        if self._ring is None:
            self._ring = common.StepRing(self.n_train, self.batch_size)
        loss, _ = self._train(self._ring.ring[self._ring.take()])
        self.steps += 1
        value = float(loss)
        if not math.isfinite(value):
            raise NonFiniteLoss(f"loss became {value} at step {self.steps} (Trainer.step)")
        return value

    def infer(self) -> np.ndarray:
        """One call of the compiled forward graph (deterministic: batchnorm's moving statistics, dropout off; no
        gradient or update in it) on the next batch of the training set in order, wrapping around as step()
        does; its outputs, on the host (N, output values). A features model compiles it with its graphs (_compile),
        a classifier on its first call (a training run never pays for it)."""
        if self._ring is None:
            self._ring = common.StepRing(self.n_train, self.batch_size)
        if getattr(self, "_infer", None) is None:
            self._infer = self._compile_infer()
        return np.asarray(self._infer(self._ring.ring[self._ring.take()]))

    def train_epoch(self) -> tuple[float, float | None]:
        """One pass in training mode; (mean loss, training accuracy), both per example or per counted token."""
        self.epoch += 1
        order = self.rng.permutation(self.n_train) if self.shuffle else np.arange(self.n_train)
        total, correct, seen = 0.0, 0, 0
        for b, start in enumerate(common.batches(self.n_train, self.batch_size)):
            rows = order[start : start + self.batch_size]
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

    def outputs(self, batch: dict[str, np.ndarray]) -> np.ndarray:
        """Logits (N, T, classes) for a batch of role arrays (x, len, x_dec), in inference mode."""
        return self.model.outputs(batch)

    def synchronize(self) -> None:
        """Nothing to wait for: a compiled Theano function returns when its CPU work is done."""

    def _ops(self) -> set[str]:
        compiled = self._infer if self.kind == modelplan.FEATURES else self._train  # the graph a run builds
        return {type(node.op).__name__ for node in compiled.maker.fgraph.toposort()}

    def _kernels(self) -> dict[str, str]:
        """Each layer type -> the op that ran it, read from the compiled training graph."""
        ops = self._ops()
        ldflags = theano.config.blas.ldflags
        blas = "OpenBLAS" if "openblas" in ldflags else (ldflags or "NumPy C-API BLAS")
        kernels = {}
        types = {layer.type for layer in self.spec_model.flat_layers}
        if "batchnorm" in types:
            kernels["batchnorm"] = ("elementwise T ops: batch mean/variance in the training graph (moving statistics "
                                    "updated with it, Keras' rule), moving ones in the evaluation graph")
        if "residual" in types:
            kernels["residual"] = "activation(branch(x) + shortcut(x)); projection = 1x1 conv2d (no bias) + batchnorm"
        if "concat" in types:
            kernels["concat"] = "T.concatenate of the branches' outputs on channels (axis 1, NCHW)"
        if "lrn" in types:
            kernels["lrn"] = ("elementwise T ops (Theano has no LRN op): squares zero-padded on the channel axis, the "
                              "2 * depth_radius + 1 shifted slices added, x / (bias + alpha * sum) ** beta")
        if "conv2d" in types:
            conv_ops = sorted(o for o in ops if o.startswith(("CorrMM", "Conv", "AbstractConv")))
            kernels["conv2d"] = f"theano.tensor.nnet.conv2d -> {', '.join(conv_ops)} (im2col + {blas} gemm, C)"
        if "maxpool2d" in types:
            pool_ops = sorted(o for o in ops if "Pool" in o)
            kernels["maxpool2d"] = f"theano.tensor.signal.pool.pool_2d -> {', '.join(pool_ops)} (C)"
        if "dense" in types:
            dots = sorted(o for o in ops if o in ("Gemm", "Dot22", "Dot22Scalar", "Gemv", "Ger"))
            per_step = " at every step as one product over (N*T, units)" if self.kind == "sequence" else ""
            kernels["dense"] = f"T.dot{per_step} -> {', '.join(dots)} ({blas})"
        if "lstm" in types:
            loop = "Python loop" if sys.modules.get("theano.scan_module.scan_perform_ext") is None else "Cython loop"
            kernels["lstm"] = (
                f"theano.scan over time steps ({loop}: the compiled scan_perform_ext does not build on Python 3.11; "
                "each step runs compiled C), Keras gates (i, f, c, o), one bias per gate"
            )
            if self.net.uses_lengths:
                kernels["lstm_lengths"] = (
                    "mask from real lengths keeps h, c after the last real token; each batch cut to its longest "
                    "sequence"
                )
            if self.net.encoder_steps is not None:
                kernels["lstm_initial_state"] = "the decoder's scan starts from the encoder's final (h, c)"
        if "gru" in types:
            loop = "Python loop" if sys.modules.get("theano.scan_module.scan_perform_ext") is None else "Cython loop"
            kernels["gru"] = (f"theano.scan over every time step, padding included ({loop}), Keras' GRU(reset_after="
                              "True) gates (z, r, h), an input and a recurrent bias per gate")
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
                "(seeded permutation each epoch) and gathers inside the graph (givens)"
            ),
            "loss": _LOSS_NAMES[self.kind] + ("" if self.kind == modelplan.FEATURES
                                              else " on logits (output activation folded into the loss)"),
            "optimizer": self.opt_settings,
            "weight_decay_rule": common.WEIGHT_DECAY_RULE,
            "theano_config": {
                "floatX": theano.config.floatX,
                "linker": theano.config.linker,
                "optimizer": theano.config.optimizer,
                "blas.ldflags": theano.config.blas.ldflags,
                "compiledir": theano.config.compiledir,
                "flags_set_by_dlrepro": FLAGS_SET_HERE,
            },
            "compile_seconds": self.compile_seconds,
        }


def _sequence_loss(logits: T.TensorVariable, y: T.TensorVariable,
                   y_len: T.TensorVariable | None) -> tuple[Any, Any]:
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


def make_trainer(spec: dict, data: Any, device: str, seed: int) -> TheanoTrainer:
    """Build the spec's model, compile its training and evaluation steps for `device` ('cpu')."""
    return TheanoTrainer(spec, data, device, seed)
