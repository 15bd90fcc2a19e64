"""The paper-era framework modules use only APIs their framework version had (static check, fast).

PyTorch 0.4.1 is on no package index, so its module is never run by the tests: this check is what
keeps it honest, and it holds the five paper modules the paper-image tests train (test_<framework>.py
beside this file) to the same rule, on every line, trained or not. LATER holds, per paper-era
package, APIs that arrived after that version: the version each arrived in and where that was
found. Every module of bench/frameworks/<framework>/ a paper image carries (paper.py, paper_*.py, the
era-neutral ones) is parsed with `ast`; a rule applies to a
module that imports its package, and the check fails naming file, line, API and version when one
is used:

- "name": a dotted name, resolved through the module's imports and module-level aliases
  (`from torch import nn` makes `nn.Flatten` torch.nn.Flatten; `import numpy as np` keeps `np.`
  away from mxnet.np), matched at its own depth or deeper; imported names are checked too;
- "kwarg": a keyword argument, optionally only in calls whose resolved callee starts with `callee`
  (use_sequence_length is MXNet 1.3's own argument of SequenceLast, but gluon.rnn.LSTM's only from
  1.5), optionally only with a given constant value;
- "attr": an attribute name on any object (methods such as Link.to_device).

How versions were established (November 2026), per package:
- tensorflow: the public API of the PyPI wheels tensorflow 1.11.0, 1.12.0, 1.13.1 and 1.14.0 for
  cp36 (the generated tensorflow/__init__.py and tensorflow/_api/v1/ modules; the 1.11.0 wheel's
  sha256 is the one in shared/FACTS.md), and TensorFlow's RELEASE.md.
- keras: keras/ of the PyPI wheels Keras 2.2.4, 2.3.0, 2.6.0, 2.7.0, 2.8.0 and 3.0.0.
- torch: 0.4.1 has no wheel on the package index; the pull requests that added each API and the
  release that first shipped it (the 0.4-series torch/nn/utils/rnn.py has
  pack_padded_sequence(input, lengths, batch_first=False)).
- mxnet: python/mxnet/ at the tags 1.3.0 ... 1.9.1 of apache/mxnet.
- chainer: chainer/ at the tags v4.5.0, v5.0.0, v6.0.0, v7.0.0 of chainer/chainer.
- theano: the PyPI sdists Theano 1.0.2, 1.0.3, 1.0.4 and 1.0.5.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import NamedTuple

import pytest

from images.build import payload_files

REPO = Path(__file__).resolve().parents[4]
FRAMEWORKS_DIR = REPO / "bench" / "frameworks"
FRAMEWORKS = ("tensorflow", "keras", "pytorch", "mxnet", "chainer", "theano")
# The package versions of the paper era (DLBench Table 2), by the top-level name a module imports.
PAPER_VERSIONS = {
    "tensorflow": "1.11.0", "keras": "2.2.4", "torch": "0.4.1", "mxnet": "1.3.0", "chainer": "4.5.0",
    "theano": "1.0.2",
}

_TF_WHEELS = "PyPI wheels tensorflow 1.11.0/1.12.0/1.13.1/1.14.0 (cp36): public API, "
_KERAS = "PyPI wheels Keras "
_MXNET = "apache/mxnet "
_CHAINER = "chainer/chainer "
_THEANO = "PyPI sdists Theano 1.0.2-1.0.5: "


class Later(NamedTuple):
    """An API that arrived after the paper-era version of `package`."""

    package: str  # top-level import name: the rule applies to modules importing it
    kind: str  # "name", "kwarg" or "attr"
    api: str  # dotted name (fully qualified), keyword or attribute name
    arrived: str  # the first release that has it
    source: str  # where that was found
    callee: str = ""  # kwarg: only in calls whose resolved callee starts with this
    value: object = None  # kwarg: only with this constant value

    def label(self) -> str:
        if self.kind == "kwarg":
            where = f" in {self.callee}*(...)" if self.callee else ""
            value = "" if self.value is None else f"={self.value!r}"
            return f"keyword {self.api}{value}{where}"
        return f".{self.api}" if self.kind == "attr" else self.api


LATER = (
    # -- TensorFlow 1.11.0: graph mode; what TensorFlow 1.12-2.x added -------------------------------
    Later("tensorflow", "name", "tensorflow.function", "1.14.0",
          _TF_WHEELS + "absent in 1.13.1, `from tensorflow.python import function` in 1.14.0's tensorflow/__init__.py"),
    Later("tensorflow", "name", "tensorflow.compat.v1", "1.13.0",
          _TF_WHEELS + "tensorflow/_api/v1/compat/v1 first in 1.13.1; RELEASE.md 1.13.0 (tf.compat.v1.data...)"),
    Later("tensorflow", "name", "tensorflow.compat.v2", "1.14.0",
          "RELEASE.md 1.14.0: 'the first 1.x release containing the compat.v2 module'"),
    Later("tensorflow", "name", "tensorflow.config", "1.14.0",
          _TF_WHEELS + "tensorflow/_api/v1/config first in 1.14.0"),
    Later("tensorflow", "name", "tensorflow.raw_ops", "1.14.0",
          _TF_WHEELS + "tensorflow/_api/v1/raw_ops first in 1.14.0"),
    Later("tensorflow", "name", "tensorflow.data.experimental", "1.12.0",
          _TF_WHEELS + "first in 1.12.0; RELEASE.md 1.12.0: tf.contrib.data 'Deprecate, and replace by "
          "tf.data.experimental'"),
    Later("tensorflow", "name", "tensorflow.data.experimental.AUTOTUNE", "1.13.0",
          _TF_WHEELS + "absent in 1.12.0's tf.data.experimental, present in 1.13.1"),
    Later("tensorflow", "name", "tensorflow.data.Options", "1.12.0",
          "RELEASE.md 1.12.0: tf.data.Options(), tf.data.Dataset.options() and with_options()"),
    Later("tensorflow", "attr", "with_options", "1.12.0", "RELEASE.md 1.12.0: tf.data.Dataset.with_options()"),
    Later("tensorflow", "name", "tensorflow.random", "1.12.0", _TF_WHEELS + "tf.random first in 1.12.0"),
    Later("tensorflow", "name", "tensorflow.math.count_nonzero", "1.12.0", _TF_WHEELS + "first in 1.12.0"),
    Later("tensorflow", "name", "tensorflow.print", "1.12.0", _TF_WHEELS + "first in 1.12.0"),
    Later("tensorflow", "name", "tensorflow.io.gfile", "1.13.0", _TF_WHEELS + "first in 1.13.1"),
    Later("tensorflow", "name", "tensorflow.version", "1.13.0",
          _TF_WHEELS + "first in 1.13.1; RELEASE.md 1.13.0: versions.py endpoints moved to tf.version"),
    Later("tensorflow", "name", "tensorflow.experimental", "1.13.0", _TF_WHEELS + "first in 1.13.1"),
    Later("tensorflow", "name", "tensorflow.autograph", "1.13.0", _TF_WHEELS + "first in 1.13.1"),
    Later("tensorflow", "name", "tensorflow.lite", "1.13.0",
          "RELEASE.md 1.13.0: 'TensorFlow Lite has moved from contrib to core' (tf.lite)"),
    Later("tensorflow", "name", "tensorflow.nest", "1.14.0", _TF_WHEELS + "first in 1.14.0"),
    Later("tensorflow", "kwarg", "learning_rate", "1.14.0",
          "tensorflow 1.13.1 wheel: tf.keras.optimizers.Adam is python/keras/optimizers.Adam(lr=...); 1.14.0: "
          "optimizer_v2.adam.Adam(learning_rate=...) (python/keras/api/_v1/keras/optimizers)",
          callee="tensorflow.keras.optimizers"),
    # Graph mode is the paper era's TensorFlow (the authors' notebooks): eager execution, though 1.7+
    # has it, is not what they ran.
    Later("tensorflow", "name", "tensorflow.enable_eager_execution", "eager",
          "RELEASE.md 1.7.0: eager mode out of contrib; the paper-era module is graph mode"),
    Later("tensorflow", "name", "tensorflow.contrib.eager", "eager", "the paper-era module is graph mode"),
    Later("tensorflow", "attr", "numpy", "eager",
          "EagerTensor.numpy() exists only in eager mode; graph mode reads values with Session.run"),
    # -- Keras 2.2.4 ---------------------------------------------------------------------------------
    Later("keras", "kwarg", "learning_rate", "2.3.0",
          _KERAS + "2.2.4 keras/optimizers.py SGD(lr=...), 2.3.0 SGD(learning_rate=...)", callee="keras.optimizers"),
    Later("keras", "name", "keras.losses.Loss", "2.3.0", _KERAS + "2.3.0 keras/losses.py: class Loss (none in 2.2.4)"),
    Later("keras", "name", "keras.losses.BinaryCrossentropy", "2.3.0", _KERAS + "2.3.0 keras/losses.py"),
    Later("keras", "name", "keras.losses.CategoricalCrossentropy", "2.3.0", _KERAS + "2.3.0 keras/losses.py"),
    Later("keras", "name", "keras.losses.SparseCategoricalCrossentropy", "2.3.0", _KERAS + "2.3.0 keras/losses.py"),
    Later("keras", "name", "keras.metrics.Metric", "2.3.0", _KERAS + "2.3.0 keras/metrics.py: class Metric(Layer)"),
    Later("keras", "name", "keras.metrics.BinaryAccuracy", "2.3.0", _KERAS + "2.3.0 keras/metrics.py"),
    Later("keras", "name", "keras.metrics.CategoricalAccuracy", "2.3.0", _KERAS + "2.3.0 keras/metrics.py"),
    Later("keras", "name", "keras.metrics.SparseCategoricalAccuracy", "2.3.0", _KERAS + "2.3.0 keras/metrics.py"),
    Later("keras", "name", "keras.metrics.SparseCategoricalCrossentropy", "2.3.0", _KERAS + "2.3.0 keras/metrics.py"),
    Later("keras", "kwarg", "validation_freq", "2.3.0", _KERAS + "2.3.0 keras/engine/training.py fit(validation_freq)"),
    Later("keras", "name", "keras.utils.set_random_seed", "2.7.0",
          _KERAS + "2.7.0 keras/utils/tf_utils.py: def set_random_seed (absent in 2.6.0)"),
    Later("keras", "kwarg", "jit_compile", "2.8.0",
          _KERAS + "2.8.0 keras/engine/training.py compile(jit_compile=...) (absent in 2.7.0)"),
    Later("keras", "name", "keras.ops", "3.0.0", _KERAS + "3.0.0: keras/ops"),
    # -- PyTorch 0.4.1 -------------------------------------------------------------------------------
    Later("torch", "kwarg", "reduction", "1.0.0",
          "pytorch/pytorch#13419 (Oct 2018) renamed reduction='elementwise_mean' to 'mean'; 0.4.1 knows only "
          "'elementwise_mean'", callee="torch", value="mean"),
    Later("torch", "kwarg", "enforce_sorted", "1.1.0",
          "pytorch/pytorch#15225 (Dec 2018, after 1.0.0); the 0.4-series torch/nn/utils/rnn.py has "
          "pack_padded_sequence(input, lengths, batch_first=False)"),
    Later("torch", "name", "torch.nn.Flatten", "1.2.0", "pytorch/pytorch#22245 (Jul 2019); f-dangel/backpack#6"),
    Later("torch", "name", "torch.optim.AdamW", "1.2.0", "pytorch/pytorch#21250 (landed Jul 2019, see #22163)"),
    Later("torch", "name", "torch.set_num_interop_threads", "1.2.0",
          "pytorch/pytorch#20050 (May 2019): the Python interface to inter-op threads"),
    Later("torch", "name", "torch.get_num_interop_threads", "1.2.0", "pytorch/pytorch#20050 (May 2019)"),
    Later("torch", "kwarg", "set_to_none", "1.7.0",
          "pytorch/pytorch#42754/#44423 (Sep 2020): zero_grad(set_to_none); huggingface/accelerate#43: 'introduced it "
          "in v1.7.0'"),
    Later("torch", "name", "torch.nn.Unflatten", "1.7.0",
          "pytorch/pytorch#41564 (Jul 2020); pytorch/pytorch#44871: not in 1.6.0"),
    Later("torch", "name", "torch.inference_mode", "1.9.0",
          "pytorch.org/docs/1.9.0/generated/torch.inference_mode.html (learning-at-home/hivemind#522)"),
    Later("torch", "name", "torch.compile", "2.0.0",
          "deepspeedai/DeepSpeed#5096: hasattr(torch, 'compile') is True from 2.0.0"),
    # -- MXNet 1.3.0 ---------------------------------------------------------------------------------
    Later("mxnet", "kwarg", "use_sequence_length", "1.5.0",
          _MXNET + "python/mxnet/gluon/rnn/rnn_layer.py: no use_sequence_length at 1.3.0 and 1.4.0, present at 1.5.0",
          callee="mxnet.gluon.rnn"),
    Later("mxnet", "name", "mxnet.np", "1.6.0", _MXNET + "python/mxnet/numpy first at 1.6.0"),
    Later("mxnet", "name", "mxnet.numpy", "1.6.0", _MXNET + "python/mxnet/numpy first at 1.6.0"),
    Later("mxnet", "name", "mxnet.npx", "1.6.0", _MXNET + "python/mxnet/numpy_extension first at 1.6.0"),
    Later("mxnet", "name", "mxnet.numpy_extension", "1.6.0", _MXNET + "python/mxnet/numpy_extension first at 1.6.0"),
    Later("mxnet", "name", "mxnet.util.set_np", "1.6.0", _MXNET + "python/mxnet/util.py: def set_np first at 1.6.0"),
    Later("mxnet", "name", "mxnet.util.use_np", "1.6.0", _MXNET + "python/mxnet/util.py: def use_np first at 1.6.0"),
    Later("mxnet", "name", "mxnet.context.gpu_memory_info", "1.4.0",
          _MXNET + "python/mxnet/context.py: def gpu_memory_info first at 1.4.0"),
    Later("mxnet", "name", "mxnet.contrib.amp", "1.5.0", _MXNET + "python/mxnet/contrib/amp first at 1.5.0"),
    Later("mxnet", "attr", "optimize_for", "1.7.0",
          _MXNET + "python/mxnet/gluon/block.py: HybridBlock.optimize_for first at 1.7.0"),
    # -- Chainer 4.5.0 -------------------------------------------------------------------------------
    Later("chainer", "name", "chainer.backend", "5.0.0",
          _CHAINER + "chainer/backend.py first at v5.0.0 (v4.5.0 has chainer.backends only)"),
    Later("chainer", "name", "chainer.get_device", "6.0.0",
          _CHAINER + "v6.0.0 chainer/__init__.py: from chainer.backend import get_device"),
    Later("chainer", "name", "chainer.using_device", "6.0.0",
          _CHAINER + "v6.0.0 chainer/__init__.py: from chainer.backend import using_device"),
    Later("chainer", "name", "chainerx", "6.0.0", _CHAINER + "v6.0.0 chainer/__init__.py: import chainerx"),
    Later("chainer", "attr", "to_device", "6.0.0", _CHAINER + "chainer/link.py: Link.to_device first at v6.0.0"),
    Later("chainer", "attr", "to_chx", "6.0.0", _CHAINER + "chainer/link.py: Link.to_chx first at v6.0.0"),
    Later("chainer", "attr", "from_chx", "6.0.0", _CHAINER + "chainer/link.py: Link.from_chx first at v6.0.0"),
    # -- Theano 1.0.2 --------------------------------------------------------------------------------
    Later("theano", "kwarg", "connection_pattern", "1.0.3",
          _THEANO + "theano/compile/builders.py OpFromGraph(connection_pattern=None) first in 1.0.3",
          callee="theano"),
    *(Later("theano", "name", f"theano.tensor.{fn}", "1.0.4",
            _THEANO + f"theano/tensor/basic.py: def {fn} first in 1.0.4") for fn in ("gammainc", "gammaincc",
                                                                                    "gammau", "gammal")),
)


class Use(NamedTuple):
    """A later API found in a module."""

    path: Path
    line: int
    rule: Later

    def __str__(self) -> str:
        rule = self.rule
        when = ("eager execution, not the paper era's graph mode" if rule.arrived == "eager"
                else f"arrived in {rule.package} {rule.arrived}")
        try:
            shown = self.path.relative_to(REPO)
        except ValueError:
            shown = self.path
        return (f"{shown}:{self.line}: uses {rule.label()}: {when}; the paper era has "
                f"{rule.package} {PAPER_VERSIONS[rule.package]} (source: {rule.source})")


def _chain(node: ast.AST) -> list[str] | None:
    """['a', 'b', 'c'] for a.b.c (a Name with attributes), else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


