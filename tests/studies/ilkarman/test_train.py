"""ilkarman/DeepLearningFrameworks' training benchmarks (studies/ilkarman/study.toml, ilkarman-train-cpu): the
CIFAR-10 CNN (studies/ilkarman/workloads/cnn-cifar10-ilkarman.toml, PyTorch_CNN.ipynb's network) and the IMDB
sentiment RNN (studies/ilkarman/workloads/gru-imdb.toml): an embedding, one GRU
whose last hidden state feeds a 2-class softmax, with the notebooks' sizes and Adam settings (common/params_lstm.py)
on the kit's prepared IMDB arrays. The model plan gives the hand-counted parameters, and every current-era framework
builds the network with that one count (cuDNN's GRU, two bias vectors per gate set, everywhere), trained at the smoke
sizes through `python -m campaign run` (the local runner's environments, DLREPRO_VENV_ROOT) on synthetic IMDB."""

from __future__ import annotations

import pytest

from bench.frameworks import common
from bench.modelplan import plan
from campaign import specs
from data import prepare
from tests import plancount
from tests.smokecampaign import smoke_runs

WORKLOAD = "gru-imdb"
CNN = "cnn-cifar10-ilkarman"
FRAMEWORKS = ("pytorch", "tensorflow", "mxnet", "keras", "chainer", "theano")
# By hand: embedding 5000 x 125; the GRU 125 -> 100, three gate sets of input kernel, recurrent kernel and two bias
# vectors (cuDNN's "reset_after" form); dense 100 -> 2.
GRU_IMDB_PARAMS = 5000 * 125 + 3 * (125 * 100 + 100 * 100 + 100 + 100) + (100 * 2 + 2)
assert GRU_IMDB_PARAMS == 693_302
# By hand: conv 3x3 3->50, 50->50, 50->100, 100->100 ('same': 32 -> 16 -> 8 after the two pools), dense 100*8*8 ->
# 512, dense 512 -> 10.
CNN_PARAMS = ((3 * 3 * 3 * 50 + 50) + (3 * 3 * 50 * 50 + 50) + (3 * 3 * 50 * 100 + 100) + (3 * 3 * 100 * 100 + 100)
              + (100 * 8 * 8 * 512 + 512) + (512 * 10 + 10))
assert CNN_PARAMS == 3_441_592


def planned_params(workload: str) -> int:
    """Trainable parameters of a workload's planned layers (tests/plancount.py, the embedding's table and the GRU's
    included)."""
    return plancount.planned_params(plan(specs.load(workload)).layers)


def test_gru_imdb_has_the_hand_counted_parameters():
    assert planned_params(WORKLOAD) == GRU_IMDB_PARAMS
    assert f"{GRU_IMDB_PARAMS:,} trainable" in specs.load(WORKLOAD)["choices"]["parameters"]


def test_gru_imdb_is_the_notebooks_model_on_the_kits_imdb_arrays():
    spec = specs.load(WORKLOAD)
    assert (spec["study"], spec["dataset"], spec["model"]["num_classes"]) == ("ilkarman", "imdb", 2)
    embedding, gru, dense = plan(spec).layers
    assert (embedding["output_dim"], gru["units"], gru["return_sequences"]) == (125, 100, False)
    assert (dense["units"], spec["training"]["loss"]) == (2, "categorical_crossentropy")  # softmax over 2 classes
    assert (spec["training"]["batch_size"], spec["training"]["epochs"]) == (64, 3)
    assert common.optimizer_settings(spec) == {"name": "adam", "lr": 1e-3, "beta1": 0.9, "beta2": 0.999,
                                               "epsilon": 1e-8, "weight_decay": 0.0}
    # What the prepared arrays hold, not the notebooks' MAXLEN 150 and MAXFEATURES 30000: named as departures.
    assert (spec["model"]["maxlen"], embedding["input_dim"]) == (prepare.IMDB_MAXLEN, prepare.IMDB_VOCAB_SIZE)
    for choice in ("maxlen", "truncation", "vocabulary"):
        assert spec["choices"][choice].startswith("departs: "), choice


def test_the_cifar10_cnn_has_the_hand_counted_parameters_and_the_notebooks_settings():
    spec = specs.load(CNN)
    assert plancount.trainable(plan(spec).layers) == CNN_PARAMS
    assert (spec["study"], spec["dataset"]) == ("ilkarman", "cifar10")
    assert (spec["training"]["batch_size"], spec["training"]["epochs"]) == (64, 10)
    assert common.optimizer_settings(spec)["name"] == "sgd" and spec["training"]["optimizer"]["momentum"] == 0.9


@pytest.mark.slow
def test_every_framework_trains_the_cnn_and_the_gru_with_the_hand_counted_parameters(tmp_path):
    runs = smoke_runs(tmp_path, FRAMEWORKS, target="ilkarman-train-cpu", datasets=("cifar10", "imdb"))
    assert sorted(runs) == sorted((w, f) for w in (CNN, WORKLOAD) for f in FRAMEWORKS)
    for key, run in runs.items():
        assert run["status"] == "ok", (key, run["failure"])
    for workload, params in ((WORKLOAD, GRU_IMDB_PARAMS), (CNN, CNN_PARAMS)):
        counts = {f: run["model"]["trainable_params"] for (w, f), run in runs.items() if w == workload}
        assert counts == dict.fromkeys(FRAMEWORKS, params), workload
    for (workload, framework), run in runs.items():
        if workload == WORKLOAD:
            assert (run["dataset"]["train_examples"], run["dataset"]["test_examples"]) == (256, 128), framework
            assert "gru" in run["device_used"]["kernels"], framework
