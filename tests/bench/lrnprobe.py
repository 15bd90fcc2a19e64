"""One framework module's local response normalization on fixed inputs, run inside that framework's environment
by tests/bench/test_lrn.py:

    python -m tests.bench.lrnprobe FRAMEWORK

For each case of CASES it plans a one-lrn model (bench/modelplan.py), translates the planned lrn layer with the
module's own builder (what its trainer builds), runs it on the case's input in the module's layout (NHWC or NCHW)
and prints one JSON object: {"framework", "outputs": {case: NHWC output as nested lists}}.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import numpy as np

from bench import modelplan
from bench.frameworks import load

# name -> (lrn parameters, input shape (N, H, W, C)). Not TensorFlow's defaults, so a parameter mapped wrongly
# (alpha not scaled by the window, the window's radius taken for its width) changes the output; "wide" has a
# window wider than its channels (the sum clipped at both ends), "tutorial" is wu-tf-cifar10's LRN.
CASES = {
    "narrow": ({"depth_radius": 2, "bias": 2.0, "alpha": 0.3, "beta": 0.75}, (2, 3, 4, 11)),
    "wide": ({"depth_radius": 4, "bias": 1.0, "alpha": 0.5, "beta": 0.5}, (1, 2, 3, 3)),
    "tutorial": ({"depth_radius": 4, "bias": 1.0, "alpha": 0.001 / 9.0, "beta": 0.75}, (2, 2, 2, 16)),
}
# The tutorial's alpha is small: inputs this large make its normalization visible.
SCALE = {"narrow": 2.0, "wide": 2.0, "tutorial": 20.0}


def case_input(name: str) -> np.ndarray:
    """The case's float32 NHWC input (seeded: the test's reference reads the same numbers)."""
    shape = CASES[name][1]
    return (np.random.default_rng(7).uniform(-1.0, 1.0, shape) * SCALE[name]).astype(np.float32)


def planned(name: str) -> modelplan.ModelPlan:
    """The case's model as bench/modelplan.py plans it: lrn, flatten, dense (its lrn is layers[0])."""
    params, (_, h, w, c) = CASES[name]
    spec = {"model": {"input_shape": [h, w, c], "num_classes": 2,
                      "layers": [dict(params, type="lrn"), {"type": "flatten"}, {"type": "dense", "units": 2}]},
            "training": {"loss": "categorical_crossentropy"}}
    return modelplan.plan(spec)


def _nchw(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2))


def _nhwc(x: Any) -> np.ndarray:
    return np.asarray(x).transpose(0, 2, 3, 1)


def run_pytorch(module: Any, model: modelplan.ModelPlan, x: np.ndarray) -> np.ndarray:
    import torch

    with torch.no_grad():
        return _nhwc(torch.nn.Sequential(*module._modules(model.layers[:1]))(torch.from_numpy(_nchw(x))).numpy())


def run_tensorflow(module: Any, model: modelplan.ModelPlan, x: np.ndarray) -> np.ndarray:
    from bench.frameworks.tensorflow import current_layers  # the current module's layers live beside it

    return current_layers._build_stack(model.layers[:1], "cpu", "layer")(x, training=False)[0].numpy()


def run_keras(module: Any, model: modelplan.ModelPlan, x: np.ndarray) -> np.ndarray:
    keras = module.keras
    net = keras.Sequential([keras.Input(shape=x.shape[1:]), module._layer(model.layers[0], False)])
    return np.asarray(net(x, training=False))


def run_mxnet(module: Any, model: modelplan.ModelPlan, x: np.ndarray) -> np.ndarray:
    from bench.frameworks.mxnet import blocks  # the Gluon blocks both eras build
    from bench.frameworks.mxnet.library import nd

    net = blocks._build_stack(model.layers[:1], False)
    net.hybridize(static_alloc=True, static_shape=True)  # as the trainer runs it
    return _nhwc(net(nd.array(_nchw(x))).asnumpy())


def run_chainer(module: Any, model: modelplan.ModelPlan, x: np.ndarray) -> np.ndarray:
    from bench.frameworks.chainer import layers  # the links both eras build

    return _nhwc(layers._build_stack(model.layers[:1])(_nchw(x)).array)


def run_theano(module: Any, model: modelplan.ModelPlan, x: np.ndarray) -> np.ndarray:
    net = module.SpecNet(model, seed=0)
    images = module.T.tensor4("x", dtype=module.FLOATX)
    fn = module.theano.function([images], net._run(net.steps[:1], images, None, True)[0])  # the lrn's step only
    return _nhwc(fn(_nchw(x)))


RUNNERS = {"pytorch": run_pytorch, "tensorflow": run_tensorflow, "keras": run_keras, "mxnet": run_mxnet,
           "chainer": run_chainer, "theano": run_theano}


def main(framework: str) -> None:
    """Print the framework module's output of every case as one JSON line."""
    module = load(framework)
    outputs = {name: RUNNERS[framework](module, planned(name), case_input(name)).tolist() for name in CASES}
    print(json.dumps({"framework": framework, "outputs": outputs}))


if __name__ == "__main__":
    main(sys.argv[1])
