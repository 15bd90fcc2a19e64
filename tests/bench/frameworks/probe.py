"""Self-check of one framework module, run inside that framework's environment by the tests.

    python -m tests.bench.frameworks.probe FRAMEWORK --specs SPECS.json [--epochs 3]

SPECS.json holds resolved specs, as a run request carries them (the host resolves them: check.py
smoke_specs): {"train": {name: spec}, "nan_check": spec}. Trains each "train" spec (its 'smoke'
profile sizes) on small, learnable data made in memory in the prepared-data format, and prints one
JSON object on stdout:

    {"framework", "versions", "workloads": {name: {"param_count", "losses", "train_accuracy",
     "test_accuracy", "test_accuracy_again", "padding_max_abs_diff", "seconds", "info"}},
     "nan_raised", "nan_message"}

padding_max_abs_diff: largest change of the model's outputs when post-padding is cut off
(sequences only); it must be ~0 if the model reads the last *real* LSTM state. For an
encoder-decoder the source padding is cut, through the trainer's outputs(batch) method (logits
for a batch of role arrays, in inference mode), which encoder-decoder trainers provide.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from types import ModuleType
from typing import Any

import numpy as np

from bench.frameworks import NonFiniteLoss, load
from bench.prepared import PreparedData

SEED = 1234


def image_data(n_train: int, n_test: int, shape: list[int], num_classes: int, seed: int = 0) -> PreparedData:
    """uint8 NHWC images: a bright square whose position encodes the class, on noise."""
    h, w, c = shape
    rng = np.random.default_rng(seed)
    cols = 5
    size = min(h, w) // 5

    def make(n: int) -> dict[str, np.ndarray]:
        y = rng.integers(0, num_classes, n)
        x = rng.integers(0, 80, (n, h, w, c)).astype(np.uint8)
        for i, label in enumerate(y):
            top, left = (label // cols) * size + 1, (label % cols) * size + 1
            x[i, top : top + size - 1, left : left + size - 1, :] = 255
        return {"x": x, "y": y.astype(np.int64)}

    return PreparedData(meta={"source": "probe"}, train=make(n_train), test=make(n_test))


def sequence_data(n_train: int, n_test: int, maxlen: int, vocab: int, seed: int = 0) -> PreparedData:
    """int32 token ids post-padded with 0: a third of the tokens come from a class's own words."""
    rng = np.random.default_rng(seed)
    words = {0: np.arange(2, 12), 1: np.arange(12, 22)}

    def make(n: int) -> dict[str, np.ndarray]:
        y = rng.integers(0, 2, n)
        lengths = rng.integers(8, 41, n)
        x = np.zeros((n, maxlen), dtype=np.int32)
        for i in range(n):
            row = rng.integers(22, vocab, lengths[i])
            hits = rng.random(lengths[i]) < 0.33
            row[hits] = rng.choice(words[int(y[i])], hits.sum())
            x[i, : lengths[i]] = row
        return {"x": x, "len": lengths.astype(np.int32), "y": y.astype(np.int64)}

    return PreparedData(meta={"source": "probe"}, train=make(n_train), test=make(n_test))


def language_data(n_train: int, n_test: int, steps: int, vocab: int, seed: int = 0) -> PreparedData:
    """Windows of a stream where 80 % of tokens follow their predecessor by a fixed rule (ids < 64)."""
    rng = np.random.default_rng(seed)
    active = min(64, vocab)
    successor = rng.permutation(active)

    def make(n: int) -> dict[str, np.ndarray]:
        stream = np.empty(n * steps + 1, dtype=np.int32)
        stream[0] = 0
        jumps = rng.integers(0, active, len(stream))
        follow = rng.random(len(stream)) < 0.8
        for t in range(1, len(stream)):
            stream[t] = successor[stream[t - 1]] if follow[t] else jumps[t]
        return {"x": stream[:-1].reshape(n, steps).copy(), "y": stream[1:].reshape(n, steps).copy()}

    return PreparedData(meta={"source": "probe"}, train=make(n_train), test=make(n_test))


def translation_data(n_train: int, n_test: int, maxlen: int, vocab: int, seed: int = 0) -> PreparedData:
    """Source ids 4..43, post-padded; the target is the source word by word through a fixed map.

    Laid out like data/manythings.py: x_dec = <start>(2) + target, y = target + <end>(3), y_len.
    """
    rng = np.random.default_rng(seed)
    words = np.arange(4, min(44, vocab))
    mapping = dict(zip(words, rng.permutation(words)))

    def make(n: int) -> dict[str, np.ndarray]:
        lengths = rng.integers(3, maxlen - 1, n)
        x, x_dec, y = (np.zeros((n, maxlen), dtype=np.int32) for _ in range(3))
        for i, length in enumerate(lengths):
            src = rng.choice(words, length)
            tgt = [mapping[w] for w in src]
            x[i, :length] = src
            x_dec[i, : length + 1] = [2, *tgt]
            y[i, : length + 1] = [*tgt, 3]
        return {"x": x, "len": lengths.astype(np.int32), "x_dec": x_dec, "y": y,
                "y_len": (lengths + 1).astype(np.int32)}

    return PreparedData(meta={"source": "probe"}, train=make(n_train), test=make(n_test))


