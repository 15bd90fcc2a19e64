"""The paper-era MXNet module (MXNet 1.3.0: bench/frameworks/paper/mxnet.py), trained for real.

All seven DLBench workloads run once (smoke sizes, harness.EPOCHS epochs, one thread) through the
kit's own entrypoint and monitor (`python -m bench run`) in the hash-locked Python 3.11 test
environment of locks/mxnet.txt (harness.py: built on first use); the tests read each run folder as
the analysis does. A short script in the same environment checks what a run cannot show: an absurd
learning rate ends in NonFiniteLoss, two evaluations of the same weights agree (dropout off), and
the LSTM's output does not change when the padding is cut off.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from bench import schema
from campaign import specs
from tests import background
from tests.bench.frameworks import check
from tests.bench.frameworks.paper import harness

pytestmark = pytest.mark.slow

FRAMEWORK = "mxnet"
WORKLOADS = check.PROBED
CNNS = tuple(w for w in WORKLOADS if w.startswith("cnn-"))
SEQUENCES = tuple(w for w in WORKLOADS if w not in CNNS)
LOCK = harness.HERE / "locks" / f"{FRAMEWORK}.txt"

# Run in the test environment: what the entrypoint's runs cannot show. argv[1]: a JSON file of
# smoke specs {"cnn-mnist": ..., "lstm-imdb": ...}; prints one JSON object.
CHECKS = r"""
import json, sys
import numpy as np
from bench.frameworks import load
from tests.bench.frameworks import probe

