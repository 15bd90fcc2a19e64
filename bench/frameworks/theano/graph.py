"""The workload's model as a symbolic Theano graph: parameters as shared variables, layers as Theano ops.

Era-neutral (Theano 1.0.2 on CPython 3.6 and 1.0.5 on 3.11 build the same graph from it: every op used here is
in both), CPython 3.6-clean; import it only after the era module has set THEANO_FLAGS (flags.configure).
Written the way Theano's own tutorials and Lasagne did it, in plain Theano: the model is one symbolic
expression built twice from the same parameters (a training graph with dropout and batch statistics, a
deterministic one without). Convolutions are theano.tensor.nnet.conv2d (filter_flip=False: cross-correlation,
as every other framework), which Theano's optimizer turns into CorrMM (im2col + BLAS gemm, C); pooling is
theano.tensor.signal.pool.pool_2d; TensorFlow's 'same' padding, where it is asymmetric, is written out by
hand (zeros before a conv or an average pool, -inf before a max pool), sizes from bench/modelplan.py. LSTMs and
GRUs are a theano.scan over time steps in Keras' gate layout and initialization; an LSTM with real lengths
keeps h and c unchanged after each sequence's last real token (a (T, N) mask), and an encoder-decoder's
decoder scan starts from the encoder's final (h, c). Theano has no LRN op: it is written in elementwise ops.
"""

import math
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import theano
import theano.tensor as T
from theano.sandbox.rng_mrg import MRG_RandomStreams
from theano.tensor.nnet import conv2d
from theano.tensor.signal.pool import pool_2d

from bench import modelplan

FLOATX = theano.config.floatX
_ACTIVATIONS = {"relu": T.nnet.relu, "tanh": T.tanh, "sigmoid": T.nnet.sigmoid}


def floatx(value: float) -> np.ndarray:
    """A float32 constant: a Python float would upcast Theano's float32 graph to float64."""
    return np.asarray(value, dtype=FLOATX)


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


def _pad(x: T.TensorVariable, top: int, bottom: int, left: int, right: int, value: float) -> T.TensorVariable:
    """x (N, C, H, W) surrounded by `value`: explicit, possibly asymmetric padding."""
    n, c, h, w = x.shape
    out = T.alloc(floatx(value), n, c, h + top + bottom, w + left + right)
    return T.set_subtensor(out[:, :, top : top + h, left : left + w], x)