def probe_data(spec: dict) -> PreparedData:
    """Learnable data shaped like the workload's dataset, sized by the spec's subset sizes."""
    n_train, n_test = spec["data"]["train_subset"] or 512, spec["data"]["test_subset"] or 256
    model = spec["model"]
    if "input_shape" in model:
        return image_data(n_train, n_test, model["input_shape"], model["num_classes"])
    if model.get("architecture") == "encoder_decoder":
        return translation_data(n_train, n_test, model["maxlen"], model["vocab_size"])
    if spec["task"] == "language_model":
        return language_data(n_train, n_test, model["maxlen"], model["vocab_size"])
    return sequence_data(n_train, n_test, model["maxlen"], model["vocab_size"])


def source_padding_diff(trainer: Any, data: PreparedData) -> float:
    """Encoder-decoder: max |logits(padded source) - logits(source padding cut off)|."""
    lengths = data.len_test
    length = int(lengths[0])
    rows = np.flatnonzero(lengths == length)[:8]
    batch = {role: arr[rows] for role, arr in data.test.items()}
    cut = {**batch, "x": np.ascontiguousarray(batch["x"][:, :length])}
    return float(np.abs(np.asarray(trainer.outputs(batch)) - np.asarray(trainer.outputs(cut))).max())


def padding_diff(framework: str, trainer: Any, data: PreparedData) -> float:
    """Max |output(padded) - output(padding cut off)| over a few test sequences of one length."""
    lengths = data.len_test
    length = int(lengths[0])
    rows = np.flatnonzero(lengths == length)[:8]
    padded, cut = data.x_test[rows], np.ascontiguousarray(data.x_test[rows, :length])
    if framework == "pytorch":
        import torch

        with torch.inference_mode():
            trainer.model.eval()
            lens = torch.full((len(rows),), length, dtype=torch.int64)
            outs = [trainer.model(torch.from_numpy(x).to(trainer.device), lens).cpu().numpy()
                    for x in (padded, cut)]
            # The packed path (used on CUDA) must agree with the gathered one (used on the CPU).
            from bench.frameworks.pytorch.current import _LSTM

            lstm_layer = [m for m in trainer.model.layers if isinstance(m, _LSTM)][0]
            emb = trainer.model.layers[0](torch.from_numpy(padded).to(trainer.device))
            both = lstm_layer.packed(emb, lens) - lstm_layer.gathered(emb, lens)
            return float(max(np.abs(outs[0] - outs[1]).max(), both.abs().max().item()))
    outs = [np.asarray(trainer.model(x, training=False)) for x in (padded, cut)]
    return float(np.abs(outs[0] - outs[1]).max())


def run_workload(module: ModuleType, spec: dict, epochs: int, device: str) -> dict:
    """Train one workload for `epochs` and report what the tests assert on."""
    data = probe_data(spec)
    started = time.perf_counter()
    trainer = module.make_trainer(spec, data, device, SEED)
    losses, train_acc = [], []
    for _ in range(epochs):
        loss, acc = trainer.train_epoch()
        trainer.synchronize()
        losses.append(loss)
        train_acc.append(acc)
    result = {
        "param_count": trainer.param_count(),
        "losses": losses,
        "train_accuracy": train_acc,
        "test_accuracy": trainer.evaluate(),
        # Same again: in inference mode dropout is off, so evaluation is deterministic.
        "test_accuracy_again": trainer.evaluate(),
        "padding_max_abs_diff": None,
        "info": trainer.info(),
    }
    if "x_dec" in data.test:
        result["padding_max_abs_diff"] = source_padding_diff(trainer, data)
    elif "len" in data.test:
        result["padding_max_abs_diff"] = padding_diff(module.NAME, trainer, data)
    result["seconds"] = round(time.perf_counter() - started, 2)
    return result


def nan_check(module: ModuleType, spec: dict, device: str) -> tuple[bool, str]:
    """An absurd learning rate must end the epoch with NonFiniteLoss, not a NaN result."""
    spec = copy.deepcopy(spec)
    # 1e38, near float32's largest: the output layer's bias overflows within a few steps on any CPU. At 1e30
    # oneDNN's kernels on an AVX-512 CPU (TensorFlow, Keras) kept the loss finite (~1e29): the ReLUs died and
    # the loss came from the biases alone, which never reached float32's range.
    spec["training"]["optimizer"] = {"name": "sgd", "lr": 1e38, "momentum": 0.0}
    data = probe_data(spec)
    trainer = module.make_trainer(spec, data, device, SEED)
    try:
        for _ in range(2):
            trainer.train_epoch()
    except NonFiniteLoss as exc:
        return True, str(exc)
    return False, "no NonFiniteLoss raised"


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run the probes, print one JSON object."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("framework")
    parser.add_argument("--specs", required=True, help='JSON: {"train": {name: spec}, "nan_check": spec}')
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--device", default="cpu", choices=("cpu", "gpu"))
    parser.add_argument("--no-nan-check", action="store_true")
    args = parser.parse_args(argv)
    with open(args.specs, encoding="utf-8") as fh:
        specs = json.load(fh)
    module = load(args.framework)
    out: dict[str, Any] = {"framework": module.NAME, "versions": module.versions(), "workloads": {}}
    for name, spec in specs["train"].items():
        out["workloads"][name] = run_workload(module, spec, args.epochs, args.device)
    if not args.no_nan_check:
        out["nan_raised"], out["nan_message"] = nan_check(module, specs["nan_check"], args.device)
    json.dump(out, sys.stdout, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
