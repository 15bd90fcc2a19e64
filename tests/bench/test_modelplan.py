"""The model plan (bench/modelplan.py): every spec's layers validated, with shapes and padding worked out once."""

from __future__ import annotations

import copy

import pytest

from bench import modelplan
from bench.detection import detector
from bench.modelplan import IMAGE, SEQUENCE, TOKENS, VECTOR, Pads, Shape, SpecError
from campaign import specs
from tests.declarations import DLBENCH_LAYER_TYPES
from tests.plancount import trainable

CNN_SPECS = [name for name in specs.known_workloads() if specs.load(name)["family"] == "cnn"]
# Every workload that trains a model (a "collective" workload times an all-reduce: no model, no loss).
MODEL_SPECS = [name for name in specs.known_workloads() if specs.load(name)["family"] != "collective"]
NO_PADS = Pads(0, 0, 0, 0)
# Every conv2d and maxpool2d of every shipped CNN spec: (type, output (H, W, C), padding), then the
# flatten size the first dense layer reads (what its parameter count depends on).
WINDOWS = {
    "cnn-mnist": (
        [("conv2d", (26, 26, 32), NO_PADS), ("conv2d", (24, 24, 64), NO_PADS), ("maxpool2d", (12, 12, 64), NO_PADS)],
        12 * 12 * 64,
    ),
    "cnn-cifar10": (
        [("conv2d", (32, 32, 32), Pads(1, 1, 1, 1)), ("conv2d", (30, 30, 32), NO_PADS),
         ("maxpool2d", (15, 15, 32), NO_PADS),
         ("conv2d", (15, 15, 64), Pads(1, 1, 1, 1)), ("conv2d", (13, 13, 64), NO_PADS),
         ("maxpool2d", (6, 6, 64), NO_PADS)],  # floor(13 / 2): 'valid' drops the last row and column
        6 * 6 * 64,
    ),
    "cnn-cifar100": (
        [("conv2d", (32, 32, 128), Pads(1, 1, 1, 1)), ("conv2d", (30, 30, 128), NO_PADS),
         ("maxpool2d", (15, 15, 128), NO_PADS),
         ("conv2d", (15, 15, 256), Pads(1, 1, 1, 1)), ("conv2d", (13, 13, 256), NO_PADS),
         ("maxpool2d", (6, 6, 256), NO_PADS),
         ("conv2d", (6, 6, 512), Pads(1, 1, 1, 1)), ("conv2d", (4, 4, 512), NO_PADS),
         ("maxpool2d", (2, 2, 512), NO_PADS)],
        2 * 2 * 512,
    ),
    # 5x5 'same' convolutions (2 on every side); 2x2 'same' pools alternating stride 2 (no padding
    # needed on an even size) and stride 1, where TensorFlow's rule adds one row and one column
    # after (bottom, right): asymmetric, so a framework with symmetric padding only pads by hand.
    "cnn-svhn": (
        [("conv2d", (32, 32, 48), Pads(2, 2, 2, 2)), ("maxpool2d", (16, 16, 48), NO_PADS),
         ("conv2d", (16, 16, 64), Pads(2, 2, 2, 2)), ("maxpool2d", (16, 16, 64), Pads(0, 1, 0, 1)),
         ("conv2d", (16, 16, 128), Pads(2, 2, 2, 2)), ("maxpool2d", (8, 8, 128), NO_PADS),
         ("conv2d", (8, 8, 160), Pads(2, 2, 2, 2)), ("maxpool2d", (8, 8, 160), Pads(0, 1, 0, 1)),
         ("conv2d", (8, 8, 192), Pads(2, 2, 2, 2)), ("maxpool2d", (4, 4, 192), NO_PADS),
         ("conv2d", (4, 4, 192), Pads(2, 2, 2, 2)), ("maxpool2d", (4, 4, 192), Pads(0, 1, 0, 1)),
         ("conv2d", (4, 4, 192), Pads(2, 2, 2, 2)), ("maxpool2d", (2, 2, 192), NO_PADS),
         ("conv2d", (2, 2, 192), Pads(2, 2, 2, 2)), ("maxpool2d", (2, 2, 192), Pads(0, 1, 0, 1))],
        2 * 2 * 192,
    ),
    # Shi et al.'s AlexNet-R: 5x5 'same' convolutions, 3x3 stride-2 pools without padding (floor: 32 -> 15 -> 7 -> 3).
    "alexnet-r-cifar10": (
        [("conv2d", (32, 32, 32), Pads(2, 2, 2, 2)), ("maxpool2d", (15, 15, 32), NO_PADS),
         ("conv2d", (15, 15, 32), Pads(2, 2, 2, 2)), ("maxpool2d", (7, 7, 32), NO_PADS),
         ("conv2d", (7, 7, 64), Pads(2, 2, 2, 2)), ("avgpool2d", (3, 3, 64), NO_PADS)],
        3 * 3 * 64,
    ),
    # Shams et al.'s Caffe LeNet: 5x5 'valid' convolutions, 2x2 pools on even sizes (Caffe's ceil = floor here).
    "lenet-mnist": (
        [("conv2d", (24, 24, 20), NO_PADS), ("maxpool2d", (12, 12, 20), NO_PADS),
         ("conv2d", (8, 8, 50), NO_PADS), ("maxpool2d", (4, 4, 50), NO_PADS)],
        4 * 4 * 50,
    ),
    # Shams et al.'s Caffe "quick" ConvNet: 3x3 stride-2 'same' pools give Caffe's rounded-up 16, 8, 4.
    "convnet-cifar10": (
        [("conv2d", (32, 32, 32), Pads(2, 2, 2, 2)), ("maxpool2d", (16, 16, 32), Pads(0, 1, 0, 1)),
         ("conv2d", (16, 16, 32), Pads(2, 2, 2, 2)), ("avgpool2d", (8, 8, 32), Pads(0, 1, 0, 1)),
         ("conv2d", (8, 8, 64), Pads(2, 2, 2, 2)), ("avgpool2d", (4, 4, 64), Pads(0, 1, 0, 1))],
        4 * 4 * 64,
    ),
    # Shi et al.'s AlexNet-S (convnet-benchmarks): a 'valid' conv1 11x11 stride 4 over 227 gives the script's 55
    # (224 padded by 2 on every side, of which it reads 227); then 'same' 5x5 and 3x3 convs, 3/2 pools: 27, 13, 6.
    "alexnet-s-synthetic": (
        [("conv2d", (55, 55, 64), NO_PADS), ("maxpool2d", (27, 27, 64), NO_PADS),
         ("conv2d", (27, 27, 192), Pads(2, 2, 2, 2)), ("maxpool2d", (13, 13, 192), NO_PADS),
         ("conv2d", (13, 13, 384), Pads(1, 1, 1, 1)), ("conv2d", (13, 13, 256), Pads(1, 1, 1, 1)),
         ("conv2d", (13, 13, 256), Pads(1, 1, 1, 1)), ("maxpool2d", (6, 6, 256), NO_PADS)],
        6 * 6 * 256,
    ),
    # Shams et al.'s bvlc_alexnet (one tower): 'valid' conv1 11x11/4 over 227 gives 55; 3/2 pools on 55, 27 and 13
    # are exact (Caffe's ceil = floor): 27, 13, 6.
    "alexnet-shams-synthetic": (
        [("conv2d", (55, 55, 96), NO_PADS), ("maxpool2d", (27, 27, 96), NO_PADS),
         ("conv2d", (27, 27, 256), Pads(2, 2, 2, 2)), ("maxpool2d", (13, 13, 256), NO_PADS),
         ("conv2d", (13, 13, 384), Pads(1, 1, 1, 1)), ("conv2d", (13, 13, 384), Pads(1, 1, 1, 1)),
         ("conv2d", (13, 13, 256), Pads(1, 1, 1, 1)), ("maxpool2d", (6, 6, 256), NO_PADS)],
        6 * 6 * 256,
    ),
    # Shams et al.'s VGG-19 (configuration E): 3x3 'same' convs (pad 1), 2x2/2 pools 224 -> 112 -> 56 -> 28 -> 14 -> 7.
    "vgg19-synthetic": (
        [("conv2d", (224, 224, 64), Pads(1, 1, 1, 1))] * 2 + [("maxpool2d", (112, 112, 64), NO_PADS)]
        + [("conv2d", (112, 112, 128), Pads(1, 1, 1, 1))] * 2 + [("maxpool2d", (56, 56, 128), NO_PADS)]
        + [("conv2d", (56, 56, 256), Pads(1, 1, 1, 1))] * 4 + [("maxpool2d", (28, 28, 256), NO_PADS)]
        + [("conv2d", (28, 28, 512), Pads(1, 1, 1, 1))] * 4 + [("maxpool2d", (14, 14, 512), NO_PADS)]
        + [("conv2d", (14, 14, 512), Pads(1, 1, 1, 1))] * 4 + [("maxpool2d", (7, 7, 512), NO_PADS)],
        7 * 7 * 512,
    ),
    # Wu et al.'s TensorFlow CIFAR-10 tutorial on whole 32 x 32 images: 5x5 'same' convs, 3/2 'same' pools (the one
    # padded row and column after): 32 -> 16 -> 8. Its lrn layers have no window over the image (no pads).
    "wu-tf-cifar10": (
        [("conv2d", (32, 32, 64), Pads(2, 2, 2, 2)), ("maxpool2d", (16, 16, 64), Pads(0, 1, 0, 1)),
         ("conv2d", (16, 16, 64), Pads(2, 2, 2, 2)), ("maxpool2d", (8, 8, 64), Pads(0, 1, 0, 1))],
        8 * 8 * 64,
    ),
    # ilkarman's CIFAR-10 CNN: 3x3 convolutions with padding 1 ('same'), 2x2 pools on even sizes: 32 -> 16 -> 8.
    "cnn-cifar10-ilkarman": (
        [("conv2d", (32, 32, 50), Pads(1, 1, 1, 1)), ("conv2d", (32, 32, 50), Pads(1, 1, 1, 1)),
         ("maxpool2d", (16, 16, 50), NO_PADS),
         ("conv2d", (16, 16, 100), Pads(1, 1, 1, 1)), ("conv2d", (16, 16, 100), Pads(1, 1, 1, 1)),
         ("maxpool2d", (8, 8, 100), NO_PADS)],
        8 * 8 * 100,
    ),
    # TensorFlow's MNIST tutorial: 5x5 'same' (2 on every side), 'same' 2/2 pools on even sizes need no padding.
    "wu-tf-mnist": (
        [("conv2d", (28, 28, 32), Pads(2, 2, 2, 2)), ("maxpool2d", (14, 14, 32), NO_PADS),
         ("conv2d", (14, 14, 64), Pads(2, 2, 2, 2)), ("maxpool2d", (7, 7, 64), NO_PADS)],
        7 * 7 * 64,
    ),
    # Theano's LeNet: 'valid' 5x5 convolutions and 2/2 pools: 28 -> 24 -> 12 -> 8 -> 4.
    "wu-theano-lenet": (
        [("conv2d", (24, 24, 20), NO_PADS), ("maxpool2d", (12, 12, 20), NO_PADS),
         ("conv2d", (8, 8, 50), NO_PADS), ("maxpool2d", (4, 4, 50), NO_PADS)],
        4 * 4 * 50,
    ),
    # The Theano CIFAR-10 tutorial: 'valid' 3x3 convolutions, pools 3/3 then 2/2: 32 -> 30 -> 10 -> 8 -> 4.
    "wu-theano-cifar10": (
        [("conv2d", (30, 30, 4), NO_PADS), ("maxpool2d", (10, 10, 4), NO_PADS),
         ("conv2d", (8, 8, 8), NO_PADS), ("maxpool2d", (4, 4, 8), NO_PADS)],
        4 * 4 * 8,
    ),
}


