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

# Keys that may stay None (not required): the activation (linear) and a pool's stride (= its size).
OPTIONAL_KEYS = {"activation", "stride"}
# Keys each layer type accepts, with defaults (None = required unless in OPTIONAL_KEYS). Anything else is a spec error:
# silently ignoring a key would let two frameworks build different models from one spec.
LAYER_KEYS: dict[str, dict[str, Any]] = {
    "conv2d": {"filters": None, "kernel": None, "activation": None, "padding": "valid", "stride": 1},
    "maxpool2d": {"pool": None, "stride": None, "padding": "valid"},  # stride None = pool (no overlap)
    "dropout": {"rate": None},
    "flatten": {},
    "dense": {"units": None, "activation": None},
    "embedding": {"input_dim": None, "output_dim": None},
    "lstm": {"units": None, "use_lengths": False, "return_sequences": False},
}
HIDDEN_ACTIVATIONS = (None, "linear", "relu", "tanh", "sigmoid")

# Optimizer hyper-parameters the spec may set, with the value every framework uses when it does not.
# Adam's epsilon is Keras' 1e-7 for all (torch's own default is 1e-8): see lstm-imdb [choices].
OPTIMIZER_DEFAULTS: dict[str, dict[str, float]] = {
    "sgd": {"lr": 0.01, "momentum": 0.0, "weight_decay": 0.0},
    "adam": {"lr": 0.001, "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-7, "weight_decay": 0.0},
}
# How weight decay is applied everywhere: Keras 3's meaning, reproduced by hand in PyTorch.
WEIGHT_DECAY_RULE = "decoupled: w -= lr * weight_decay * w before each update (Keras 3 semantics)"

# The loss a spec names -> (label kind, the output activation the loss absorbs).
LOSSES = {
    "categorical_crossentropy": ("categorical", "softmax"),
    "binary_crossentropy": ("binary", "sigmoid"),
}


class SpecError(ValueError):
    """The workload spec asks for something the framework modules do not translate."""


@dataclass(frozen=True)
class Model:
    """The layers to build, and how the final activation is folded into the loss."""

    layers: list[dict[str, Any]]  # every layer with defaults filled; the last dense has no activation
    kind: str  # "categorical" (integer labels, logits per class) or "binary" (one logit)
    input_shape: tuple[int, ...] | None  # (H, W, C) for images, None for token sequences


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
    layers = []
    for i, raw in enumerate(spec["model"]["layers"]):
        kind_of = raw.get("type")
        if kind_of not in LAYER_KEYS:
            raise SpecError(f"layer {i}: unsupported type {kind_of!r}; supported: {', '.join(LAYER_KEYS)}")
        allowed = LAYER_KEYS[kind_of]
        unknown = set(raw) - set(allowed) - {"type"}
        if unknown:
            raise SpecError(f"layer {i} ({kind_of}): unknown keys {sorted(unknown)}")
        layer = {"type": kind_of, **allowed, **raw}
        missing = [k for k, v in allowed.items() if v is None and k not in OPTIONAL_KEYS and layer[k] is None]
        if missing:
            raise SpecError(f"layer {i} ({kind_of}): missing {missing}")
        if kind_of == "maxpool2d" and layer["stride"] is None:
            layer["stride"] = layer["pool"]
        if layer.get("padding") not in (None, "valid", "same"):
            raise SpecError(f"layer {i} ({kind_of}): padding must be 'valid' or 'same'")
        layers.append(layer)
    last = layers[-1] if layers else {}
    if last.get("type") != "dense" or last.get("activation") not in (out_activation, None, "linear"):
        raise SpecError(f"the last layer must be dense with activation {out_activation} for loss {loss}")
    for i, layer in enumerate(layers[:-1]):
        if layer.get("activation") not in HIDDEN_ACTIVATIONS:
            raise SpecError(f"layer {i}: activation {layer['activation']!r} only allowed on the output layer")
    expected_units = 1 if kind == "binary" else spec["model"]["num_classes"]
    if last["units"] != expected_units:
        raise SpecError(f"the output layer has {last['units']} units, the loss needs {expected_units}")
    layers[-1] = {**last, "activation": None}
    shape = spec["model"].get("input_shape")
    return Model(layers=layers, kind=kind, input_shape=tuple(shape) if shape else None)


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
