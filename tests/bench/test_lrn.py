"""Local response normalization (`lrn` in bench/modelplan.py): the plan's TensorFlow convention, and the six
current-era framework modules computing that same function (each run for real in its environment on the inputs of
tests/bench/lrnprobe.py, held to a NumPy reference written here from TensorFlow's documented formula)."""

from __future__ import annotations

import numpy as np
import pytest

from bench import modelplan
from bench.modelplan import IMAGE, Shape, SpecError
from tests.bench import lrnprobe
from tests.bench.frameworks import check
from tests.declarations import DLBENCH_LAYER_TYPES
from tests.plancount import trainable

FRAMEWORKS = ("pytorch", "tensorflow", "keras", "mxnet", "chainer", "theano")
# float32 in every framework; the reference runs in float64.
RTOL, ATOL = 1e-5, 1e-6


def reference(x: np.ndarray, depth_radius: int, bias: float, alpha: float, beta: float) -> np.ndarray:
    """tf.nn.local_response_normalization's documented formula on an NHWC array, in float64:
    sqr_sum[a, b, c, d] = sum(x[a, b, c, d - depth_radius : d + depth_radius + 1] ** 2) (the channels that exist),
    output = x / (bias + alpha * sqr_sum) ** beta."""
    x = x.astype(np.float64)
    channels = x.shape[-1]
    out = np.empty_like(x)
    for d in range(channels):
        window = x[..., max(0, d - depth_radius) : d + depth_radius + 1]
        out[..., d] = x[..., d] / (bias + alpha * (window**2).sum(axis=-1)) ** beta
    return out


def _spec(layers: list[dict], shape: tuple[int, int, int] = (8, 8, 6)) -> dict:
    return {"model": {"input_shape": list(shape), "num_classes": 3,
                      "layers": [*layers, {"type": "flatten"}, {"type": "dense", "units": 3}]},
            "training": {"loss": "categorical_crossentropy"}}


# -- the reference itself --------------------------------------------------------------------------
def test_reference_by_hand():
    # One pixel, channels 1, 2, 3; radius 1: windows {1, 2}, {1, 2, 3}, {2, 3} (no wrap, nothing past the ends).
    x = np.array([1.0, 2.0, 3.0]).reshape(1, 1, 1, 3)
    out = reference(x, depth_radius=1, bias=1.0, alpha=0.5, beta=1.0).ravel()
    assert out == pytest.approx([1 / (1 + 0.5 * 5), 2 / (1 + 0.5 * 14), 3 / (1 + 0.5 * 13)])
    # Radius 0: each value by itself; alpha 0: x / bias ** beta.
    assert reference(x, 0, 2.0, 1.0, 0.5).ravel() == pytest.approx(x.ravel() / np.sqrt(2 + x.ravel() ** 2))
    assert reference(x, 3, 4.0, 0.0, 0.5).ravel() == pytest.approx(x.ravel() / 2)


@pytest.mark.parametrize("name", list(lrnprobe.CASES))
def test_the_probe_cases_tell_a_wrong_mapping_apart(name):
    """Each case normalizes visibly, and alpha divided by the window (PyTorch's and MXNet's own convention, had the
    module forgotten to scale it) or the window's width taken as its radius would miss the reference by far more
    than the tolerance."""
    params, _ = lrnprobe.CASES[name]
    x = lrnprobe.case_input(name)
    right = reference(x, **params)
    assert np.abs(right - x).max() > 0.05 * np.abs(x).max()
    size = 2 * params["depth_radius"] + 1
    wrongs = [dict(params, alpha=params["alpha"] / size)]
    if params["depth_radius"] < x.shape[-1] - 1:  # a wider window differs only where this one leaves channels out
        wrongs.append(dict(params, depth_radius=size))
    for wrong in wrongs:
        assert not np.allclose(reference(x, **wrong), right, rtol=RTOL * 100, atol=ATOL * 100), wrong