def _broken(name: str, change) -> dict:
    spec = copy.deepcopy(specs.load(name))
    change(spec)
    return spec


# -- every shipped spec ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", MODEL_SPECS)
def test_every_shipped_spec_is_planned(name):
    model = modelplan.plan(specs.load(name))
    if model.kind in (modelplan.FEATURES, modelplan.DETECTION):  # no classifier layer: the head ends with a vector
        assert model.layers[-1].output.kind == modelplan.VECTOR  # (tests/bench/test_inference.py, detection/)
    else:
        assert model.layers[-1].type == "dense" and model.layers[-1]["activation"] is None
    stacks = (model.encoder, model.layers)
    if model.kind == modelplan.DETECTION:  # two stacks, the RoI op between them (bench/detection/detector.py)
        planned = detector.plan(specs.load(name))
        stacks = (planned.trunk, planned.head)
        assert list(map(repr, model.layers)) == list(map(repr, planned.trunk + planned.head))
    for stack in stacks:
        for i, layer in enumerate(stack or []):
            assert layer.index == i
            if i:  # shapes chain: each layer reads what the one before it gives
                assert layer.input == stack[i - 1].output
            assert (layer.pads is not None) == (layer.type in modelplan.WINDOWED), layer
    assert model.all_layers == (model.encoder or []) + model.layers