class _Module:
    """A parsed module: its import aliases, the top-level packages it imports, name resolution."""

    def __init__(self, path: Path):
        self.path = path
        self.tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        self.aliases: dict[str, str] = {}
        self.imported: list[tuple[int, str]] = []  # (line, fully qualified name) of every import
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    self.imported.append((node.lineno, alias.name))
                    if alias.asname:
                        self.aliases[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".")[0]
                        self.aliases[top] = top
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    self.imported.append((node.lineno, full))
                    self.aliases[alias.asname or alias.name] = full
        # Module-level aliases of imported names (`keras = tf.keras`).
        for node in self.tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                resolved = self.resolve(node.value)
                if resolved and resolved.split(".")[0] != node.targets[0].id:
                    self.aliases[node.targets[0].id] = resolved
        self.packages = {name.split(".")[0] for _, name in self.imported}

    def resolve(self, node: ast.AST) -> str | None:
        """The dotted name an expression stands for, through the imports (None if it is not one)."""
        parts = _chain(node)
        if parts is None or parts[0] not in self.aliases:
            return None
        return ".".join([self.aliases[parts[0]], *parts[1:]])


def _matches(name: str, api: str) -> bool:
    return name == api or name.startswith(api + ".")


def later_apis_used(path: Path, rules: tuple[Later, ...] = LATER) -> list[Use]:
    """Every use in `path` of a later API of a package the module imports, in line order."""
    module = _Module(path)
    rules = tuple(r for r in rules if r.package in module.packages)
    names = [r for r in rules if r.kind == "name"]
    found: dict[tuple[int, str], Use] = {}

    def name_rule(name: str, line: int) -> None:
        hits = [r for r in names if _matches(name, r.api)]
        if hits:  # the most specific rule speaks (tf.data.experimental.AUTOTUNE, not tf.data.experimental)
            rule = max(hits, key=lambda r: len(r.api))
            found.setdefault((line, rule.api), Use(path, line, rule))

    for line, name in module.imported:
        name_rule(name, line)
    # Only whole chains: tf.data.experimental.AUTOTUNE is one use, not also tf.data.experimental.
    inner = {id(node.value) for node in ast.walk(module.tree) if isinstance(node, ast.Attribute)}
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Attribute):
            resolved = module.resolve(node) if id(node) not in inner else None
            if resolved:
                name_rule(resolved, node.lineno)
            for rule in rules:
                if rule.kind == "attr" and node.attr == rule.api:
                    found.setdefault((node.lineno, rule.api), Use(path, node.lineno, rule))
        elif isinstance(node, ast.Call):
            callee = module.resolve(node.func) or ""
            for kw in node.keywords:
                for rule in rules:
                    if rule.kind != "kwarg" or kw.arg != rule.api:
                        continue
                    if rule.callee and not _matches(callee, rule.callee):
                        continue
                    if rule.value is not None and not (isinstance(kw.value, ast.Constant)
                                                       and kw.value.value == rule.value):
                        continue
                    found.setdefault((kw.value.lineno, rule.label()), Use(path, kw.value.lineno, rule))
    return sorted(found.values(), key=lambda u: (u.line, u.rule.api))


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text))


