"""The paper-era Chainer module (Chainer 4.5.0, bench/frameworks/paper/chainer.py) trained on Python
3.11 through the kit's own entrypoint and monitor (harness.py): every DLBench workload's smoke
profile, three epochs, in the hash-locked test environment locks/chainer/ (the chainer 4.5.0 sdist,
built after its build tools: build-requirements.txt and pip-install-args beside the lock).

One module-scoped fixture runs the seven workloads once (a few minutes on two cores); one more run
(cnn-mnist with an absurd learning rate) must fail as 'nan'; the probe's padding check runs against
the module directly, in the same environment.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import pytest

from bench import schema
from campaign import specs
from tests import background
from tests.bench.frameworks import check
from tests.bench.frameworks.paper import harness

pytestmark = pytest.mark.slow

FRAMEWORK = "chainer"
WORKLOADS = check.PROBED  # all seven DLBench workloads
LSTMS = tuple(w for w in WORKLOADS if specs.load(w)["family"] == "lstm")
# Runs in the test environment: the probe's padding check (after one epoch) on the workloads whose
# LSTM reads real lengths, against the paper module itself.
PADDING_SNIPPET = """
import json, sys
from bench.frameworks import load
from tests.bench.frameworks import probe
module = load("chainer", "paper")
results = {name: probe.run_workload(module, spec, 1, "cpu") for name, spec in json.load(sys.stdin)["train"].items()}
print(json.dumps({name: {"padding_max_abs_diff": r["padding_max_abs_diff"], "threads": r["info"]["threads"]}
                  for name, r in results.items()}))
"""
NAN_WORKLOAD = "cnn-mnist"


def _absurd_learning_rate(spec: dict) -> None:
    spec["training"]["optimizer"] = {"name": "sgd", "lr": 1e30, "momentum": 0.0}


def _runs(tmp_path_factory) -> dict[str, Path]:
    """{workload: run folder} of the seven smoke runs, each through `python -m bench run`."""
    root = tmp_path_factory.mktemp("paper-chainer")
    harness.test_env(FRAMEWORK)  # built (minutes) before the runs' clock starts
    started = time.monotonic()
    out = harness.run(FRAMEWORK, list(WORKLOADS), root)
    records = {w: json.loads((d / schema.RUN_FILE).read_text()) for w, d in out.items()
               if (d / schema.RUN_FILE).exists()}
    sys.stderr.write(
        f"paper chainer: {len(out)} runs in {time.monotonic() - started:.0f} s; training s: "
        + ", ".join(f"{w}={r['timing']['training_time_s']:.1f}" for w, r in records.items()
                    if r["timing"]["training_time_s"] is not None)
        + "; params: " + ", ".join(f"{w}={r['model'].get('trainable_params')}" for w, r in records.items()) + "\n")
    return out


# Run in the background beside the other frameworks' slow fixtures (tests/background.py).
runs = background.fixture("paper chainer runs", _runs, weight=100, module=__name__, fixture_name="runs")


def _record(runs: dict[str, Path], workload: str) -> dict:
    return harness.finished(runs[workload])


@pytest.fixture(scope="module")
def env_python_version() -> str:
    """The Python version of the test environment's interpreter: what the runs really ran on."""
    return harness.python_version(FRAMEWORK)


@pytest.fixture(scope="module")
def padding() -> dict:
    """PADDING_SNIPPET's output: {workload: {"padding_max_abs_diff", "threads"}}."""
    return harness.run_json(FRAMEWORK, PADDING_SNIPPET, json.dumps(check.smoke_specs(check.PADDED)))


@pytest.mark.parametrize("workload", WORKLOADS)
def test_run_is_a_valid_paper_era_run(runs, env_python_version, workload):
    record = _record(runs, workload)  # run.json valid (bench.schema.read_run), status ok
    harness.assert_paper_run(record, FRAMEWORK, "4.5.0", env_python_version)
    assert env_python_version.startswith("3.11.")  # what ran here; a paper-era image runs 3.6
    assert record["environment"]["framework_build"]["chainer"] == "4.5.0"
    assert record["environment"]["framework_build"]["numpy"] == "1.23.5"  # the lock's


@pytest.mark.parametrize("workload", WORKLOADS)
def test_loss_falls(runs, workload):
    _record(runs, workload)
    metrics = harness.assert_loss_falls(runs[workload])
    if workload == "cnn-mnist":  # learnable data: it must beat chance
        assert metrics[-1]["test_accuracy"] > 1 / specs.load(workload)["model"]["num_classes"] + 0.05


@pytest.mark.parametrize("workload", WORKLOADS)
def test_monitor_sampled_the_run(runs, workload):
    record = _record(runs, workload)
    assert list(schema.read_monitor(runs[workload])), "monitor.csv has no samples"
    assert not record["monitor"].get("disabled")


@pytest.mark.parametrize("workload", WORKLOADS)
def test_kernels_and_threads_recorded(runs, workload):
    info = _record(runs, workload)["device_used"]
    check.assert_info_basics(info, workload)  # one OpenBLAS thread, as the request asked
    assert info["threads"]["blas_threads_set_by"].startswith("openblas_set_num_threads")
    assert info["weight_decay_rule"].startswith("decoupled")
    if workload in LSTMS:
        assert "NStepLSTM (Chainer 4.5" in info["kernels"]["lstm"]
        assert "variable-length" in info["kernels"]["lstm_lengths"]
    else:
        assert "cover_all=False" in info["kernels"]["maxpool2d"]
    if info["optimizer"]["name"] == "adadelta":
        assert "no learning rate" in info["optimizer_impl"]


def test_every_cnn_has_the_keras_count(runs):
    check.assert_every_cnn_spec_counted({w: _record(runs, w)["model"]["trainable_params"] for w in check.CNN_SPECS})


@pytest.mark.parametrize("workload", LSTMS)
def test_lstm_count_differs_by_the_second_bias(runs, workload):
    """links.NStepLSTM keeps two bias vectors per gate (b_ih and b_hh), Keras one."""
    check.assert_lstm_second_bias(_record(runs, workload)["model"]["trainable_params"], workload)


def test_lstm_reads_the_last_real_step(padding):
    assert set(padding) == set(check.PADDED)
    check.assert_lstm_ignores_padding({"workloads": padding})
    # DLREPRO_THREADS=1 with OpenBLAS already loaded: set through its C API, then read back.
    assert all(r["threads"]["intra_op"] == 1 for r in padding.values()), padding


def test_non_finite_loss_fails_the_run_as_nan(tmp_path):
    """An absurd learning rate: the module raises NonFiniteLoss mid-epoch, the run is recorded as 'nan'."""
    run_dir = harness.run(FRAMEWORK, [NAN_WORKLOAD], tmp_path, edit=_absurd_learning_rate)[NAN_WORKLOAD]
    record = schema.read_run(run_dir)
    assert record["status"] == "failed" and record["failure"]["cause"] == "nan", record["failure"]
    # The module's own check (per step), not the entrypoint's after the epoch.
    assert re.match(r"NonFiniteLoss: loss became (nan|inf|-inf) at step \d+ of epoch 1$", record["failure"]["message"])