def test_every_shipped_cnn_spec_has_its_windows_listed():
    assert sorted(WINDOWS) == sorted(CNN_SPECS)


@pytest.mark.parametrize("name", CNN_SPECS)
def test_cnn_output_shapes_and_pads(name):
    model = modelplan.plan(specs.load(name))
    windows, flat = WINDOWS[name]
    assert model.layers[0].input == Shape(IMAGE, model.input_shape)
    planned = [(layer.type, layer.output.dims, layer.pads) for layer in model.layers if layer.pads is not None]
    assert planned == windows
    flatten = next(layer for layer in model.layers if layer.type == "flatten")
    assert flatten.output == Shape(VECTOR, (flat,))
    first_dense = next(layer for layer in model.layers if layer.type == "dense")
    assert first_dense.input.features == flatten.output.size == flatten.input.size == flat
    assert model.layers[-1].output == Shape(VECTOR, (specs.load(name)["model"]["num_classes"],))


def test_cnn_mnist_flattens_to_9216():
    model = modelplan.plan(specs.load("cnn-mnist"))
    flatten = next(layer for layer in model.layers if layer.type == "flatten")
    assert flatten.input == Shape(IMAGE, (12, 12, 64)) and flatten.output.features == 9216


def test_cnn_svhn_same_pools_with_stride_1_are_asymmetric():
    model = modelplan.plan(specs.load("cnn-svhn"))
    pools = [layer for layer in model.layers if layer.type == "maxpool2d"]
    assert [layer["stride"] for layer in pools] == [2, 1] * 4
    assert all(layer["padding"] == "same" for layer in pools)
    # Stride 1 keeps the size: one extra row and column, after (TensorFlow's rule).
    assert [layer.pads.symmetric for layer in pools] == [True, False] * 4
    assert all(layer.pads == Pads(0, 1, 0, 1) for layer in pools if layer["stride"] == 1)
    assert all(layer.input.dims == layer.output.dims for layer in pools if layer["stride"] == 1)


