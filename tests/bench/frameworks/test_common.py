"""bench/frameworks/common.py: the training contract every framework module reads the same way."""

from __future__ import annotations

import numpy as np
import pytest

from bench.collectives import is_collective
from bench.frameworks import common
from bench.modelplan import SpecError
from campaign import specs


# Every spec that trains a model (a collective workload, bench/collectives, has no optimizer).
@pytest.mark.parametrize("name, profile", [(w, p) for w in specs.known_workloads() for p in specs.known_profiles(w)
                                           if not is_collective(specs.load(w))])
def test_every_shipped_spec_names_a_known_optimizer(name, profile):
    settings = common.optimizer_settings(specs.load(name, profile))
    assert settings["name"] in common.OPTIMIZER_DEFAULTS
    assert set(settings) == set(common.OPTIMIZER_DEFAULTS[settings["name"]]) | {"name"}


def test_optimizer_settings_fill_what_a_spec_leaves_out():
    # lstm-ptb states every Adadelta setting but weight decay (the authors' epsilon 1e-6, not Keras 2's 1e-7);
    # the quick seq2seq-manythings profile states only Adam's learning rate: Keras 2's defaults fill the rest.
    assert common.optimizer_settings(specs.load("lstm-ptb")) == {
        "name": "adadelta", "lr": 1.0, "rho": 0.95, "epsilon": 1e-6, "weight_decay": 0.0}
    assert common.optimizer_settings(specs.load("seq2seq-manythings", "quick")) == {
        "name": "adam", "lr": 0.01, "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-7, "weight_decay": 0.0}


def test_optimizer_errors():
    spec = specs.load("cnn-mnist")
    spec["training"]["optimizer"] = {"name": "rmsprop"}
    with pytest.raises(SpecError, match="unsupported optimizer 'rmsprop'"):
        common.optimizer_settings(spec)
    spec["training"]["optimizer"] = {"name": "sgd", "nesterov": True}
    with pytest.raises(SpecError, match=r"optimizer sgd: unknown keys \['nesterov'\]"):
        common.optimizer_settings(spec)


def test_token_mask_counts_leading_steps():
    y = np.zeros((2, 4), dtype=np.int64)
    assert common.token_mask(y, np.array([1, 3])).tolist() == [[True, False, False, False],
                                                                [True, True, True, False]]
    assert common.token_mask(y, None).all()


def test_majority_rate_is_the_top_label_share_of_the_counted_labels():
    assert common.majority_rate(np.array([1, 0, 1, 1])) == 0.75  # classes: the largest class
    y = np.array([[5, 5, 7, 0], [7, 7, 7, 0]])  # sequences: every step counts without y_len
    assert common.majority_rate(y) == 4 / 8
    # With y_len only each row's leading steps count: the padding's 0s no longer do, 7 leads 3 of 5.
    assert common.majority_rate(y, np.array([2, 3])) == 3 / 5
    assert common.majority_rate(y, np.array([3, 3])) == 4 / 6
    with pytest.raises(SpecError, match="no labels count"):
        common.majority_rate(y, np.array([0, 0]))


def test_step_ring_walks_the_training_set_in_order_and_wraps_around():
    ring = common.StepRing(5, 2)
    assert [ring.ring[ring.take()].tolist() for _ in range(4)] == [[0, 1], [2, 3], [4, 0], [1, 2]]
    small = common.StepRing(3, 8)  # a set smaller than a batch: every batch is the whole set
    assert [small.ring[small.take()].tolist() for _ in range(2)] == [[0, 1, 2], [0, 1, 2]]
    with pytest.raises(SpecError, match="the training set is empty"):
        common.StepRing(0, 4)
