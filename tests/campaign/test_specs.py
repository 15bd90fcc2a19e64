"""Workload specs are data (campaign/workloads/*.toml); profiles override only what they may."""

import pytest

from bench.errors import UsageError
from campaign import specs as spec


def test_paper_profile_is_the_study():
    wl = spec.load("lstm-imdb")
    assert wl["training"] == {"loss": "binary_crossentropy", "optimizer": {"name": "adam", "lr": 1e-3},
                              "batch_size": 64, "epochs": 50, "shuffle": True}
    assert wl["model"]["maxlen"] == 500 and wl["model"]["vocab_size"] == 5000
    assert wl["data"] == {"train_subset": None, "test_subset": None}
    assert spec.load("cnn-mnist")["training"]["epochs"] == 15


def test_quick_profile_overrides_epochs_and_subsets_only():
    paper, quick = spec.load("cnn-mnist"), spec.load("cnn-mnist", "quick")
    assert quick["training"]["epochs"] == 2 and quick["data"]["train_subset"] == 6000
    assert quick["model"] == paper["model"]
    assert quick["training"]["optimizer"] == paper["training"]["optimizer"]


@pytest.mark.parametrize("call, text", [
    (lambda: spec.load("cnn-nope"), "unknown workload 'cnn-nope'; choose from: cnn-cifar10, cnn-cifar100, cnn-mnist"),
    (lambda: spec.load("cnn-mnist", "fast"), "unknown profile 'fast' for workload 'cnn-mnist'; choose from"),
])
def test_bad_names_name_the_choices(call, text):
    with pytest.raises(UsageError) as err:
        call()
    assert str(err.value).startswith(text) and "\n" not in str(err.value)


def test_every_target_names_known_workloads_and_a_device():
    targets = spec.load_targets()
    assert {"cpu-cnn", "gpu-cnn", "cpu-lstm", "gpu-lstm", "demo"} <= set(targets)
    for name, target in targets.items():
        assert target["device"] in ("cpu", "gpu"), name
        assert set(target["workloads"]) <= set(spec.known_workloads()), name