def test_sequence_shapes():
    imdb = modelplan.plan(specs.load("lstm-imdb"))
    assert [layer.output for layer in imdb.layers] == [
        Shape(SEQUENCE, (32,)), Shape(VECTOR, (100,)), Shape(VECTOR, (1,))]
    assert imdb.layers[0].input == Shape(TOKENS, ()) and imdb.input_shape is None
    ptb = modelplan.plan(specs.load("lstm-ptb"))
    assert ptb.layers[-1].input == Shape(SEQUENCE, (1024,))  # the dense runs at every step
    assert ptb.layers[-1].output == Shape(SEQUENCE, (10_000,))
    seq2seq = modelplan.plan(specs.load("seq2seq-manythings"))
    assert seq2seq.encoder[-1].output == Shape(VECTOR, (256,))  # its final state starts the decoder
    assert seq2seq.layers[0].input == Shape(TOKENS, ())
    assert seq2seq.layers[-1].output == Shape(SEQUENCE, (10_000,))


def test_layers_read_like_the_spec_with_defaults():
    model = modelplan.plan(specs.load("cnn-mnist"))
    conv, pool = model.layers[0], model.layers[2]
    assert conv["filters"] == 32 and conv.get("activation") == "relu" and conv["stride"] == 1
    assert conv.get("no such key", "default") == "default"
    assert pool.type == "maxpool2d" and pool["stride"] == pool["pool"]  # stride None = the pool size
    assert "conv2d" in repr(conv) and "(26, 26, 32)" in repr(conv)


# -- the 'same' rule -------------------------------------------------------------------------------
@pytest.mark.parametrize(("size", "kernel", "stride", "padding", "expected"), [
    (28, 3, 1, "valid", (26, 0, 0)),
    (13, 2, 2, "valid", (6, 0, 0)),  # floor
    (32, 3, 1, "same", (32, 1, 1)),
    (32, 5, 1, "same", (32, 2, 2)),
    (16, 2, 1, "same", (16, 0, 1)),  # even window: the extra one goes after
    (32, 2, 2, "same", (16, 0, 0)),
    (9, 2, 2, "same", (5, 0, 1)),  # ceil(9 / 2)
    (17, 3, 2, "same", (9, 1, 1)),
    (20, 3, 2, "same", (10, 0, 1)),  # stride > 1: the smaller half before
    (5, 7, 1, "same", (5, 3, 3)),
])
def test_window(size, kernel, stride, padding, expected):
    assert modelplan.window(size, kernel, stride, padding) == expected


def test_shape_and_pads_helpers():
    image = Shape(IMAGE, (12, 12, 64))
    assert image.features == 64 and image.size == 9216
    assert Shape(TOKENS, ()).size == 1
    assert Pads(1, 1, 2, 2).symmetric and not Pads(0, 1, 0, 1).symmetric and not Pads(1, 1, 0, 1).symmetric


# -- what the plan refuses -------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "change", "message"), [
    # a dense layer straight on an image (the flatten removed)
    ("cnn-mnist", lambda s: s["model"]["layers"].pop(4), r"layer 4: dense needs flat input \(add a flatten; got image"),
    # a convolution on the embedding's sequence
    ("lstm-imdb", lambda s: s["model"]["layers"].insert(1, {"type": "conv2d", "filters": 4, "kernel": 3}),
     r"layer 1: conv2d needs an image input \(got sequence \(32,\)\)"),
    ("lstm-imdb", lambda s: s["model"]["layers"].insert(1, {"type": "flatten"}), "layer 1: flatten needs an image"),
    # an LSTM on a flat vector
    ("cnn-mnist", lambda s: s["model"]["layers"].insert(5, {"type": "lstm", "units": 8}),
     r"layer 5: lstm needs a sequence input \(got vector \(9216,\)\)"),
    # pools that shrink the image to nothing
    ("cnn-mnist", lambda s: s["model"]["layers"][2].update(pool=30), "layer 2: maxpool2d leaves no output"),
    ("cnn-mnist", lambda s: s["model"]["layers"][0].update(kernel=29), "layer 0: conv2d leaves no output"),
    ("cnn-mnist", lambda s: s["model"]["layers"][0].update(padding="full"), "padding must be 'valid' or 'same'"),
    ("cnn-mnist", lambda s: s["model"]["layers"][0].update(dilation=2), r"unknown keys \['dilation'\]"),
    ("cnn-mnist", lambda s: s["model"]["layers"][0].pop("filters"), r"missing \['filters'\]"),
    ("cnn-mnist", lambda s: s["model"]["layers"].insert(0, {"type": "conv3d"}), "unsupported type 'conv3d'"),
    ("cnn-mnist", lambda s: s["model"]["layers"][0].update(activation="softmax"), "only allowed on the output"),
    ("cnn-mnist", lambda s: s["model"]["layers"][-1].update(units=7), "the output layer has 7 units"),
    ("cnn-mnist", lambda s: s["model"]["layers"][-1].update(activation="sigmoid"), "dense with activation softmax"),
    ("cnn-mnist", lambda s: s["training"].update(loss="hinge"), "unsupported loss 'hinge'"),
])
def test_spec_errors(name, change, message):
    with pytest.raises(SpecError, match=message):
        modelplan.plan(_broken(name, change))


def test_language_model_predicts_every_step():
    model = modelplan.plan(specs.load("lstm-ptb"))
    assert model.kind == "sequence" and model.encoder is None
    assert model.lstm_units == [1024, 1024]
    broken = _broken("lstm-ptb", lambda s: s["model"]["layers"][3].update(return_sequences=False))
    with pytest.raises(SpecError, match="return_sequences"):
        modelplan.plan(broken)


