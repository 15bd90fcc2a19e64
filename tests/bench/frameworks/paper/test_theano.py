"""The paper-era Theano module (Theano 1.0.2: bench/frameworks/paper/theano.py), trained for real.

All seven DLBench workloads run once (smoke sizes, harness.EPOCHS epochs, one thread) through the
kit's own entrypoint and monitor (`python -m bench run`) in the hash-locked Python 3.11 test
environment of locks/theano/ (harness.py: built on first use), and one more run of cnn-mnist with an
absurd learning rate must fail with cause 'nan' (NonFiniteLoss); the tests read each run folder as
the analysis does.

Theano compiles every graph with g++: the runs get THEANO_FLAGS with blas.ldflags=-lopenblas and a
compile cache beside the test environments (theano_flags()), kept between test sessions and shared
with the Keras-on-Theano runs of test_keras.py (the same Theano, NumPy and SciPy files), so only the
first session pays the cold g++ compiles. The tests every paper-era Theano-backed module makes in the
same words are the test_* functions of SHARED_TESTS; test_keras.py imports them (pytest collects them
there with that file's `paper` fixture).
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from bench import schema
from images import envs
from tests import background, cachelock
from tests.bench.frameworks import check
from tests.bench.frameworks.paper import harness

pytestmark = pytest.mark.slow

FRAMEWORK = "theano"
WORKLOADS = check.PROBED
NAN_WORKLOAD = "cnn-mnist"
NAN_RUN = "nan"  # the NaN run's place in a stream
# Two streams of runs of about equal length (warm cache), run side by side: the LSTMs, the CNNs and
# the NaN run. Nothing here is timed: the runs only have to train.
STREAMS = (("lstm-imdb", "lstm-ptb", "seq2seq-manythings"),
           ("cnn-mnist", "cnn-cifar10", "cnn-cifar100", "cnn-svhn", NAN_RUN))
SHARED_TESTS = [
    "test_run_is_a_valid_paper_era_run",
    "test_loss_falls",
    "test_monitor_sampled_the_run",
    "test_info_records_threads_and_kernels",
    "test_parameter_counts_equal_keras",
    "test_non_finite_loss_raises",
]


# -- shared with test_keras.py ---------------------------------------------------------------------
def lock(framework: str) -> Path:
    """The framework's test lock (locks/<framework>/requirements.txt)."""
    return harness.HERE / "locks" / framework / envs.LOCK_NAME


def pinned(framework: str, package: str) -> str:
    """The version the framework's test lock pins for `package`."""
    return re.search(rf"^{re.escape(package)}==(\S+)", lock(framework).read_text(), re.MULTILINE).group(1)


def theano_flags(framework: str) -> dict[str, str]:
    """THEANO_FLAGS for the runs in the framework's test environment: OpenBLAS, and a compile cache in
    the environments' folder (DLREPRO_VENV_ROOT) named after the lock's theano, numpy and scipy pins
    (with their hashes): two locks that pin the same three files share it, any other pin gets its own.
    Theano keys each compiled module by its C code, compiler flags and NumPy ABI, under a folder per
    platform and Python version, so sharing between identical installs is safe; the cache outlives
    the tests' temporary folders, so only the first session pays the cold g++ compiles."""
    return {"THEANO_FLAGS": f"blas.ldflags=-lopenblas,base_compiledir={compiledir(framework)}"}


def compiledir(framework: str) -> Path:
    """The compile cache of the framework's test environment (see theano_flags)."""
    pins = re.findall(r"^(?:theano|numpy|scipy)==.*(?:\n\s+--hash=\S+)+", lock(framework).read_text(), re.MULTILINE)
    assert len(pins) == 3, f"{lock(framework)} must pin theano, numpy and scipy"
    key = hashlib.sha256("\n".join(sorted(pins)).encode()).hexdigest()[:12]
    return envs.venv_root() / f"theano-1.0.2-paper-py311-compiledir-{key}"


# What the background jobs that use one compile cache name (tests/background.py: they run in turn).
COMPILE_CACHE = "the paper-era Theano compile cache"


@contextlib.contextmanager
def compile_cache_held(framework: str) -> Iterator[None]:
    """Hold the framework's compile cache for one user (its process tree) at a time, across threads and
    sessions: Theano 1.0.2's module cache breaks when two processes compile the same module at once
    (ModuleCache.add_key's `assert key not in self.keys`, a run's 'crash'), as the background Theano and
    Keras runs once did in CI. One run_paper's two streams compile different workloads and share a hold.
    The lock (tests/cachelock.py) is a file beside the cache: <compiledir>.lock."""
    folder = compiledir(framework)
    with cachelock.held(folder.parent / f"{folder.name}.lock"):
        yield


def absurd_learning_rate(spec: dict) -> None:
    """harness.run's edit: plain SGD with lr 1e30, which must end the run with a non-finite loss."""
    spec["training"]["optimizer"] = {"name": "sgd", "lr": 1e30, "momentum": 0.0}


