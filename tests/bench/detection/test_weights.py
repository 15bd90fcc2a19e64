"""The detector's neutral weight layout (bench/detection/weights.py): names and shapes from the plan, counted
independently; the seeded initial weights; refusals of weights that do not fit."""

import numpy as np
import pytest

from bench.detection import detector as det
from bench.detection import weights
from bench.modelplan import SpecError
from campaign import specs
from tests.plancount import trainable


@pytest.fixture(scope="module")
def plan():
    return det.plan(specs.load("frcnn-voc2012", "smoke"))


@pytest.fixture(scope="module")
def initial(plan):
    return weights.initial(plan, 1234)


def test_the_layout_holds_every_trainable_parameter_once(plan):
    entries = weights.layout(plan)
    names = [name for name, _ in entries]
    assert len(names) == len(set(names))
    learned = sum(int(np.prod(shape)) for name, shape in entries if not name.endswith((".mean", ".var")))
    assert learned == trainable(plan.trunk) + trainable(plan.head) + det.extra_params(plan) == 28_465_366


def test_names_and_shapes_follow_the_plan(plan):
    layout = dict(weights.layout(plan))
    assert layout["trunk.0.kernel"] == (64, 3, 7, 7)  # conv1: 7x7, 3 -> 64, no bias
    assert "trunk.0.bias" not in layout
    assert layout["trunk.1.var"] == (64,)
    # res2's first block: branch 1x1 64 -> 64 first, its projection shortcut 1x1 64 -> 256
    assert layout["trunk.4.branch.0.kernel"] == (64, 64, 1, 1)
    assert layout["trunk.4.shortcut.0.kernel"] == (256, 64, 1, 1)
    assert layout["head.0.branch.3.kernel"] == (512, 512, 3, 3)  # res5's first 3x3
    assert layout["rpn_conv.kernel"] == (512, 1024, 3, 3) and layout["rpn_deltas.kernel"] == (36, 512, 1, 1)
    assert layout["classes.kernel"] == (21, 2048) and layout["boxes.bias"] == (84,)


def test_owners_group_the_layout_in_order(plan):
    owners = weights.owners(plan)
    assert [name for _, names in owners for name in names] == [name for name, _ in weights.layout(plan)]
    assert owners[1] == ("trunk.1", ["trunk.1.gamma", "trunk.1.beta", "trunk.1.mean", "trunk.1.var"])
    assert [owner for owner, _ in owners[-5:]] == ["rpn_conv", "rpn_logits", "rpn_deltas", "classes", "boxes"]


def test_initial_weights_are_seeded_per_array(plan, initial):
    weights.check(plan, initial)
    assert all(value.dtype == np.float32 for value in initial.values())
    again = weights.initial(plan, 1234)
    assert all(np.array_equal(initial[name], again[name]) for name in initial)
    other = weights.initial(plan, 1235)
    assert not np.array_equal(initial["rpn_conv.kernel"], other["rpn_conv.kernel"])
    # an array's draw depends on its name, not its place: two equal shapes differ
    assert not np.array_equal(initial["trunk.5.branch.0.kernel"], initial["trunk.6.branch.0.kernel"])


def test_initial_weights_follow_their_sources(plan, initial):
    # He-normal over the output fan: res4's first 1x1 of 512 -> 256 has std sqrt(2 / 256), not sqrt(2 / 512)
    kernel = initial["trunk.11.branch.0.kernel"]
    assert kernel.shape == (256, 512, 1, 1)
    assert kernel.std() == pytest.approx(np.sqrt(2.0 / 256), rel=0.02) and abs(kernel.mean()) < 2e-3
    assert initial["rpn_conv.kernel"].std() == pytest.approx(0.01, rel=0.02)
    assert initial["classes.kernel"].std() == pytest.approx(0.01, rel=0.05)
    assert initial["boxes.kernel"].std() == pytest.approx(0.001, rel=0.05)
    assert not initial["rpn_conv.bias"].any() and not initial["trunk.1.beta"].any()
    assert (initial["trunk.1.gamma"] == 1).all() and (initial["trunk.1.var"] == 1).all()
    assert not initial["trunk.1.mean"].any()


def test_weights_that_do_not_fit_are_refused_in_one_line(plan, initial):
    missing = dict(initial)
    del missing["rpn_logits.bias"]
    with pytest.raises(SpecError, match="has no 'rpn_logits.bias'"):
        weights.check(plan, missing)
    extra = dict(initial, **{"trunk.0.bias": np.zeros(64, np.float32)})
    with pytest.raises(SpecError, match="unknown 'trunk.0.bias'"):
        weights.check(plan, extra)
    transposed = dict(initial, **{"classes.kernel": initial["classes.kernel"].T})
    with pytest.raises(SpecError, match=r"classes.kernel is \(2048, 21\), not \(21, 2048\)"):
        weights.check(plan, transposed)


def _network(plan, layout_of=lambda name, shape: shape):
    """A stand-in for a framework's weighted layers: per owner, one zero array per name, in `layout_of`'s shape."""
    shapes = dict(weights.layout(plan))
    return [[np.zeros(layout_of(name, shapes[name]), np.float32) for name in names]
            for _, names in weights.owners(plan)]


def test_placed_pairs_every_weight_with_its_target_in_the_networks_layout(plan, initial):
    def hwio(name, shape):
        return (shape[2], shape[3], shape[1], shape[0]) if len(shape) == 4 else shape[::-1]

    def layout_of(name, shape):  # Keras': kernels HWIO and (in, out)
        return hwio(name, shape) if name.endswith(".kernel") else shape

    network = _network(plan, layout_of)
    pairs = weights.placed(plan, initial, network, list, np.shape, weights.channels_last)
    assert len(pairs) == len(initial)
    for target, value in pairs:
        target[...] = value
    conv1 = network[0][0]  # trunk.0.kernel, (64, 3, 7, 7) neutral
    assert conv1.shape == (7, 7, 3, 64)
    assert np.array_equal(conv1[:, :, 1, 5], initial["trunk.0.kernel"][5, 1])
    assert np.array_equal(network[-1][0], initial["boxes.kernel"].T)


def test_placed_refuses_a_count_or_shape_difference_before_anything_is_written(plan, initial):
    network = _network(plan)
    with pytest.raises(ValueError, match=r"^the network has 2 weighted layers, the plan \d+$"):
        weights.placed(plan, initial, network[:2], list, np.shape)
    short = [layer[:1] if i == 1 else layer for i, layer in enumerate(network)]  # trunk.1 is a batchnorm of 4
    with pytest.raises(ValueError, match=r"^trunk\.1: the network's layer has 1 weights, the plan 4$"):
        weights.placed(plan, initial, short, list, np.shape)
    with pytest.raises(ValueError, match=r"^trunk\.0\.kernel: the network's weight is \(64, 3, 7, 7\), the plan's "
                                         r"\(7, 7, 3, 64\) in the network's layout$"):
        weights.placed(plan, initial, network, list, np.shape, weights.channels_last)