def test_encoder_decoder_hands_over_one_state():
    model = modelplan.plan(specs.load("seq2seq-manythings"))
    assert [layer.type for layer in model.encoder] == ["embedding", "lstm"]
    assert model.encoder[-1]["use_lengths"] and model.lstm_units == [256, 256]
    assert [layer["initial_state"] for layer in model.layers if layer.type == "lstm"] == ["encoder"]
    for change, message in (
        (lambda s: s["model"]["layers"][1].update(initial_state=None), "exactly one decoder LSTM"),
        (lambda s: s["model"]["layers"][1].update(units=128), "exactly one decoder LSTM"),
        (lambda s: s["model"]["layers"][1].update(initial_state="zeros"), "may only be"),
        (lambda s: s["model"]["encoder"][1].update(return_sequences=True), "encoder must end"),
        (lambda s: s["model"].update(architecture="stack"), "needs architecture"),
        (lambda s: s["model"].update(architecture="tree"), "unsupported architecture"),
    ):
        with pytest.raises(SpecError, match=message):
            modelplan.plan(_broken("seq2seq-manythings", change))


# -- the residual vocabulary: batchnorm, activation, avgpool2d, global_avgpool, residual --------------
def _image_spec(layers: list, input_shape=(32, 32, 3), num_classes: int = 10) -> dict:
    """A minimal image classification spec around `layers` (global average pool and dense output added)."""
    return {"training": {"loss": "categorical_crossentropy"},
            "model": {"input_shape": list(input_shape), "num_classes": num_classes,
                      "layers": [*layers, {"type": "global_avgpool"}, {"type": "dense", "units": num_classes}]}}


def _block(filters: int, stride: int = 1, padding: str = "same", **keys) -> dict:
    """A basic block: conv-BN-ReLU-conv-BN branch, ReLU after the add."""
    return {"type": "residual", "activation": "relu", **keys, "layers": [
        {"type": "conv2d", "filters": filters, "kernel": 3, "stride": stride, "padding": padding, "bias": False},
        {"type": "batchnorm"}, {"type": "activation", "activation": "relu"},
        {"type": "conv2d", "filters": filters, "kernel": 3, "padding": padding, "bias": False},
        {"type": "batchnorm"}]}


def test_batchnorm_activation_and_global_pool_keep_or_flatten_shapes():
    model = modelplan.plan(_image_spec([{"type": "conv2d", "filters": 8, "kernel": 3, "bias": False},
                                        {"type": "batchnorm"}, {"type": "activation", "activation": "relu"}]))
    conv, norm, act, pool, dense = model.layers
    assert conv["bias"] is False and modelplan.plan(specs.load("cnn-mnist")).layers[0]["bias"] is True
    assert norm["momentum"] == 0.9 and norm["epsilon"] == 1e-5  # Keras' convention, PyTorch's defaults
    assert norm.output == act.output == conv.output == Shape(IMAGE, (30, 30, 8))
    assert pool.output == Shape(VECTOR, (8,)) and dense.input == Shape(VECTOR, (8,))
    assert norm.pads is None and pool.pads is None
    # batchnorm on a vector (after the pool) normalizes its features
    vector = modelplan.plan(_image_spec([])).layers[0].output
    spec = _image_spec([])
    spec["model"]["layers"][1:1] = [{"type": "dense", "units": 4}, {"type": "batchnorm", "momentum": 0.99}]
    assert modelplan.plan(spec).layers[2].output == Shape(VECTOR, (4,)) and vector == Shape(VECTOR, (3,))


@pytest.mark.parametrize(("size", "pool", "stride", "padding", "out", "pads", "counts"), [
    (16, 3, 2, "same", 8, (0, 1), [3] * 7 + [2]),  # asymmetric: the last window covers 2 real rows
    (9, 3, 2, "same", 5, (1, 1), [2, 3, 3, 3, 2]),  # symmetric: both edge windows cover 2
    (7, 2, 1, "same", 7, (0, 1), [2] * 6 + [1]),
    (32, 3, 2, "valid", 15, (0, 0), [3] * 15),  # floor, no padding: every window whole
])
def test_avgpool2d_shapes_pads_and_real_value_counts(size, pool, stride, padding, out, pads, counts):
    spec = _image_spec([{"type": "avgpool2d", "pool": pool, "stride": stride, "padding": padding}], (size, size, 2))
    layer = modelplan.plan(spec).layers[0]
    assert layer.output == Shape(IMAGE, (out, out, 2))
    assert layer.pads == Pads(pads[0], pads[1], pads[0], pads[1])
    assert modelplan.pool_counts(layer) == (counts, counts)
    no_stride = _image_spec([{"type": "avgpool2d", "pool": 2}], (size, size, 2))
    assert modelplan.plan(no_stride).layers[0]["stride"] == 2  # stride None = the pool size, as maxpool2d