# -- the table ---------------------------------------------------------------------------------------
def test_every_later_api_is_newer_than_the_paper_era_and_sourced():
    for rule in LATER:
        assert rule.package in PAPER_VERSIONS, rule
        assert rule.kind in ("name", "kwarg", "attr"), rule
        assert rule.source.strip(), rule
        if rule.arrived != "eager":
            assert _version(rule.arrived) > _version(PAPER_VERSIONS[rule.package]), rule
        if rule.kind == "name":
            assert rule.api.split(".")[0] in (rule.package, "chainerx"), rule
    assert {rule.package for rule in LATER} == set(PAPER_VERSIONS)


def test_the_table_holds_the_apis_the_paper_modules_must_avoid():
    held = {(rule.package, rule.api) for rule in LATER}
    required = {
        ("torch", "enforce_sorted"), ("torch", "torch.nn.Flatten"), ("torch", "torch.inference_mode"),
        ("torch", "torch.optim.AdamW"), ("torch", "torch.compile"), ("torch", "torch.nn.Unflatten"),
        ("torch", "set_to_none"),
        ("tensorflow", "tensorflow.function"), ("tensorflow", "learning_rate"), ("tensorflow", "tensorflow.compat.v1"),
        ("tensorflow", "tensorflow.config"), ("tensorflow", "tensorflow.data.experimental.AUTOTUNE"),
        ("tensorflow", "tensorflow.raw_ops"), ("tensorflow", "tensorflow.enable_eager_execution"),
        ("mxnet", "use_sequence_length"), ("mxnet", "mxnet.np"), ("mxnet", "mxnet.npx"),
        ("chainer", "chainer.get_device"), ("chainer", "chainer.backend"),
        ("keras", "learning_rate"), ("keras", "keras.ops"), ("keras", "keras.utils.set_random_seed"),
        ("keras", "jit_compile"),
        ("theano", "theano.tensor.gammainc"),
    }
    assert required <= held, sorted(required - held)


