"""The performance switches (bench/switches.py): the variables each framework reads, set before it loads, the kit's
own flag for the modules that read it, and one-line refusals for frameworks without a switch, models it changes
nothing in, and GPU-only switches on CPU runs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench import schema, switches
from bench.errors import UsageError
from bench.frameworks import capabilities
from images import envs
from tests.procmaps import run_watched
from tests.sweepruns import data_root, sweep_requests

AUTOTUNE, RNN, LAYOUT = switches.AUTOTUNE, switches.RNN_KERNEL, switches.LAYOUT


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch):
    """No switch variable set, and this process's environment restored after the test (apply() writes os.environ,
    which the runs of later tests would inherit)."""
    for axis in switches.SWITCHES:
        monkeypatch.delenv(switches.flag(axis), raising=False)
        for decl in capabilities.every().values():
            for era in decl.eras.values():
                for env in era.switches.get(axis, {}).values():
                    for var in env:
                        monkeypatch.delenv(var, raising=False)
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


def _req(framework: str, point: dict | None, device: str = "gpu") -> dict:
    return {"framework": framework, "era": "current", "device": device,
            **({"sweep": {**point, "threads": 1}} if point else {})}


@pytest.mark.parametrize("framework, point, env", [
    ("tensorflow", {AUTOTUNE: "off"}, {"TF_CUDNN_USE_AUTOTUNE": "0", "DLREPRO_CUDNN_AUTOTUNE": "off"}),
    ("keras", {AUTOTUNE: "on"}, {"TF_CUDNN_USE_AUTOTUNE": "1", "DLREPRO_CUDNN_AUTOTUNE": "on"}),
    ("mxnet", {AUTOTUNE: "off", RNN: "plain"}, {"MXNET_CUDNN_AUTOTUNE_DEFAULT": "0", "DLREPRO_CUDNN_AUTOTUNE": "off",
                                                "DLREPRO_RNN_KERNEL": "plain"}),
    ("pytorch", {LAYOUT: "channels_last"}, {"DLREPRO_LAYOUT": "channels_last"}),
    ("chainer", {AUTOTUNE: "on"}, {"DLREPRO_CUDNN_AUTOTUNE": "on"}),
])
def test_apply_sets_the_variables_the_framework_reads(framework, point, env) -> None:
    assert switches.apply(_req(framework, point)) == point
    assert {k: os.environ.get(k) for k in env} == env
    assert {axis: switches.value(axis) for axis in point} == point


def test_unset_means_each_switchs_first_value_and_a_request_without_one_changes_nothing() -> None:
    assert [switches.value(a) for a in (AUTOTUNE, RNN, LAYOUT)] == ["on", "fused", "channels_first"]
    assert switches.keras_use_cudnn() == "auto"
    assert switches.apply(_req("pytorch", None)) == {}
    assert not any(switches.flag(axis) in os.environ for axis in switches.SWITCHES)
    switches.apply(_req("keras", {RNN: "plain"}, device="cpu"))  # not GPU-only: a CPU run may ask
    assert switches.keras_use_cudnn() is False


@pytest.mark.parametrize("req, says", [
    (_req("theano", {AUTOTUNE: "on"}), "theano's module has no cuDNN autotuning switch; cudnn_autotune sweeps run "
                                       "with FRAMEWORKS=chainer keras mxnet pytorch tensorflow"),
    (_req("chainer", {RNN: "plain"}, "cpu"), "chainer's module has no choice of recurrent kernel; rnn_kernel sweeps "
                                             "run with FRAMEWORKS=keras mxnet pytorch tensorflow"),
    ({**_req("pytorch", {LAYOUT: "channels_last"}), "era": "paper"},  # channels_last memory is PyTorch 1.5's
     "the layout switch is written for the current era, not paper (ERA=current)"),
    (_req("pytorch", {LAYOUT: "nhwc"}), "layout is channels_first or channels_last, not 'nhwc'"),
    (_req("pytorch", {AUTOTUNE: "off"}, device="cpu"), "cudnn_autotune 'off' on cpu, where it means nothing"),
])
def test_a_run_that_cannot_switch_stops_in_one_line(req, says) -> None:
    with pytest.raises(UsageError) as caught:
        switches.apply(req)
    assert says in str(caught.value) and "\n" not in str(caught.value)
    assert not any(switches.flag(axis) in os.environ for axis in switches.SWITCHES)


def test_a_switch_is_inapplicable_to_a_model_without_the_layers_it_changes() -> None:
    assert switches.inapplicable(RNN, {"embedding", "gru", "dense"}) is None
    assert switches.inapplicable(LAYOUT, {"embedding", "gru"}) == ("layout changes conv2d layers, which this model "
                                                                   "has none of")
    assert switches.inapplicable(AUTOTUNE, {"dense"}) is None


# -- real runs (slow): each switch's other value trains through the entrypoint and its record names the kernel ------
def _records(tmp_path: Path, framework: str, workload: str, axis: str, values: list[str], dataset: str) -> dict:
    reqs = sweep_requests(tmp_path, framework, workload, axis, values, dataset)
    python = envs.ensure_env(framework).python
    records = {}
    for value, req in reqs.items():
        run_watched(python, req, tmp_path / value, timeout=600, data_root=data_root(tmp_path))
        records[value] = schema.read_run(tmp_path / value)
        assert records[value]["status"] == "ok", records[value]["failure"]
    return records


@pytest.mark.slow
@pytest.mark.parametrize("framework, plain", [("pytorch", "torch.nn.GRUCell stepped over time (plain)"),
                                              ("mxnet", "gluon.rnn.GRUCell stepped over time by contrib.foreach")])
def test_the_plain_gru_is_the_fused_ones_parameters_stepped_by_its_cell(tmp_path, framework, plain):
    records = _records(tmp_path, framework, "gru-imdb", RNN, ["fused", "plain"], "imdb")
    kernels = {v: r["device_used"]["kernels"]["gru"] for v, r in records.items()}
    assert kernels["plain"].startswith(plain) and "fused" in kernels["fused"], kernels
    # 693,302 by hand (studies/ilkarman/workloads/gru-imdb.toml): the same parameters either way.
    assert {v: r["model"]["trainable_params"] for v, r in records.items()} == {"fused": 693_302, "plain": 693_302}


@pytest.mark.slow
def test_keras_plain_gru_is_its_loop_without_cudnn(tmp_path):
    (record,) = _records(tmp_path, "keras", "gru-imdb", RNN, ["plain"], "imdb").values()
    assert record["device_used"]["kernels"]["gru"].startswith("keras.layers.GRU(reset_after=True, use_cudnn=False)")
    assert record["model"]["trainable_params"] == 693_302


@pytest.mark.slow
def test_pytorch_trains_the_cnn_with_channels_last_convolutions(tmp_path):
    (record,) = _records(tmp_path, "pytorch", "cnn-cifar10-ilkarman", LAYOUT, ["channels_last"], "cifar10").values()
    assert record["device_used"]["kernels"]["conv2d"].endswith(", channels_last)")
    assert record["model"]["trainable_params"] == 3_441_592  # studies/ilkarman/workloads/cnn-cifar10-ilkarman.toml