def test_resnet56_is_planned_block_by_block():
    model = modelplan.plan(specs.load("resnet56-cifar10"))
    blocks = [layer for layer in model.layers if layer.type == "residual"]
    assert len(blocks) == 27 and len(model.layers) == 3 + 27 + 2  # repeat = 9 gives nine planned blocks
    assert [layer.index for layer in model.layers] == list(range(32))
    assert [b.output.dims for b in blocks[::9]] == [(32, 32, 16), (16, 16, 32), (8, 8, 64)]
    projections = [i for i, b in enumerate(blocks) if b.shortcut]
    assert projections == [9, 18]  # only where the shape changes
    for b in blocks:
        assert [layer.input for layer in b.branch[1:]] == [layer.output for layer in b.branch[:-1]]
        assert b.branch[0].input == b.input and b.branch[-1].output == b.output
    conv, norm = blocks[9].shortcut
    assert (conv["kernel"], conv["stride"], conv["filters"], conv["bias"], conv.pads) == (1, 2, 32, False, NO_PADS)
    assert norm.type == "batchnorm" and norm["epsilon"] == 2e-5  # the branch's batchnorm settings
    assert blocks[9].branch[0]["stride"] == 2 and blocks[9].branch[0].pads == Pads(0, 1, 0, 1)
    assert all(b.branch[0]["stride"] == 1 for b in blocks[10:18])  # the repeats keep the shape
    assert model.layers[-2].output == Shape(VECTOR, (64,))
    flat = model.flat_layers
    assert sum(layer.type == "conv2d" for layer in flat) == 1 + 54 + 2 and flat[:3] == model.layers[:3]


def test_resnet56_has_the_hand_counted_parameters():
    # Hand count (no conv biases; batchnorm gamma and beta): stem conv 3x3x3x16 + BN 2x16; stage 1: nine blocks
    # of two 3x3x16x16 convs + two BNs; stage 2: 3x3x16x32 + 3x3x32x32 + 2 BNs + projection 16x32 + BN, then
    # eight blocks of two 3x3x32x32; stage 3 likewise with 64; dense 64x10 + 10.
    stage1 = 9 * (2 * 9 * 16 * 16 + 2 * 32)
    stage2 = (9 * 16 * 32 + 9 * 32 * 32 + 2 * 64 + 16 * 32 + 64) + 8 * (2 * 9 * 32 * 32 + 2 * 64)
    stage3 = (9 * 32 * 64 + 9 * 64 * 64 + 2 * 128 + 32 * 64 + 128) + 8 * (2 * 9 * 64 * 64 + 2 * 128)
    hand = 9 * 3 * 16 + 32 + stage1 + stage2 + stage3 + 64 * 10 + 10
    assert hand == 855_770  # He et al.: 0.85M
    assert trainable(modelplan.plan(specs.load("resnet56-cifar10")).layers) == hand


def test_identity_shortcut_needs_a_branch_that_keeps_the_shape():
    model = modelplan.plan(_image_spec([_block(3, repeat=2, shortcut="identity")]))
    assert [b.shortcut for b in model.layers[:2]] == [[], []]
    with pytest.raises(SpecError, match=r"layer 0: the residual branch gives image \(16, 16, 8\) but the identity "
                                        r"shortcut keeps \(32, 32, 3\); use shortcut = \"projection\""):
        modelplan.plan(_image_spec([_block(8, stride=2, shortcut="identity")]))


@pytest.mark.parametrize(("layers", "message"), [
    # 'valid' convs shrink the branch to 28 x 28; a strided 1x1 projection cannot follow
    ([_block(8, padding="valid")],
     r"layer 0: the projection shortcut gives \(32, 32, 8\) .* branch gives \(28, 28, 8\)"),
    # a pool in the branch keeps its stride in every repeat: the second block would halve the image again
    ([{"type": "residual", "repeat": 2, "layers": [{"type": "maxpool2d", "pool": 2}]}],
     r"layer 0 \(repeat 2\): a repeated residual block must keep its shape \(16, 16, 3\)"),
    ([{"type": "residual", "layers": [_block(3)]}], "a branch holds image layers only"),
    ([{"type": "residual", "layers": [{"type": "flatten"}]}], "a branch holds image layers only"),
    ([{"type": "residual", "layers": []}], "layers must be a non-empty list"),
    ([{"type": "residual"}], r"missing \['layers'\]"),
    ([_block(3, shortcut="zeros")], "shortcut must be one of identity, projection"),
    ([_block(3, repeat=0)], "repeat must be a whole number >= 1"),
    ([_block(3, activation="softmax")], "only allowed on the output layer"),
    ([{"type": "residual", "layers": [{"type": "conv2d", "filters": 3, "kernel": 3, "padding": "same",
                                       "dilation": 2}]}], r"layer 0 branch layer 0 \(conv2d\): unknown keys"),
    ([{"type": "activation"}], "name the nonlinearity"),
    ([{"type": "batchnorm", "momentum": 1.0}], r"momentum must be in \[0, 1\) \(Keras' convention"),
    ([{"type": "avgpool2d", "pool": 40}], "layer 0: avgpool2d leaves no output"),
])
def test_residual_vocabulary_errors(layers, message):
    with pytest.raises(SpecError, match=message):
        modelplan.plan(_image_spec(layers))


def test_residual_and_batchnorm_need_their_inputs():
    spec = _image_spec([])
    spec["model"]["layers"][1:1] = [_block(3)]  # after the global pool: a vector
    with pytest.raises(SpecError, match=r"layer 1: residual needs an image input \(got vector \(3,\)\)"):
        modelplan.plan(spec)
    imdb = _broken("lstm-imdb", lambda s: s["model"]["layers"].insert(1, {"type": "batchnorm"}))
    with pytest.raises(SpecError, match="layer 1: batchnorm needs an image or a vector input"):
        modelplan.plan(imdb)
    with pytest.raises(SpecError, match="layer 1: global_avgpool needs an image"):
        modelplan.plan(_broken("lstm-imdb", lambda s: s["model"]["layers"].insert(1, {"type": "global_avgpool"})))