# -- the paper-era modules -----------------------------------------------------------------------------
def paper_image_modules(framework: str) -> list[Path]:
    """The framework's modules a paper image carries (images/build.py payload_files): paper.py, its paper_*.py helpers
    and the era-neutral modules both eras share."""
    return [path for path in payload_files("paper") if path.parent == FRAMEWORKS_DIR / framework
            and path.stem != "__init__"]


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_paper_module_uses_only_apis_of_its_version(framework):
    paths = paper_image_modules(framework)
    assert FRAMEWORKS_DIR / framework / "paper.py" in paths
    used = [api for path in paths for api in later_apis_used(path)]
    assert not used, "paper-era module uses APIs newer than its framework version:\n" + "\n".join(map(str, used))


# -- the check itself ----------------------------------------------------------------------------------
PLANTED = '''\
import keras
import mxnet as mx
import numpy as np
import tensorflow as tf
import torch
import chainer
import theano.tensor as T
from mxnet import gluon
from mxnet.gluon import rnn
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

tfk = tf.keras


def model(x, lengths, opt):
    flat = nn.Flatten()
    packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    opt.zero_grad(set_to_none=True)
    with torch.inference_mode():
        pass
    adamw = torch.optim.AdamW([x])
    loss = nn.CrossEntropyLoss(reduction="mean")
    step = tf.function(lambda: None)
    session = tf.compat.v1.Session()
    tune = tf.data.experimental.AUTOTUNE
    tf_adam = tfk.optimizers.Adam(learning_rate=1e-3)
    lstm = rnn.LSTM(10, use_sequence_length=True)
    arr = mx.np.zeros((2, 2))
    device = chainer.get_device("@numpy")
    keras_sgd = keras.optimizers.SGD(learning_rate=0.1)
    gamma = T.gammainc(x, x)
    return flat, packed, adamw, loss, step, session, tune, tf_adam, lstm, arr, device, keras_sgd, gamma
'''

