"""Spec reading shared by every framework module, so each one interprets a spec the same way.

Framework-free (standard library and NumPy): it resolves defaults, validates the layer list,
decides how the output activation meets the loss and checks the sequence-padding contract.
The leading underscore keeps it out of known_frameworks().
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np

THREADS_VAR = "DLREPRO_THREADS"

# Keys that may stay None (not required): the activation (linear), a pool's stride (= its size) and
# an LSTM's initial state (zeros; "encoder" = the encoder's final state, encoder-decoder models only).
OPTIONAL_KEYS = {"activation", "stride", "initial_state"}
# Keys each layer type accepts, with defaults (None = required unless in OPTIONAL_KEYS). Anything else is a spec error:
# silently ignoring a key would let two frameworks build different models from one spec.
LAYER_KEYS: dict[str, dict[str, Any]] = {
    "conv2d": {"filters": None, "kernel": None, "activation": None, "padding": "valid", "stride": 1},
    "maxpool2d": {"pool": None, "stride": None, "padding": "valid"},  # stride None = pool (no overlap)
    "dropout": {"rate": None},
    "flatten": {},
    "dense": {"units": None, "activation": None},
    "embedding": {"input_dim": None, "output_dim": None},
    "lstm": {"units": None, "use_lengths": False, "return_sequences": False, "initial_state": None},
}
HIDDEN_ACTIVATIONS = (None, "linear", "relu", "tanh", "sigmoid")

# Optimizer hyper-parameters the spec may set, with the value every framework uses when it does not.
# Adam's epsilon is Keras' 1e-7 for all (torch's own default is 1e-8): see lstm-imdb [choices].
OPTIMIZER_DEFAULTS: dict[str, dict[str, float]] = {
    "sgd": {"lr": 0.01, "momentum": 0.0, "weight_decay": 0.0},
    "adam": {"lr": 0.001, "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-7, "weight_decay": 0.0},
    # Keras 2's Adadelta (the paper era): lr 1.0, rho 0.95, epsilon 1e-7. Keras 3 lowered the default
    # lr to 0.001 and torch uses rho 0.9, eps 1e-6: the spec pins one setting for all.
    "adadelta": {"lr": 1.0, "rho": 0.95, "epsilon": 1e-7, "weight_decay": 0.0},
}
# How weight decay is applied everywhere: Keras 3's meaning, reproduced by hand in PyTorch.
WEIGHT_DECAY_RULE = "decoupled: w -= lr * weight_decay * w before each update (Keras 3 semantics)"

# The loss a spec names -> (label kind, the output activation the loss absorbs).
# "sequence": integer labels at every time step (N, T), logits (N, T, classes); the loss and the
# accuracy count only each row's first y_len steps (all steps when the data has no y_len), and
# both are means over counted tokens (token-level accuracy, as the paper reports for PTB).
LOSSES = {
    "categorical_crossentropy": ("categorical", "softmax"),
    "binary_crossentropy": ("binary", "sigmoid"),
    "sparse_categorical_crossentropy": ("sequence", "softmax"),
}
# Roles of the arrays a framework reads (bench.dataset.bind_roles maps prepared names onto them):
# x (images or token ids), len (real lengths of x), x_dec (decoder input ids, teacher forcing),
# y (labels), y_len (how many leading steps of y count; sequence labels only).
ROLES = ("x", "len", "x_dec", "y", "y_len")
ARCHITECTURES = ("stack", "encoder_decoder")


class SpecError(ValueError):
    """The workload spec asks for something the framework modules do not translate."""


@dataclass(frozen=True)
class Model:
    """The layers to build, and how the final activation is folded into the loss.

    An encoder-decoder model (architecture "encoder_decoder") runs `encoder` over x (reading len)
    and `layers` over x_dec; the encoder's last LSTM's final (h, c), taken at each sequence's last
    real step, is the initial state of the decoder LSTM marked initial_state = "encoder".
    """

    layers: list[dict[str, Any]]  # every layer with defaults filled; the last dense has no activation
    kind: str  # "categorical" (integer labels, logits per class), "binary" (one logit) or "sequence"
    input_shape: tuple[int, ...] | None  # (H, W, C) for images, None for token sequences
    encoder: list[dict[str, Any]] | None = None  # encoder-decoder models only

    @property
    def lstm_units(self) -> list[int]:
        """Units of every LSTM layer, encoder first (each adds 4 x units as a second bias in cuDNN style)."""
        return [layer["units"] for layer in (self.encoder or []) + self.layers if layer["type"] == "lstm"]


def model_layers(spec: dict) -> Model:
    """Validate spec['model'] and return its layers with defaults, ready to translate.

    The last layer's softmax/sigmoid is removed and applied inside the loss (from logits), in
    every framework: numerically safer, and the same computation as the activation followed by
    cross-entropy.
    """
    loss = spec["training"]["loss"]
    if loss not in LOSSES:
        raise SpecError(f"unsupported loss '{loss}'; supported: {', '.join(LOSSES)}")
    kind, out_activation = LOSSES[loss]
    model = spec["model"]
    architecture = model.get("architecture", "stack")
    if architecture not in ARCHITECTURES:
        raise SpecError(f"unsupported architecture {architecture!r}; supported: {', '.join(ARCHITECTURES)}")
    layers = _layer_list(model.get("layers") or [], "layer")
    encoder = _layer_list(model.get("encoder") or [], "encoder layer") if architecture == "encoder_decoder" else None
    last = layers[-1] if layers else {}
    if last.get("type") != "dense" or last.get("activation") not in (out_activation, None, "linear"):
        raise SpecError(f"the last layer must be dense with activation {out_activation} for loss {loss}")
    for i, layer in enumerate(layers[:-1]):
        if layer.get("activation") not in HIDDEN_ACTIVATIONS:
            raise SpecError(f"layer {i}: activation {layer['activation']!r} only allowed on the output layer")
    expected_units = 1 if kind == "binary" else model["num_classes"]
    if last["units"] != expected_units:
        raise SpecError(f"the output layer has {last['units']} units, the loss needs {expected_units}")
    lstms = [layer for layer in layers if layer["type"] == "lstm"]
    if kind == "sequence" and not all(layer["return_sequences"] for layer in lstms):
        raise SpecError(f"loss {loss} predicts every step: every LSTM needs return_sequences = true")
    _check_initial_states(encoder, lstms)
    layers[-1] = {**last, "activation": None}
    shape = model.get("input_shape")
    return Model(layers=layers, kind=kind, input_shape=tuple(shape) if shape else None, encoder=encoder)


def _layer_list(raw_layers: list[dict], what: str) -> list[dict[str, Any]]:
    """Each layer of a list validated against LAYER_KEYS, with its defaults filled in."""
    layers = []
    for i, raw in enumerate(raw_layers):
        kind_of = raw.get("type")
        if kind_of not in LAYER_KEYS:
            raise SpecError(f"{what} {i}: unsupported type {kind_of!r}; supported: {', '.join(LAYER_KEYS)}")
        allowed = LAYER_KEYS[kind_of]
        unknown = set(raw) - set(allowed) - {"type"}
        if unknown:
            raise SpecError(f"{what} {i} ({kind_of}): unknown keys {sorted(unknown)}")
        layer = {"type": kind_of, **allowed, **raw}
        missing = [k for k, v in allowed.items() if v is None and k not in OPTIONAL_KEYS and layer[k] is None]
        if missing:
            raise SpecError(f"{what} {i} ({kind_of}): missing {missing}")
        if kind_of == "maxpool2d" and layer["stride"] is None:
            layer["stride"] = layer["pool"]
        if layer.get("padding") not in (None, "valid", "same"):
            raise SpecError(f"{what} {i} ({kind_of}): padding must be 'valid' or 'same'")
        layers.append(layer)
    return layers


def _check_initial_states(encoder: list[dict] | None, decoder_lstms: list[dict]) -> None:
    """An encoder-decoder hands over exactly one state: encoder's last LSTM -> one decoder LSTM."""
    takers = [layer for layer in decoder_lstms if layer["initial_state"] is not None]
    if any(layer["initial_state"] != "encoder" for layer in takers):
        raise SpecError("an LSTM's initial_state may only be \"encoder\"")
    if encoder is None:
        if takers:
            raise SpecError('initial_state = "encoder" needs architecture = "encoder_decoder"')
        return
    enc_lstms = [layer for layer in encoder if layer["type"] == "lstm"]
    if not enc_lstms or encoder[-1]["type"] != "lstm" or encoder[-1]["return_sequences"]:
        raise SpecError("the encoder must end with an LSTM that returns its final state (return_sequences = false)")
    if len(takers) != 1 or takers[0]["units"] != encoder[-1]["units"]:
        raise SpecError('exactly one decoder LSTM needs initial_state = "encoder", with the encoder LSTM\'s units')


