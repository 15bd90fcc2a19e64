"""Workload specs are data; profiles override only what they may; hashes are canonical."""

import pytest

from bench import spec
from bench.errors import UsageError


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


def test_content_hash_is_order_independent():
    assert spec.content_hash({"a": 1, "b": [1, 2]}) == spec.content_hash({"b": [1, 2], "a": 1})
    assert spec.content_hash({"a": 1}) != spec.content_hash({"a": 2})