class SpecNet:
    """The spec's layers as Theano parameters plus a function that builds the symbolic output.

    forward() is called once with deterministic=False (dropout on: the training graph) and once
    with deterministic=True (dropout off: the evaluation graph); both read the same parameters.
    An encoder-decoder model holds two plans: the encoder's (over x) and the decoder's (over x_dec).
    """

    def __init__(self, model: modelplan.ModelPlan, seed: int) -> None:
        self.model = model
        rng = np.random.RandomState(seed)  # initialization
        # Dropout masks, drawn inside the compiled graph. MRG refuses seed 0 (the runs' default)
        # and seeds >= 2**31 - 1: map every seed to 1 .. 2**31 - 2.
        self.srng = MRG_RandomStreams(seed % (2**31 - 2) + 1)
        self.params = []  # type: List[Any]
        # Batchnorm's moving statistics: updated by the training graph (forward with deterministic=False).
        self.state_updates = []  # type: List[Tuple[Any, Any]]
        self.uses_lengths = False
        # Per layer, what forward() needs (an encoder's only for encoder-decoders).
        self.encoder_steps = None  # type: Optional[List[Dict[str, Any]]]
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

    def _build(self, layers: List[modelplan.Layer], rng: np.random.RandomState, prefix: str) -> List[Dict[str, Any]]:
        """Parameters and forward steps of one planned layer list (sizes and padding from the plan)."""
        steps = []
        for layer in layers:
            i, kind = layer.index, layer.type
            step = {"type": kind, "activation": layer.get("activation")}  # type: Dict[str, Any]
            if kind == "conv2d":
                step.update(self._conv(layer, rng, f"{prefix}conv{i}"))
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
                step.update(self._batchnorm_params(layer, f"{prefix}bn{i}"))
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
                step.update(self._lstm_params(layer, rng, f"{prefix}lstm{i}"))
            elif kind == "gru":
                step.update(self._gru_params(layer, rng, f"{prefix}gru{i}"))
            steps.append(step)
        return steps

    def _conv(self, layer: modelplan.Layer, rng: np.random.RandomState, name: str) -> Dict[str, Any]:
        """A conv2d's kernel (and bias, unless bias = false) and how Theano pads it."""
        h, w, c = layer.input.dims
        k, s, f = layer["kernel"], layer["stride"], layer["filters"]
        W = _shared(_glorot_uniform(rng, (f, c, k, k), c * k * k, f * k * k), name + ".W")
        b = _shared(np.zeros(f), name + ".b") if layer["bias"] else None
        self.params += [W] + ([b] if layer["bias"] else [])
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

    def _batchnorm_params(self, layer: modelplan.Layer, name: str) -> Dict[str, Any]:
        """gamma and beta (trainable), the moving mean and variance (not), Keras' momentum and epsilon."""
        n = layer.input.features
        gamma, beta = _shared(np.ones(n), name + ".gamma"), _shared(np.zeros(n), name + ".beta")
        self.params += [gamma, beta]
        return {"gamma": gamma, "beta": beta, "mean": _shared(np.zeros(n), name + ".moving_mean"),
                "var": _shared(np.ones(n), name + ".moving_var"), "momentum": float(layer["momentum"]),
                "epsilon": float(layer["epsilon"]), "image": layer.input.kind == modelplan.IMAGE}

    def _lstm_params(self, layer: modelplan.Layer, rng: np.random.RandomState, name: str) -> Dict[str, Any]:
        """Keras' layout and initialization: gates (i, f, c, o) side by side, Glorot-uniform input kernel,
        orthogonal recurrent kernel, ONE bias per gate, forget bias 1."""
        n_in, units = layer.input.features, layer["units"]
        W = _shared(_glorot_uniform(rng, (n_in, 4 * units), n_in, 4 * units), name + ".W")
        U = _shared(_orthogonal(rng, units, 4 * units), name + ".U")
        bias = np.zeros(4 * units)
        bias[units : 2 * units] = 1.0
        b = _shared(bias, name + ".b")
        self.params += [W, U, b]
        self.uses_lengths = self.uses_lengths or bool(layer["use_lengths"])
        return {"W": W, "U": U, "b": b, "units": units, "use_lengths": bool(layer["use_lengths"]),
                "return_sequences": bool(layer["return_sequences"]),
                "takes_state": layer["initial_state"] == "encoder"}

    def _gru_params(self, layer: modelplan.Layer, rng: np.random.RandomState, name: str) -> Dict[str, Any]:
        """Keras' GRU(reset_after=True): gates (z, r, h) side by side, Glorot-uniform input kernel, orthogonal
        recurrent kernel, an input bias and a recurrent bias per gate (zeros)."""
        n_in, units = layer.input.features, layer["units"]
        W = _shared(_glorot_uniform(rng, (n_in, 3 * units), n_in, 3 * units), name + ".W")
        U = _shared(_orthogonal(rng, units, 3 * units), name + ".U")
        b = _shared(np.zeros(3 * units), name + ".b")
        b_rec = _shared(np.zeros(3 * units), name + ".b_rec")
        self.params += [W, U, b, b_rec]
        return {"W": W, "U": U, "b": b, "b_rec": b_rec, "units": units,
                "return_sequences": bool(layer["return_sequences"])}

    def forward(self, x: T.TensorVariable, lengths: Optional[T.TensorVariable], deterministic: bool,
                x_dec: Optional[T.TensorVariable] = None) -> T.TensorVariable:
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

    def _run(self, steps: List[Dict[str, Any]], x: T.TensorVariable, lengths: Optional[T.TensorVariable],
             deterministic: bool, state: Optional[Tuple[Any, Any]] = None
             ) -> Tuple[T.TensorVariable, Optional[Tuple[Any, Any]]]:
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
                    x = x * mask / floatx(keep)  # inverted dropout, as Keras
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


    def _batchnorm(self, x: T.TensorVariable, step: Dict[str, Any], deterministic: bool) -> T.TensorVariable:
        """Per channel (image) or feature (vector): batch statistics in training, whose (biased) mean and
        variance move the moving ones as Keras does (m * moving + (1 - m) * batch); moving ones otherwise."""
        axes = (0, 2, 3) if step["image"] else (0,)
        if deterministic:
            mean, var = step["mean"], step["var"]
        else:
            mean, var = T.cast(x.mean(axis=axes), FLOATX), T.cast(x.var(axis=axes), FLOATX)
            m = floatx(step["momentum"])
            rest = floatx(1.0 - step["momentum"])
            self.state_updates += [(step["mean"], m * step["mean"] + rest * mean),
                                   (step["var"], m * step["var"] + rest * var)]
        shape = ("x", 0, "x", "x") if step["image"] else ("x", 0)
        scale = step["gamma"] / T.sqrt(var + floatx(step["epsilon"]))
        return (x - mean.dimshuffle(*shape)) * scale.dimshuffle(*shape) + step["beta"].dimshuffle(*shape)