def token_mask(y: np.ndarray, y_len: np.ndarray | None) -> np.ndarray:
    """Which label steps count, (N, T) bool: each row's first y_len steps, or all without y_len."""
    if y_len is None:
        return np.ones(y.shape, dtype=bool)
    return np.arange(y.shape[1])[None, :] < np.asarray(y_len)[:, None]


def optimizer_settings(spec: dict) -> dict[str, Any]:
    """The optimizer table of the spec with every hyper-parameter filled in."""
    opt = dict(spec["training"]["optimizer"])
    name = opt.pop("name")
    if name not in OPTIMIZER_DEFAULTS:
        raise SpecError(f"unsupported optimizer '{name}'; supported: {', '.join(OPTIMIZER_DEFAULTS)}")
    unknown = set(opt) - set(OPTIMIZER_DEFAULTS[name])
    if unknown:
        raise SpecError(f"optimizer {name}: unknown keys {sorted(unknown)}")
    return {"name": name, **OPTIMIZER_DEFAULTS[name], **opt}


def threads_from_env() -> int | None:
    """Thread count the entrypoint asked for through $DLREPRO_THREADS, or None for the default."""
    value = os.environ.get(THREADS_VAR, "").strip()
    if not value:
        return None
    try:
        n = int(value)
    except ValueError:
        raise SpecError(f"{THREADS_VAR}={value!r} is not a whole number") from None
    if n < 1:
        raise SpecError(f"{THREADS_VAR}={value!r} must be at least 1")
    return n


def cpu_name() -> str:
    """The CPU model name (platform.processor() is empty on Linux)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine()


def batches(n: int, batch_size: int) -> range:
    """Start offsets of the batches over n examples; the last batch may be short (as in Keras)."""
    return range(0, n, batch_size)


def check_post_padded(x: np.ndarray, lengths: np.ndarray) -> None:
    """Raise SpecError unless each row is `len` non-zero ids followed by zeros (bench/dataset.py).

    PyTorch reads the lengths, Keras derives its mask from the zeros: they see the same
    sequences only if the two agree. An empty sequence is refused too: cuDNN's masked LSTM
    rejects fully masked rows.
    """
    lengths = np.asarray(lengths)
    if len(lengths) and int(lengths.min()) < 1:
        raise SpecError(f"{int((lengths < 1).sum())} sequences have length 0; every sequence needs a token")
    expected = np.arange(x.shape[1])[None, :] < lengths[:, None]
    bad = np.flatnonzero((expected != (x != 0)).any(axis=1))
    if len(bad):
        raise SpecError(
            f"{len(bad)} sequences are not post-padded to their length (first: row {bad[0]}); "
            "id 0 is padding only and must follow the real tokens"
        )