# -- the plan --------------------------------------------------------------------------------------
def test_lrn_keeps_the_shape_has_no_parameters_and_tensorflows_defaults():
    model = modelplan.plan(_spec([{"type": "conv2d", "filters": 6, "kernel": 3}, {"type": "lrn"}]))
    conv, lrn = model.layers[:2]
    assert lrn.type == "lrn" and lrn.input == lrn.output == conv.output == Shape(IMAGE, (6, 6, 6))
    assert lrn.pads is None
    assert {k: lrn[k] for k in ("depth_radius", "bias", "alpha", "beta")} == {
        "depth_radius": 5, "bias": 1.0, "alpha": 1.0, "beta": 0.5}  # tf.nn.local_response_normalization's
    assert modelplan.lrn_size(lrn) == 11
    assert trainable([lrn]) == 0 and trainable(model.layers) == trainable([conv, *model.layers[2:]])


def test_lrn_inside_residual_and_concat_branches():
    branch = [{"type": "conv2d", "filters": 6, "kernel": 3, "padding": "same"}, {"type": "lrn", "depth_radius": 2}]
    model = modelplan.plan(_spec([{"type": "residual", "layers": branch},
                                  {"type": "concat", "branches": [branch, [{"type": "lrn"}]]}]))
    block, concat = model.layers[:2]
    assert [sub.type for sub in block.branch] == ["conv2d", "lrn"] and block.shortcut == []
    assert concat.output.dims == (8, 8, 12)
    assert [layer.type for layer in model.flat_layers].count("lrn") == 3


def test_a_module_of_dlbenchs_layers_only_refuses_lrn_in_one_line():
    model = modelplan.plan(_spec([{"type": "lrn"}]))
    assert modelplan.untranslated(model, DLBENCH_LAYER_TYPES) == ["lrn"]
    with pytest.raises(SpecError, match=r"^theano \(paper era\) does not translate lrn \(only conv2d, .*\); run this "
                                        r"workload in the current era$"):
        modelplan.require(model, DLBENCH_LAYER_TYPES, "theano (paper era)")


@pytest.mark.parametrize(("layer", "message"), [
    ({"depth_radius": -1}, r"layer 0 \(lrn\): depth_radius must be a whole number >= 0 .*got -1"),
    ({"depth_radius": 2.5}, "depth_radius must be a whole number"),
    ({"depth_radius": True}, "depth_radius must be a whole number"),
    ({"bias": 0.0}, r"bias must be a number > 0, alpha >= 0 and beta a number .*got bias 0.0"),
    ({"alpha": -1e-4}, "alpha >= 0"),
    ({"beta": "0.75"}, "beta a number"),
    ({"size": 5}, r"layer 0 \(lrn\): unknown keys \['size'\]"),  # PyTorch's name: the plan speaks TensorFlow's
])
def test_lrn_errors(layer, message):
    with pytest.raises(SpecError, match=message):
        modelplan.plan(_spec([dict(layer, type="lrn")]))


def test_lrn_needs_an_image():
    spec = _spec([])
    spec["model"]["layers"].insert(1, {"type": "lrn"})  # after the flatten
    with pytest.raises(SpecError, match=r"layer 1: lrn needs an image input \(got vector \(384,\)\)"):
        modelplan.plan(spec)


# -- the six framework modules ---------------------------------------------------------------------
@pytest.mark.slow
def test_every_framework_module_computes_tensorflows_lrn():
    outputs = check.run_in_envs(FRAMEWORKS, ["-m", "tests.bench.lrnprobe", "{fw}"], "lrn probe", timeout=900)
    assert sorted(outputs) == sorted(FRAMEWORKS)
    for name, (params, shape) in lrnprobe.CASES.items():
        expected = reference(lrnprobe.case_input(name), **params)
        for framework, out in outputs.items():
            got = np.asarray(out["outputs"][name])
            assert got.shape == shape, (framework, name)
            np.testing.assert_allclose(got, expected, rtol=RTOL, atol=ATOL, err_msg=f"{framework}: case {name}")