# -- concat: parallel branches stacked on channels (GoogLeNet's Inception modules) --------------------
def _inception(a: int, b: int, c: int, d: int, e: int, f: int, stride: int = 1) -> dict:
    """An Inception module: 1x1 a | 1x1 b -> 3x3 c | 1x1 d -> 5x5 e | max 3x3/1 -> 1x1 f."""
    return {"type": "concat", "branches": [
        [{"type": "conv2d", "filters": a, "kernel": 1, "stride": stride, "activation": "relu"}],
        [{"type": "conv2d", "filters": b, "kernel": 1, "activation": "relu"},
         {"type": "conv2d", "filters": c, "kernel": 3, "stride": stride, "padding": "same", "activation": "relu"}],
        [{"type": "conv2d", "filters": d, "kernel": 1, "activation": "relu"},
         {"type": "conv2d", "filters": e, "kernel": 5, "stride": stride, "padding": "same", "activation": "relu"}],
        [{"type": "maxpool2d", "pool": 3, "stride": stride, "padding": "same"},
         {"type": "conv2d", "filters": f, "kernel": 1, "activation": "relu"}]]}


def test_concat_stacks_its_branches_channels_at_the_inputs_size():
    model = modelplan.plan(_image_spec([_inception(64, 96, 128, 16, 32, 32)], (28, 28, 192)))
    block = model.layers[0]
    assert (block.type, block.input, block.output) == ("concat", Shape(IMAGE, (28, 28, 192)),
                                                       Shape(IMAGE, (28, 28, 64 + 128 + 32 + 32)))
    assert block.pads is None and block.branch is None and len(block.branches) == 4
    for branch in block.branches:  # each branch planned from the concat's input, its layers chained
        assert branch[0].input == block.input and branch[-1].output.dims[:2] == (28, 28)
        assert [layer.input for layer in branch[1:]] == [layer.output for layer in branch[:-1]]
    assert [layer.pads for layer in block.branches[2]] == [NO_PADS, Pads(2, 2, 2, 2)]  # 5x5 'same'
    assert block.branches[3][0].pads == Pads(1, 1, 1, 1)  # the 3x3/1 pool keeps 28 x 28
    assert model.layers[1].input == block.output and [layer.index for layer in model.layers] == [0, 1, 2]
    # Szegedy et al.'s inception (3a): 1x1 192x64, 1x1 192x96 + 3x3 96x128, 1x1 192x16 + 5x5 16x32, 1x1 192x32.
    hand = (192 * 64 + 64) + (192 * 96 + 96) + (9 * 96 * 128 + 128) + (192 * 16 + 16) + (25 * 16 * 32 + 32) + (
        192 * 32 + 32)
    assert trainable([block]) == hand == 163_696
    flat = model.flat_layers
    assert flat[0] is block and sum(layer.type == "conv2d" for layer in flat) == 6


def test_concat_branches_agree_on_height_and_width_with_equal_strides():
    model = modelplan.plan(_image_spec([_inception(8, 8, 8, 8, 8, 8, stride=2)], (15, 15, 3)))
    assert model.layers[0].output == Shape(IMAGE, (8, 8, 32))  # every branch: ceil(15 / 2)


@pytest.mark.parametrize(("layers", "message"), [
    # a 'valid' 3x3 shrinks its branch to 26 x 26 while the 1x1 keeps 28 x 28
    ([{"type": "concat", "branches": [[{"type": "conv2d", "filters": 4, "kernel": 1}],
                                      [{"type": "conv2d", "filters": 4, "kernel": 3}]]}],
     r"layer 0 \(concat\): the branches' outputs differ in height x width \(branch 0: \(28, 28, 4\), branch 1: "
     r"\(26, 26, 4\)\); give every branch the same strides and 'same' padding"),
    ([{"type": "concat", "branches": [[{"type": "conv2d", "filters": 4, "kernel": 1, "stride": 2}],
                                      [{"type": "maxpool2d", "pool": 3, "stride": 1, "padding": "same"}]]}],
     r"differ in height x width \(branch 0: \(14, 14, 4\), branch 1: \(28, 28, 3\)\)"),
    ([{"type": "concat", "branches": [[{"type": "conv2d", "filters": 4, "kernel": 1}]]}],
     "branches must be a list of two or more non-empty layer lists"),
    ([{"type": "concat", "branches": [[{"type": "conv2d", "filters": 4, "kernel": 1}], []]}],
     "branches must be a list of two or more non-empty layer lists"),
    ([{"type": "concat"}], r"missing \['branches'\]"),
    ([{"type": "concat", "branches": [[{"type": "flatten"}], [{"type": "flatten"}]]}],
     r"layer 0 \(concat\): a branch holds image layers only"),
    ([{"type": "concat", "branches": [[_block(3)], [_block(3)]]}], "a branch holds image layers only"),
    ([{"type": "residual", "layers": [_inception(1, 1, 1, 1, 1, 1)]}], "a branch holds image layers only"),
    ([{"type": "concat", "branches": [[{"type": "conv2d", "filters": 4, "kernel": 1, "groups": 2}],
                                      [{"type": "conv2d", "filters": 4, "kernel": 1}]]}],
     r"layer 0 branch 0 layer 0 \(conv2d\): unknown keys \['groups'\]"),
    ([_inception(1, 1, 1, 1, 1, 1) | {"branches": [[{"type": "conv2d", "filters": 4, "kernel": 1,
                                                     "activation": "softmax"}]] * 2}],
     "only allowed on the output layer"),
])
def test_concat_errors(layers, message):
    with pytest.raises(SpecError, match=message):
        modelplan.plan(_image_spec(layers, (28, 28, 3)))


