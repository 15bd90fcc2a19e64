"""Shi et al.'s synthetic-data networks, FCN-S and AlexNet-S (studies/shi/workloads/fcn-s-synthetic.toml,
alexnet-s-synthetic.toml): their data are generated in the run (bench/generated.py), so a campaign runs them with
no prepared dataset at all; every current-era framework builds each with the hand-counted parameters, trained at
the smoke sizes through `python -m campaign run` (the local runner's environments, DLREPRO_VENV_ROOT)."""

from __future__ import annotations

import pytest

import analysis
from analysis.summary import not_learnt
from bench import generated
from campaign import plan, specs, study
from tests.smokecampaign import smoke_runs

FRAMEWORKS = ("pytorch", "tensorflow", "mxnet", "keras", "chainer", "theano")
WORKLOADS = ("fcn-s-synthetic", "alexnet-s-synthetic")
# FCN-S: 26,752 inputs, 4 x 2,048 sigmoid, 26,752 classes (weights + biases of each dense layer).
FCN_S_PARAMS = (26_752 * 2048 + 2048) + 3 * (2048 * 2048 + 2048) + (2048 * 26_752 + 26_752)
# AlexNet-S: convs 3->64 (11x11), 64->192 (5x5), 192->384, 384->256, 256->256 (3x3); fc 6*6*256 -> 4096 -> 4096 -> 1000.
ALEXNET_S_PARAMS = ((11 * 11 * 3 * 64 + 64) + (5 * 5 * 64 * 192 + 192) + (3 * 3 * 192 * 384 + 384)
                    + (3 * 3 * 384 * 256 + 256) + (3 * 3 * 256 * 256 + 256)
                    + (9216 * 4096 + 4096) + (4096 * 4096 + 4096) + (4096 * 1000 + 1000))
PARAMS = {"fcn-s-synthetic": FCN_S_PARAMS, "alexnet-s-synthetic": ALEXNET_S_PARAMS}
assert PARAMS == {"fcn-s-synthetic": 122_194_048, "alexnet-s-synthetic": 61_100_840}


def test_shis_synthetic_networks_generate_their_data_and_are_timed_by_both_experiments():
    for name in WORKLOADS:
        spec = specs.load(name)
        assert generated.is_generated(spec) and spec["study"] == "shi"
        assert name in study.experiment("shi-cpu").workloads and name in study.experiment("shi-gpu").workloads
    assert plan.datasets_needed(list(WORKLOADS)) == []  # nothing to download or prepare
    assert [specs.load(w)["training"]["batch_size"] for w in WORKLOADS] == [64, 16]
    for name in WORKLOADS:  # the quick profile's warm-up epoch is a few mini-batches of the paper's size
        quick = specs.load(name, "quick")
        assert quick["data"]["train_subset"] // quick["training"]["batch_size"] <= 4


@pytest.mark.slow
def test_every_framework_builds_shis_synthetic_networks_with_no_data_prepared(tmp_path):
    runs = smoke_runs(tmp_path, FRAMEWORKS, WORKLOADS)
    assert not (tmp_path / "data").exists()  # never written: the runs need no prepared folder
    assert sorted(runs) == sorted((w, f) for w in WORKLOADS for f in FRAMEWORKS)
    for key, run in runs.items():
        assert run["status"] == "ok", (key, run["failure"])
        assert run["dataset"]["source"] == generated.SOURCE and "test_majority_rate" not in run["dataset"], key
    counts = {key: run["model"]["trainable_params"] for key, run in runs.items()}
    assert counts == {(w, f): PARAMS[w] for w, f in runs}
    # Same bytes in: every framework's run of a workload read the same generated arrays.
    assert len({(w, run["dataset"]["sha256"]) for (w, _), run in runs.items()}) == len(WORKLOADS)
    # Random labels: no floor is recorded, so the "not above guessing" check leaves these runs out.
    frame = analysis.load(tmp_path / "results" / "t")
    assert len(frame) == len(runs) and frame["majority_accuracy"].isna().all() and not_learnt(frame).empty