# (a snippet of the PLANTED line, API named in the message, version named in the message)
EXPECTED = [
    ("nn.Flatten()", "torch.nn.Flatten", "torch 1.2.0"),
    ("enforce_sorted=False", "keyword enforce_sorted", "torch 1.1.0"),
    ("set_to_none=True", "keyword set_to_none", "torch 1.7.0"),
    ("torch.inference_mode()", "torch.inference_mode", "torch 1.9.0"),
    ("torch.optim.AdamW", "torch.optim.AdamW", "torch 1.2.0"),
    ('reduction="mean"', "keyword reduction='mean' in torch*(...)", "torch 1.0.0"),
    ("tf.function", "tensorflow.function", "tensorflow 1.14.0"),
    ("tf.compat.v1.Session", "tensorflow.compat.v1", "tensorflow 1.13.0"),
    ("AUTOTUNE", "tensorflow.data.experimental.AUTOTUNE", "tensorflow 1.13.0"),
    ("tfk.optimizers.Adam", "keyword learning_rate in tensorflow.keras.optimizers*(...)", "tensorflow 1.14.0"),
    ("rnn.LSTM", "keyword use_sequence_length in mxnet.gluon.rnn*(...)", "mxnet 1.5.0"),
    ("mx.np.zeros", "mxnet.np", "mxnet 1.6.0"),
    ("chainer.get_device", "chainer.get_device", "chainer 6.0.0"),
    ("keras.optimizers.SGD", "keyword learning_rate in keras.optimizers*(...)", "keras 2.3.0"),
    ("T.gammainc", "theano.tensor.gammainc", "theano 1.0.4"),
]


