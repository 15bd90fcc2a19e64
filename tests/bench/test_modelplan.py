"""The model plan (bench/modelplan.py): every spec's layers validated, with shapes and padding worked out once."""

from __future__ import annotations

import copy

import pytest

from bench import modelplan
from bench.modelplan import IMAGE, SEQUENCE, TOKENS, VECTOR, Pads, Shape, SpecError
from campaign import specs

CNN_SPECS = [name for name in specs.known_workloads() if specs.load(name)["family"] == "cnn"]
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
        [("conv2d", (32, 32, 128), Pads(1, 1, 1, 1)), ("conv2d", (32, 32, 128), Pads(1, 1, 1, 1)),
         ("maxpool2d", (16, 16, 128), NO_PADS),
         ("conv2d", (16, 16, 256), Pads(1, 1, 1, 1)), ("conv2d", (16, 16, 256), Pads(1, 1, 1, 1)),
         ("maxpool2d", (8, 8, 256), NO_PADS),
         ("conv2d", (8, 8, 512), Pads(1, 1, 1, 1)), ("conv2d", (8, 8, 512), Pads(1, 1, 1, 1)),
         ("maxpool2d", (4, 4, 512), NO_PADS)],
        4 * 4 * 512,
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
}


def _broken(name: str, change) -> dict:
    spec = copy.deepcopy(specs.load(name))
    change(spec)
    return spec


# -- every shipped spec ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", specs.known_workloads())
def test_every_shipped_spec_is_planned(name):
    model = modelplan.plan(specs.load(name))
    assert model.layers[-1].type == "dense" and model.layers[-1]["activation"] is None
    for stack in (model.encoder, model.layers):
        for i, layer in enumerate(stack or []):
            assert layer.index == i
            if i:  # shapes chain: each layer reads what the one before it gives
                assert layer.input == stack[i - 1].output
            assert (layer.pads is not None) == (layer.type in ("conv2d", "maxpool2d")), layer
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