def test_concat_needs_an_image_input():
    spec = _image_spec([])
    spec["model"]["layers"][1:1] = [_inception(1, 1, 1, 1, 1, 1)]  # after the global pool: a vector
    with pytest.raises(SpecError, match=r"layer 1: concat needs an image input \(got vector \(3,\)\)"):
        modelplan.plan(spec)


def test_a_module_of_dlbenchs_layers_only_names_what_it_does_not_translate():
    paper = DLBENCH_LAYER_TYPES
    assert modelplan.untranslated(modelplan.plan(specs.load("cnn-mnist")), paper) == []
    resnet = modelplan.plan(specs.load("resnet56-cifar10"))
    missing = ["activation", "batchnorm", "global_avgpool", "residual", "conv2d with bias = false"]
    assert modelplan.untranslated(resnet, paper) == missing
    with pytest.raises(SpecError, match=r"^pytorch \(paper era\) does not translate activation, batchnorm, "
                                        r"global_avgpool, residual, conv2d with bias = false \(only conv2d, "):
        modelplan.require(resnet, paper, "pytorch (paper era)")
    modelplan.require(resnet, tuple(modelplan.LAYER_KEYS), "current", no_bias=True)  # the current era: all of it
    googlenet = modelplan.plan(specs.load("googlenet-synthetic"))
    assert modelplan.untranslated(googlenet, paper) == ["concat", "global_avgpool"]
    with pytest.raises(SpecError, match=r"^chainer \(paper era\) does not translate concat, global_avgpool "):
        modelplan.require(googlenet, paper, "chainer (paper era)")


# -- gru -------------------------------------------------------------------------------------------
def _gru_spec(gru: dict, loss: str = "categorical_crossentropy", units: int = 3) -> dict:
    """Embedding 50 x 8 -> gru -> dense `units` (a stack over token ids)."""
    layers = [{"type": "embedding", "input_dim": 50, "output_dim": 8}, {"type": "gru", **gru},
              {"type": "dense", "units": units}]
    return {"model": {"num_classes": 3, "layers": layers}, "training": {"loss": loss}}


def test_a_gru_maps_a_sequence_to_its_last_state_or_every_state_with_cudnn_parameters():
    last = modelplan.plan(_gru_spec({"units": 6}))
    gru = last.layers[1]
    assert (gru.input, gru.output) == (Shape(SEQUENCE, (8,)), Shape(VECTOR, (6,)))
    assert (gru["return_sequences"], gru.get("use_lengths")) == (False, None)  # no real lengths: every step
    # 3 gate sets, each 8 x 6 input kernel + 6 x 6 recurrent kernel + two bias vectors of 6 (reset_after).
    assert modelplan.gru_params(gru) == 3 * (8 * 6 + 6 * 6 + 6 + 6) == 288
    every = modelplan.plan(_gru_spec({"units": 6, "return_sequences": True}, "sparse_categorical_crossentropy",
                                     units=3))
    assert every.layers[1].output == Shape(SEQUENCE, (6,)) and every.layers[2].output == Shape(SEQUENCE, (3,))
    assert modelplan.plan(specs.load("gru-imdb")).layers[1].output == Shape(VECTOR, (100,))


@pytest.mark.parametrize(("gru", "loss", "message"), [
    ({}, "categorical_crossentropy", r"layer 1 \(gru\): missing \['units'\]"),
    ({"units": 4, "use_lengths": True}, "categorical_crossentropy", r"layer 1 \(gru\): unknown keys \['use_lengths'\]"),
    ({"units": 4}, "sparse_categorical_crossentropy", "every GRU needs return_sequences = true"),
])
def test_gru_errors(gru, loss, message):
    with pytest.raises(SpecError, match=message):
        modelplan.plan(_gru_spec(gru, loss))


def test_a_gru_needs_a_sequence_and_the_paper_era_refuses_it():
    spec = _gru_spec({"units": 4})
    spec["model"]["layers"].pop(0)  # token ids straight into the gru
    with pytest.raises(SpecError, match=r"layer 0: gru needs a sequence input \(got tokens \(\)\)"):
        modelplan.plan(spec)
    model = modelplan.plan(specs.load("gru-imdb"))
    assert modelplan.untranslated(model, DLBENCH_LAYER_TYPES) == ["gru"]
    with pytest.raises(SpecError, match=r"^keras \(paper era\) does not translate gru "):
        modelplan.require(model, DLBENCH_LAYER_TYPES, "keras (paper era)")
