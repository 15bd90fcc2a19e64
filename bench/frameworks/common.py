"""The training contract every framework module keeps, framework-free (standard library and NumPy).

The model itself is planned by bench/modelplan.py; this module holds the rest of what every
framework must interpret the same way: optimizer hyper-parameters and their defaults, how weight
decay is applied, which prepared arrays play which role, the token mask of sequence labels, the
post-padding contract, batching and the thread count the entrypoint asked for.
CPython 3.6-clean (NumPy >= 1.14): paper-era modules use it too.
"""

import os
from typing import Any, Dict, Optional

import numpy as np

from bench.modelplan import SpecError

THREADS_VAR = "DLREPRO_THREADS"

# Optimizer hyper-parameters the spec may set, with the value every framework uses when it does not.
# Adam's epsilon is Keras' 1e-7 for all (torch's own default is 1e-8): see lstm-imdb [choices].
OPTIMIZER_DEFAULTS = {
    "sgd": {"lr": 0.01, "momentum": 0.0, "weight_decay": 0.0},
    "adam": {"lr": 0.001, "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-7, "weight_decay": 0.0},
    # Keras 2's Adadelta (the paper era): lr 1.0, rho 0.95, epsilon 1e-7. Keras 3 lowered the default
    # lr to 0.001 and torch uses rho 0.9, eps 1e-6: the spec pins one setting for all.
    "adadelta": {"lr": 1.0, "rho": 0.95, "epsilon": 1e-7, "weight_decay": 0.0},
}
# How weight decay is applied everywhere: Keras 3's meaning, reproduced by hand in PyTorch.
WEIGHT_DECAY_RULE = "decoupled: w -= lr * weight_decay * w before each update (Keras 3 semantics)"
# Roles of the arrays a framework reads (bench.prepared.bind_roles maps prepared names onto them):
# x (images or token ids), len (real lengths of x), x_dec (decoder input ids, teacher forcing),
# y (labels), y_len (how many leading steps of y count; sequence labels only).
ROLES = ("x", "len", "x_dec", "y", "y_len")


def token_mask(y: np.ndarray, y_len: Optional[np.ndarray]) -> np.ndarray:
    """Which label steps count, (N, T) bool: each row's first y_len steps, or all without y_len."""
    if y_len is None:
        return np.ones(y.shape, dtype=bool)
    return np.arange(y.shape[1])[None, :] < np.asarray(y_len)[:, None]


def majority_rate(y: np.ndarray, y_len: Optional[np.ndarray] = None) -> float:
    """Accuracy of always guessing the most frequent label: its share of the labels that count.

    The floor a model's test accuracy must clear to have learnt anything: for a classifier the
    largest class's share, for a language model the most frequent next token's share of every step,
    for seq2seq that of the counted target tokens (token_mask: each row's first y_len steps).
    """
    y = np.asarray(y)
    labels = y[token_mask(y, y_len)] if y.ndim == 2 else y.ravel()
    if not labels.size:
        raise SpecError("no labels count: the split is empty or every y_len is 0")
    return float(np.bincount(labels.astype(np.int64)).max()) / labels.size


def optimizer_settings(spec: dict) -> Dict[str, Any]:
    """The optimizer table of the spec with every hyper-parameter filled in."""
    opt = dict(spec["training"]["optimizer"])
    name = opt.pop("name")
    if name not in OPTIMIZER_DEFAULTS:
        raise SpecError(f"unsupported optimizer '{name}'; supported: {', '.join(OPTIMIZER_DEFAULTS)}")
    unknown = set(opt) - set(OPTIMIZER_DEFAULTS[name])
    if unknown:
        raise SpecError(f"optimizer {name}: unknown keys {sorted(unknown)}")
    settings = dict(OPTIMIZER_DEFAULTS[name], name=name)
    settings.update(opt)
    return settings


def threads_from_env() -> Optional[int]:
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


class StepRing:
    """The rows of Trainer.step()'s batches: the training set in order, wrapping around at its end.

    ``ring`` is 0..n-1 followed by the first ``size`` rows again, so every batch is the slice
    ring[start:start + size] of one array (no per-step index building); size is batch_size, or n
    when the set is smaller. ``take()`` returns the next batch's slice bounds and moves on.
    """

    def __init__(self, n: int, batch_size: int) -> None:
        if n < 1:
            raise SpecError("the training set is empty: no batch to step on")
        self.n = n
        self.size = min(batch_size, n)
        self.ring = np.arange(n + self.size) % n
        self.start = 0

    def take(self) -> slice:
        """The ring slice of the next batch."""
        start = self.start
        self.start = (start + self.size) % self.n
        return slice(start, start + self.size)


def check_post_padded(x: np.ndarray, lengths: np.ndarray) -> None:
    """Raise SpecError unless each row is `len` non-zero ids followed by zeros (bench/prepared.py).

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
