"""A sequence model's test accuracy under the definitions the DLBench authors' notebooks score, beside the kit's.

The published LSTM accuracies are not one quantity (docs/notebook-parity.md, "Accuracy definitions"): on Many things
some notebooks count the padding after each sentence, Keras' masked accuracy also scores the step after the last real
token. So that the report can set like beside like, every sequence run (loss kind "sequence") also reports, once after
training, the accuracy of its final weights on the test rows under each definition of DEFINITIONS, computed here from
the trainer's logits (Trainer.outputs) the same way in every framework:

- real_tokens: the kit's own, what the trainers' evaluate() reports: argmax == label over each row's first y_len steps;
- padding_counted: all T steps of each row, padding included (TensorFlow's, PyTorch's and MXNet's Many things
  notebooks, at the kit's padded length T, not theirs: their share of padding differs);
- end_step_counted: each row's first min(y_len + 1, T) steps, the real ones and the one after them (Keras' masked
  accuracy in its Many things notebook).
Without y_len (PTB's windows: no padding) the three count the same steps. Chainer's and Theano's Many things notebooks
score a copy task (the decoder's own input, unshifted), which no translation model's logits can be scored as.

CPython 3.6-clean, NumPy only.
"""

from typing import Dict, Optional

import numpy as np

DEFINITIONS = ("real_tokens", "padding_counted", "end_step_counted")


def counted_steps(y_len: Optional[np.ndarray], rows: int, steps: int) -> Dict[str, np.ndarray]:
    """{definition: (rows, steps) bool mask of the steps it scores}."""
    position = np.arange(steps)[None, :]
    lengths = np.full((rows, 1), steps) if y_len is None else np.asarray(y_len).reshape(rows, 1)
    return {"real_tokens": position < lengths, "padding_counted": np.ones((rows, steps), bool),
            "end_step_counted": position < np.minimum(lengths + 1, steps)}


def hits(logits: np.ndarray, y: np.ndarray, y_len: Optional[np.ndarray]) -> Dict[str, np.ndarray]:
    """{definition: [correct, counted]} of one batch: logits (rows, steps, classes), y (rows, steps) labels."""
    if np.shape(logits)[:-1] != np.shape(y):  # a flattened (rows x steps, classes) would compare wrongly
        raise ValueError(f"logits of shape {np.shape(logits)} do not match labels of shape {np.shape(y)}")
    right = np.argmax(logits, axis=-1) == y
    return {name: np.array([np.count_nonzero(right & mask), np.count_nonzero(mask)])
            for name, mask in counted_steps(y_len, y.shape[0], y.shape[1]).items()}


def measure(trainer, test: Dict[str, np.ndarray], batch_size: int) -> Dict[str, Optional[float]]:
    """{definition: accuracy} of the trainer's current weights on the test split's role arrays, in batches of
    batch_size (inference mode: Trainer.outputs); None where a definition counts no step."""
    total = {name: np.zeros(2, np.int64) for name in DEFINITIONS}
    inputs = [role for role in ("x", "len", "x_dec") if role in test]
    for start in range(0, len(test["y"]), batch_size):
        batch = {role: test[role][start:start + batch_size] for role in inputs}
        y_len = test["y_len"][start:start + batch_size] if "y_len" in test else None
        found = hits(np.asarray(trainer.outputs(batch)), test["y"][start:start + batch_size], y_len)
        for name in DEFINITIONS:
            total[name] += found[name]
    return {name: float(c) / float(n) if n else None for name, (c, n) in total.items()}