def _line_of(snippet: str) -> int:
    return next(i for i, text in enumerate(PLANTED.splitlines(), 1) if snippet in text)


# The same work written with the paper era's APIs: nothing to report (numpy's np is not mxnet.np,
# tf.train's learning_rate and SequenceLast's use_sequence_length are the old versions' own).
CLEAN = '''\
import mxnet as mx
import numpy as np
import tensorflow as tf
import torch
from mxnet import nd
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence


def model(x, lengths, opt, out):
    sorted_lengths, order = lengths.sort(0, descending=True)
    packed = pack_padded_sequence(x.index_select(0, order), sorted_lengths, batch_first=True)
    opt.zero_grad()
    with torch.no_grad():
        pass
    loss = nn.CrossEntropyLoss(ignore_index=-100)
    adam = tf.train.AdamOptimizer(learning_rate=1e-3)
    last = nd.SequenceLast(out, sequence_length=lengths, use_sequence_length=True)
    zeros = np.zeros((2, 2))
    return packed, loss, adam, last, zeros, mx.cpu()
'''


def test_a_planted_newer_api_fails(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text(PLANTED)
    used = later_apis_used(planted)
    messages = [str(u) for u in used]
    for snippet, api, version in EXPECTED:
        line = _line_of(snippet)
        hits = [m for m in messages if m.startswith(f"{planted}:{line}: uses {api}:")]
        assert hits, f"line {line} ({api}) not reported; got:\n" + "\n".join(messages)
        assert f"arrived in {version};" in hits[0], hits[0]
    assert len(used) == len(EXPECTED), "\n".join(messages)
    # The test itself fails on such a module, naming file, line, API and version.
    flatten = rf"planted\.py:{_line_of('nn.Flatten()')}: uses torch\.nn\.Flatten: arrived in torch 1\.2\.0"
    with pytest.raises(AssertionError, match=flatten):
        _check_as_the_test_does(planted)


def _check_as_the_test_does(path: Path) -> None:
    used = later_apis_used(path)
    assert not used, "paper-era module uses APIs newer than its framework version:\n" + "\n".join(map(str, used))


def test_the_paper_era_idioms_pass(tmp_path):
    clean = tmp_path / "clean.py"
    clean.write_text(CLEAN)
    assert later_apis_used(clean) == []


def test_rules_apply_only_to_modules_importing_their_package(tmp_path):
    # `.numpy()` is eager-only TensorFlow, but PyTorch's own tensor method: a torch module may use it.
    module = tmp_path / "torch_only.py"
    module.write_text("import torch\n\n\ndef host(t):\n    return t.cpu().numpy()\n")
    assert later_apis_used(module) == []
    module.write_text("import tensorflow as tf\n\n\ndef host(t):\n    return t.numpy()\n")
    assert [u.rule.api for u in later_apis_used(module)] == ["numpy"]