def run_paper(framework: str, root: Path, extra_env: dict[str, str]) -> dict:
    """Every workload and the NaN run through the entrypoint, in two streams at once (STREAMS: one
    thread each, on CI's two cores; Theano's compile lock keeps their g++ apart); what the shared tests
    read: {"framework", "runs": {workload: run dir}, "nan": run dir, "python": the environment's Python}."""
    python = harness.python_version(framework)  # the environment is built (first use) before the clock starts
    started = time.perf_counter()

    def stream(workloads: tuple[str, ...]) -> dict[str, Path]:
        runs = harness.run(framework, [w for w in workloads if w != NAN_RUN], root, extra_env)
        if NAN_RUN in workloads:  # after its workload's own run: both write that workload's data folder
            runs[NAN_RUN] = harness.run(framework, [NAN_WORKLOAD], root, extra_env, edit=absurd_learning_rate)[
                NAN_WORKLOAD]
        return runs

    with compile_cache_held(framework), ThreadPoolExecutor(len(STREAMS)) as pool:
        runs = {w: d for part in pool.map(stream, STREAMS) for w, d in part.items()}
    nan = runs.pop(NAN_RUN)
    assert sorted(runs) == sorted(WORKLOADS), "STREAMS must hold every workload once"
    setup = {w: round(schema.read_run(d)["timing"]["setup_time_s"] or 0, 1) for w, d in runs.items()}
    seconds = time.perf_counter() - started
    sys.stderr.write(f"paper-era {framework}: {len(runs)} runs and the NaN run in {seconds:.0f} s; "
                     f"setup (compile) seconds: {setup}\n")
    return {"framework": framework, "runs": runs, "nan": nan, "python": python}


def finished(paper: dict, workload: str) -> dict:
    """The workload's run.json, validated (bench.schema.read_run), once it shows status ok."""
    return harness.finished(paper["runs"][workload])


# -- the tests every paper-era Theano-backed module makes (SHARED_TESTS) ------------------------------
@pytest.mark.parametrize("workload", WORKLOADS)
def test_run_is_a_valid_paper_era_run(paper, workload):
    run = finished(paper, workload)
    framework = paper["framework"]
    version = {"theano": "1.0.2", "keras": "2.2.4"}[framework]
    # Era 'paper', every epoch, on the interpreter that really ran (3.11 here; CPython 3.6 in an image).
    harness.assert_paper_run(run, framework, version, paper["python"])
    assert run["config"]["workload"] == workload and paper["python"].startswith("3.11.")
    env = run["environment"]
    assert env["framework_version"] == pinned(framework, framework)
    assert env["framework_build"]["python"] == env["python"]
    assert env["packages"]["theano"] == env["framework_build"]["theano"] == pinned(framework, "theano") == "1.0.2"
    assert env["packages"]["numpy"] == env["framework_build"]["numpy"] == pinned(framework, "numpy")


@pytest.mark.parametrize("workload", WORKLOADS)
def test_loss_falls(paper, workload):
    finished(paper, workload)
    metrics = harness.assert_loss_falls(paper["runs"][workload])  # finite, falling; accuracies in [0, 1]
    assert all(m["loss"] < 10 and 0.0 <= m["train_accuracy"] <= 1.0 for m in metrics), metrics


@pytest.mark.parametrize("workload", WORKLOADS)
def test_monitor_sampled_the_run(paper, workload):
    finished(paper, workload)
    harness.assert_monitor_sampled(paper["runs"][workload])


@pytest.mark.parametrize("workload", WORKLOADS)
def test_info_records_threads_and_kernels(paper, workload):
    info = finished(paper, workload)["device_used"]
    check.assert_info_basics(info, workload)  # one thread obeyed, layout, optimizer, the family's kernel
    config = info["theano_config"]
    assert config["floatX"] == "float32" and "openblas" in config["blas.ldflags"]
    # The compile cache theano_flags() named, in the environments' folder (never ~/.theano).
    assert config["compiledir"].startswith(str(envs.venv_root() / "theano-1.0.2-paper-py311-compiledir-"))
    assert info["compile_seconds"] >= 0
    kernels = info["kernels"]
    if workload.startswith("cnn-"):
        assert "CorrMM" in kernels["conv2d"] and "Pool" in kernels["maxpool2d"]  # C ops, not a Python fallback
    else:
        assert "scan" in kernels["lstm"] and "one bias per gate" in kernels["lstm"]
        # Python 3.11 cannot build scan's Cython loop (the shim switches it off): its Python loop ran.
        assert "Python loop" in kernels["lstm"]
    if workload == "lstm-imdb":
        assert "lstm_lengths" in kernels
    if workload in ("lstm-ptb", "seq2seq-manythings"):
        assert {k: info["optimizer"][k] for k in ("name", "lr", "rho", "epsilon", "weight_decay")} == {
            "name": "adadelta", "lr": 1.0, "rho": 0.95, "epsilon": 1e-7, "weight_decay": 0.0}