specs = json.load(open(sys.argv[1]))
module = load("mxnet", "paper")
out = {"versions": module.versions()}
out["nan_raised"], out["nan_message"] = probe.nan_check(module, specs["cnn-mnist"], "cpu")
trainer = module.make_trainer(specs["cnn-mnist"], probe.probe_data(specs["cnn-mnist"]), "cpu", probe.SEED)
out["evaluations"] = [trainer.evaluate(), trainer.evaluate()]
data = probe.probe_data(specs["lstm-imdb"])
trainer = module.make_trainer(specs["lstm-imdb"], data, "cpu", probe.SEED)
trainer.train_epoch()
length = int(data.len_test[0])
rows = np.flatnonzero(data.len_test == length)[:8]
padded = {"x": data.x_test[rows], "len": data.len_test[rows]}
cut = {"x": np.ascontiguousarray(data.x_test[rows, :length]), "len": data.len_test[rows]}
out["padding_max_abs_diff"] = float(np.abs(trainer.outputs(padded) - trainer.outputs(cut)).max())
print(json.dumps(out))
"""


def _runs(tmp_path_factory) -> dict[str, Path]:
    """{workload: run folder}, every workload run once through the entrypoint."""
    root = tmp_path_factory.mktemp("mxnet-paper")
    started = time.perf_counter()
    out = harness.run(FRAMEWORK, list(WORKLOADS), root)
    sys.stderr.write(f"paper-era mxnet: {len(out)} runs in {time.perf_counter() - started:.0f} s\n")
    return out


# Run in the background beside the other frameworks' slow fixtures (tests/background.py).
runs = background.fixture("paper mxnet runs", _runs, weight=100, module=__name__, fixture_name="runs")


@pytest.fixture(scope="module")
def env_python() -> str:
    """The Python version of the test environment's interpreter (the one the runs really used)."""
    python = harness.test_env(FRAMEWORK).python
    return subprocess.run([str(python), "-c", "import platform; print(platform.python_version())"],
                          capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture(scope="module")
def checks() -> dict:
    """The CHECKS script's output, run once in the test environment."""
    python = harness.test_env(FRAMEWORK).python
    env = {**os.environ, "PYTHONPATH": f"{harness.REPO}{os.pathsep}{harness.SHIMS}", "DLREPRO_THREADS": "1"}
    with tempfile.NamedTemporaryFile("w", suffix=".json") as fh:
        json.dump({w: specs.load(w, "smoke") for w in ("cnn-mnist", "lstm-imdb")}, fh)
        fh.flush()
        proc = subprocess.run([str(python), "-c", CHECKS, fh.name], cwd=harness.REPO, env=env,
                              capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def finished(runs: dict[str, Path], workload: str) -> dict:
    """The workload's run.json, validated (bench.schema), once it shows status ok."""
    run = schema.read_run(runs[workload])
    log = (runs[workload] / schema.LOG_FILE).read_text(errors="replace")
    assert run["status"] == "ok", f"{workload}: {run['failure']}\n{log[-3000:]}"
    return run


def pinned(package: str) -> str:
    return re.search(rf"^{package}==(\S+)", LOCK.read_text(), re.MULTILINE).group(1)


@pytest.mark.parametrize("workload", WORKLOADS)
def test_run_is_a_valid_paper_era_run(runs, env_python, workload):
    run = finished(runs, workload)
    assert run["config"]["era"] == "paper"
    assert run["config"]["framework"] == FRAMEWORK and run["config"]["workload"] == workload
    env = run["environment"]
    assert env["framework_version"] == "1.3.0" == pinned("mxnet")
    assert env["packages"]["numpy"] == env["framework_build"]["numpy"] == pinned("numpy")
    # The interpreter that really ran (Python 3.11 here; CPython 3.6 in a paper-era image).
    assert run["host"]["python"] == env["python"] == env["framework_build"]["python"] == env_python
    assert env_python.startswith("3.11.")
    assert run["results"]["epochs_completed"] == harness.EPOCHS


@pytest.mark.parametrize("workload", WORKLOADS)
def test_loss_falls(runs, workload):
    finished(runs, workload)
    metrics = schema.read_metrics(runs[workload])
    assert [m["epoch"] for m in metrics] == list(range(1, harness.EPOCHS + 1))
    losses = [m["loss"] for m in metrics]
    assert all(math.isfinite(loss) and 0 < loss < 10 for loss in losses), losses
    assert losses[-1] < losses[0], f"{workload}: loss did not fall: {losses}"
    assert all(0.0 <= m["test_accuracy"] <= 1.0 and 0.0 <= m["train_accuracy"] <= 1.0 for m in metrics)


@pytest.mark.parametrize("workload", WORKLOADS)
def test_monitor_sampled_the_run(runs, workload):
    run = finished(runs, workload)
    rows = list(schema.read_monitor(runs[workload]))
    assert rows, "monitor.csv has no samples"
    assert any(row["proc_rss_mb"] for row in rows)
    assert "disabled" not in run["monitor"]


@pytest.mark.parametrize("workload", WORKLOADS)
def test_device_used_records_the_kernels(runs, workload):
    info = finished(runs, workload)["device_used"]
    check.assert_info_basics(info, workload)  # one thread obeyed, layout, optimizer, the family's kernel
    assert info["versions"]["mxnet"] == "1.3.0"
    kernels = info["kernels"]
    if workload in CNNS:
        assert kernels["conv2d"].startswith("gluon.nn.Conv2D NCHW (CPU")
    else:
        assert kernels["lstm"] == "gluon.rnn.LSTM, TNC (fused RNN operator, CPU)"
    if workload == "lstm-imdb":  # 1.3.0's fused LSTM reads no lengths: the whole padded batch
        assert "SequenceLast" in kernels["lstm_lengths"]
    if workload == "seq2seq-manythings":
        assert "unroll(valid_length=lengths)" in kernels["lstm_encoder_state"]
    if workload in ("lstm-ptb", "seq2seq-manythings"):
        assert "Dense(flatten=False)" in kernels["dense"]
        assert info["optimizer"] == {"name": "adadelta", "lr": 1.0, "rho": 0.95, "epsilon": 1e-7, "weight_decay": 0.0}


def test_parameter_counts(runs):
    counts = {w: finished(runs, w)["model"]["trainable_params"] for w in WORKLOADS}
    sys.stderr.write(f"paper-era mxnet parameter counts: {counts}\n")
    check.assert_keras_counts({w: counts[w] for w in CNNS})
    for workload in SEQUENCES:  # gluon.rnn.LSTM keeps two biases per gate (i2h, h2h), Keras one
        assert counts[workload] - check.KERAS_COUNTS[workload] == check.second_bias(workload), workload


def test_non_finite_loss_raises(checks):
    check.assert_nan_raised(checks)


def test_dropout_is_off_at_test_time(checks):
    first, again = checks["evaluations"]
    assert first == again


def test_lstm_reads_the_last_real_step(checks):
    # nd.SequenceLast at each sequence's length: cutting the padding off changes nothing.
    assert checks["padding_max_abs_diff"] < 1e-5


def test_reported_versions_match_the_lock(checks):
    versions = checks["versions"]
    assert (versions["mxnet"], versions["numpy"]) == (pinned("mxnet"), pinned("numpy"))
    assert versions["mxnet_distribution"] == "mxnet" and versions["mxnet_cuda"] == "no"