class LayerStack(SpecNet):
    """One planned layer list built and run by SpecNet's builders, without a whole model around it (no output
    check, no encoder): a detector's trunk, RPN, head or outputs (bench/frameworks/theano/detection.py).

    `rng` is the caller's initialization stream, shared by its stacks. With free_size the convs are built
    without the plan's H and W (Theano's conv2d would otherwise take the shape hint's H and W as the real ones
    in its shape inference), so the stack takes any image size for which the plan's pads hold (a detector's
    trunk: every multiple of its size divisor).
    """

    def __init__(self, layers: List[modelplan.Layer], rng: np.random.RandomState, prefix: str,
                 free_size: bool = False) -> None:
        self.srng = MRG_RandomStreams(int(rng.randint(1, 2**31 - 2)))  # dropout's masks, as SpecNet's
        self.params = []  # type: List[Any]
        self.state_updates = []  # type: List[Tuple[Any, Any]]
        self.uses_lengths = False
        self.encoder_steps = None
        self.steps = self._build(layers, rng, prefix)
        if free_size:
            _free_size(self.steps)

    def apply(self, x: T.TensorVariable, deterministic: bool) -> T.TensorVariable:
        """The stack's symbolic output on x (N, C, H, W); a training graph (deterministic False) makes
        state_updates this graph's batchnorm updates."""
        if not deterministic:
            self.state_updates = []
        return self._run(self.steps, x, None, deterministic)[0]


def _free_size(steps: List[Dict[str, Any]]) -> None:
    """Drop H and W from every conv's shape hint, inside residual blocks and concat branches too."""
    for step in steps:
        if step["type"] == "conv2d":
            step["input_shape"] = step["input_shape"][:2] + (None, None)
        for sub in [step.get("branch"), step.get("shortcut")] + list(step.get("branches") or []):
            if sub:
                _free_size(sub)


def _lrn(x: T.TensorVariable, step: Dict[str, Any]) -> T.TensorVariable:
    """Local response normalization across the channels of x (N, C, H, W), in the plan's (TensorFlow's) terms:
    Theano has no such op. The squares get depth_radius zero channels on each side; the window's sum is the
    2 * depth_radius + 1 channel-shifted slices of that, added."""
    r = step["depth_radius"]
    n, channels, h, w = x.shape
    squares = T.set_subtensor(T.zeros((n, channels + 2 * r, h, w), dtype=x.dtype)[:, r : r + channels], T.sqr(x))
    total = squares[:, :channels]
    for offset in range(1, 2 * r + 1):
        total = total + squares[:, offset : offset + channels]
    base = floatx(step["bias"]) + floatx(step["alpha"]) * total
    return x / base ** floatx(step["beta"])


def _dense(x: T.TensorVariable, step: Dict[str, Any]) -> T.TensorVariable:
    """x W + b; on a sequence (N, T, D) one gemm over all N*T steps, reshaped back to (N, T, units)."""
    if x.ndim == 2:
        return T.dot(x, step["W"]) + step["b"]
    n, t = x.shape[0], x.shape[1]
    flat = x.reshape((n * t, x.shape[2]))
    return (T.dot(flat, step["W"]) + step["b"]).reshape((n, t, step["units"]))


def _lstm(x: T.TensorVariable, lengths: Optional[T.TensorVariable], step: Dict[str, Any],
          state: Optional[Tuple[Any, Any]] = None) -> Tuple[T.TensorVariable, Tuple[Any, Any]]:
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
        zeros = T.alloc(floatx(0.0), batch, units)
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


def _gru(x: T.TensorVariable, step: Dict[str, Any]) -> T.TensorVariable:
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

    zeros = T.alloc(floatx(0.0), xs.shape[1], units)
    hs, _ = theano.scan(cell, sequences=[proj], outputs_info=[zeros], non_sequences=[U, step["b_rec"]],
                        strict=True, name="gru")
    return hs.dimshuffle(1, 0, 2) if step["return_sequences"] else hs[-1]