def test_parameter_counts_equal_keras(paper):
    # One LSTM bias per gate, as Keras: every workload's count is Keras' exactly (check.KERAS_COUNTS).
    counts = {w: finished(paper, w)["model"]["trainable_params"] for w in WORKLOADS}
    sys.stderr.write(f"paper-era {paper['framework']} parameter counts: {counts}\n")
    check.assert_keras_counts(counts)
    assert set(counts) == set(check.PROBED)


def test_non_finite_loss_raises(paper):
    # An absurd learning rate: the trainer raises NonFiniteLoss, the entrypoint records cause 'nan'.
    run = schema.read_run(paper["nan"])
    assert run["status"] == "failed" and run["failure"]["cause"] == "nan", run["failure"]
    assert run["failure"]["message"].startswith("NonFiniteLoss: loss became ")
    assert re.search(r"(nan|inf)", run["failure"]["message"])
    assert run["config"]["era"] == "paper" and run["spec"]["training"]["optimizer"]["lr"] == 1e30


# -- Theano itself -----------------------------------------------------------------------------------
def _paper(tmp_path_factory) -> dict:
    """Every workload and the NaN run, through the entrypoint in the Theano 1.0.2 test environment."""
    return run_paper(FRAMEWORK, tmp_path_factory.mktemp("theano-paper"), theano_flags(FRAMEWORK))


# Run in the background beside the other frameworks' slow fixtures (tests/background.py).
paper = background.fixture("paper theano runs", _paper, weight=235, module=__name__, fixture_name="paper",
                           shares=COMPILE_CACHE)


def test_theano_kernels(paper):
    infos = {w: finished(paper, w)["device_used"] for w in WORKLOADS}
    assert infos["cnn-mnist"]["versions"] == {"theano": "1.0.2", "numpy": pinned(FRAMEWORK, "numpy"),
                                             "scipy": pinned(FRAMEWORK, "scipy"), "python": paper["python"]}
    assert infos["cnn-mnist"]["threads"]["openblas"] == 1
    # The per-step dense is BLAS gemm over (N*T, units), not a loop of small products.
    for workload in ("lstm-ptb", "seq2seq-manythings"):
        assert "(N*T, units)" in infos[workload]["kernels"]["dense"] and "Dot22" in infos[workload]["kernels"]["dense"]
    assert "lstm_lengths" not in infos["lstm-ptb"]["kernels"]  # no padding: no mask
    assert "encoder" in infos["seq2seq-manythings"]["kernels"]["lstm_initial_state"]
    # Decoupled weight decay on the CNNs (SGD, momentum 0.5, weight decay 1e-6), by hand.
    assert infos["cnn-cifar10"]["optimizer"]["weight_decay"] == 1e-6
    assert infos["cnn-cifar10"]["weight_decay_rule"].startswith("decoupled")


# Runs in the test environment: a stride-2 'same' conv over an even input (TensorFlow's rule pads 0
# before and 1 after), its output and the gradient of every parameter. Theano infers the conv's output
# shape from the input-shape hint, which must be the padded input's, or the gradient fails to build.
STRIDED_SAME_SNIPPET = """
import json, os, sys
os.environ["THEANO_FLAGS"] = sys.stdin.read().strip()
import numpy as np
from bench import modelplan
from bench.frameworks.paper import theano as th  # before theano: it sets the flags theano reads at import
import theano
import theano.tensor as T
spec = {"name": "strided-same", "family": "cnn", "training": {"loss": "categorical_crossentropy"},
        "model": {"input_shape": [8, 8, 3], "num_classes": 4, "layers": [
            {"type": "conv2d", "filters": 4, "kernel": 3, "stride": 2, "padding": "same", "activation": "relu"},
            {"type": "flatten"}, {"type": "dense", "units": 4, "activation": "softmax"}]}}
net = th.SpecNet(modelplan.plan(spec), 0)
x = T.tensor4("x")
out = net.forward(x, None, False)
fn = theano.function([x], [out] + theano.grad(out.sum(), net.params))
values = fn(np.random.RandomState(0).rand(2, 3, 8, 8).astype("float32"))
print(json.dumps({"pads": list(net.steps[0]["explicit_pads"]), "shapes": [list(v.shape) for v in values]}))
"""


def test_a_strided_same_conv_with_uneven_padding_has_a_gradient():
    flags = theano_flags(FRAMEWORK)["THEANO_FLAGS"]
    with compile_cache_held(FRAMEWORK):
        out = harness.run_json(FRAMEWORK, STRIDED_SAME_SNIPPET, stdin=flags)
    assert out["pads"] == [0, 1, 0, 1]  # top, bottom, left, right: the odd pixel after, as TensorFlow
    # 8 -> 4 x 4 x 4 = 64 features; the conv's kernel and bias, the dense's weights and bias.
    assert out["shapes"] == [[2, 4], [4, 3, 3, 3], [4], [64, 4], [4]]
