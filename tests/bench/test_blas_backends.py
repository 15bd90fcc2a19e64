"""bench/blas_backends.py: the sweep axis `blas`, applied in the run's process before its framework loads.

The fast tests apply backends in this process's environment (restored after each) and hold the refusals to one
line each. The slow tests run the entrypoint for real on Wu et al.'s Theano LeNet and TensorFlow MNIST network:
a Theano run at "openblas" and one at "reference" must have loaded different BLAS (read from each process by
bench/blas.py and held against /proc/<pid>/maps read from outside, and the reference run no OpenBLAS of the
system at all), and TensorFlow runs at "eigen" and "onednn" must record the oneDNN switch each asked for.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from analysis.runs import blas_loaded
from bench import blas, blas_backends, request, schema
from bench.errors import UsageError
from images import envs
from tests.procmaps import run_watched
from tests.runrecord import minimal_request
from tests.sweepruns import data_root, sweep_requests

REPO = Path(__file__).resolve().parents[2]


def _req(framework: str, value: str | None, era: str = "current") -> dict:
    return {"framework": framework, "era": era, **({"sweep": {"blas": value}} if value else {})}


@pytest.fixture
def env(monkeypatch):
    """This process's environment, restored after the test (apply() writes os.environ)."""
    for var in ("THEANO_FLAGS", blas_backends.ONEDNN_VAR, "MKL_THREADING_LAYER"):
        monkeypatch.delenv(var, raising=False)
    saved = dict(os.environ)
    yield os.environ
    os.environ.clear()
    os.environ.update(saved)


@pytest.mark.parametrize("framework", ["tensorflow", "keras"])
@pytest.mark.parametrize("value, setting", [("onednn", "1"), ("eigen", "0")])
def test_tensorflow_and_keras_get_the_onednn_switch(env, framework, value, setting):
    assert blas_backends.apply(_req(framework, value)).env == {"TF_ENABLE_ONEDNN_OPTS": setting}
    assert env["TF_ENABLE_ONEDNN_OPTS"] == setting


def test_a_request_without_a_blas_point_changes_nothing(env):
    before = dict(env)
    assert blas_backends.apply(_req("theano", None)) is None
    assert dict(env) == before


def test_a_theano_backend_replaces_blas_ldflags_and_keeps_the_other_flags(env):
    if not Path(blas_backends.REFERENCE_BLAS_DIR, "libblas.so").exists():
        pytest.skip("Debian's reference BLAS is not installed (apt-get install libblas-dev)")
    env["THEANO_FLAGS"] = "floatX=float64,blas.ldflags=-lopenblas"
    blas_backends.apply(_req("theano", "reference"))
    assert env["THEANO_FLAGS"] == f"floatX=float64,blas.ldflags=-L{blas_backends.REFERENCE_BLAS_DIR} -lblas"


def test_mkl_without_the_mkl_wheel_stops_the_run_in_one_line_naming_the_fix(env, tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "prefix", str(tmp_path))  # an environment without the wheel's lib/libmkl_rt.so.N
    with pytest.raises(UsageError) as caught:
        blas_backends.apply(_req("theano", "mkl"))
    text = str(caught.value)
    assert "\n" not in text and "libmkl_rt.so.*" in text and "add mkl to images/theano/current/requirements.in" in text
    assert "THEANO_FLAGS" not in env and "MKL_THREADING_LAYER" not in env  # nothing applied


def test_a_run_asking_for_mkl_where_the_wheel_is_missing_stops_before_training_in_one_line(tmp_path):
    """The real command, in this (host) environment, which has no mkl wheel: exit 2, one line, no run.json."""
    if blas_backends.mkl_runtime() is not None:
        pytest.skip("this environment has the mkl wheel")
    request.write(tmp_path / "req", minimal_request(framework="theano", sweep={"blas": "mkl"}))
    proc = subprocess.run([sys.executable, "-m", "bench", "run", "--request", str(tmp_path / "req" / "request.json"),
                           "--out", str(tmp_path / "out")], cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith("error: BLAS backend 'mkl' needs the mkl wheel's libmkl_rt.so.*")
    assert not (tmp_path / "out" / schema.RUN_FILE).exists()


def test_mkl_is_linked_by_the_wheels_versioned_file_name(env, tmp_path, monkeypatch):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "libmkl_rt.so.2").write_bytes(b"")  # the wheel ships no unversioned libmkl_rt.so
    monkeypatch.setattr(sys, "prefix", str(tmp_path))
    blas_backends.apply(_req("theano", "mkl"))
    # One -L folder (Theano adds it to the rpath) and the file by name: no comma, which THEANO_FLAGS splits on.
    assert env["THEANO_FLAGS"] == f"blas.ldflags=-L{tmp_path / 'lib'} -l:libmkl_rt.so.2"
    assert env["MKL_THREADING_LAYER"] == "GNU"  # GNU's OpenMP, as Theano's own check asks: no libiomp5 needed


@pytest.mark.parametrize("framework, era, value, text", [
    ("pytorch", "current", "mkl", "pytorch cannot choose its BLAS (it computes with the one its packages bundle); "
                                  "blas sweeps run with FRAMEWORKS=keras tensorflow theano"),
    ("tensorflow", "current", "openblas", "tensorflow has no BLAS backend 'openblas' (it has onednn, eigen)"),
    ("theano", "current", "eigen", "theano has no BLAS backend 'eigen' (it has openblas, reference, mkl)"),
    ("theano", "paper", "openblas", "the BLAS switch is written for the current era, not paper (ERA=current)"),
])
def test_a_backend_a_framework_cannot_switch_to_is_refused_in_one_line(env, framework, era, value, text):
    assert blas_backends.refusal(framework, era, value) == text
    with pytest.raises(UsageError, match="plan the run again"):
        blas_backends.apply(_req(framework, value, era))


def test_every_framework_that_can_switch_can_reach_each_of_its_values():
    for framework in blas_backends.FEATURE.frameworks("current"):
        for value in blas_backends.backends(framework):
            assert blas_backends.refusal(framework, "current", value) is None
    assert blas_backends.values() == ["onednn", "eigen", "openblas", "reference", "mkl"]


# -- real runs (slow) ------------------------------------------------------------------------------
def _run(python: Path, req: Path, tmp_path: Path, value: str) -> tuple[dict, set[str]]:
    """Run `python -m bench run` on a request of sweep_requests(tmp_path, ...) into tmp_path/value: its validated
    run.json, and every file the kernel showed mapped into its process while it ran (tests/procmaps.py)."""
    out = tmp_path / value
    mapped = run_watched(python, req, out, timeout=600, data_root=data_root(tmp_path))
    record = schema.read_run(out)
    assert record["status"] == "ok", record["failure"]
    return record, mapped


def _system_blas(record: dict) -> list:
    """The BLAS entries of a run's libraries that are the system's (/usr/...), not the wheels' bundled copies."""
    return [lib for lib in record["environment"]["libraries"]
            if lib["kind"] == "blas" and lib["filepath"].startswith("/usr/")]


@pytest.mark.slow
def test_theano_runs_at_openblas_and_reference_load_the_blas_each_asked_for(tmp_path):
    if not Path(blas_backends.REFERENCE_BLAS_DIR, "libblas.so").exists():
        pytest.skip("Debian's reference BLAS is not installed (apt-get install libblas-dev)")
    reqs = sweep_requests(tmp_path, "theano", "wu-theano-lenet", "blas", ["openblas", "reference"])
    python = envs.ensure_env("theano").python
    runs = {value: _run(python, req, tmp_path, value) for value, req in reqs.items()}
    records = {value: record for value, (record, _) in runs.items()}
    for value, (record, mapped) in runs.items():  # what each run recorded, its process had mapped
        recorded = {blas.host_path(lib["filepath"], str(python.parent.parent))
                    for lib in record["environment"]["libraries"] if lib["kind"] == "blas"}
        assert recorded and recorded <= mapped, value
    openblas, reference = (_system_blas(records[v]) for v in ("openblas", "reference"))
    assert [lib["api"] for lib in openblas] == ["openblas"] and openblas[0]["num_threads"] == 1
    # The reference run loaded Debian's reference BLAS and no OpenBLAS of the system (its threads are not set
    # through one it does not compute with).
    assert [(lib["api"], os.path.dirname(lib["filepath"])) for lib in reference] == [
        ("other", blas_backends.REFERENCE_BLAS_DIR)]
    assert not {lib["filepath"] for lib in reference} & runs["openblas"][1]  # never loaded by the OpenBLAS run
    assert records["reference"]["device_used"]["threads"]["openblas"] is None
    flags = {v: r["device_used"]["theano_config"]["blas.ldflags"] for v, r in records.items()}
    assert flags == {v: blas_backends.backends("theano")[v].ldflags for v in flags}
    assert {v: blas_loaded(r["environment"]) for v, r in records.items()} == {"openblas": "openblas",
                                                                              "reference": "other"}
    assert {v: r["config"]["sweep"] for v, r in records.items()} == {v: {"blas": v} for v in records}


@pytest.mark.slow
def test_tensorflow_runs_at_eigen_and_onednn_record_the_switch_each_asked_for(tmp_path):
    reqs = sweep_requests(tmp_path, "tensorflow", "wu-tf-mnist", "blas", ["eigen", "onednn"])
    python = envs.ensure_env("tensorflow").python
    records = {value: _run(python, req, tmp_path, value)[0] for value, req in reqs.items()}
    assert all(lib["kind"] in blas.KINDS for r in records.values() for lib in r["environment"]["libraries"])
    settings = {v: r["environment"]["library_settings"] for v, r in records.items()}
    # TensorFlow's cuDNN autotuning variable is recorded too, unset outside a cudnn_autotune sweep.
    assert settings == {"eigen": {"TF_ENABLE_ONEDNN_OPTS": "0", "TF_CUDNN_USE_AUTOTUNE": None},
                        "onednn": {"TF_ENABLE_ONEDNN_OPTS": "1", "TF_CUDNN_USE_AUTOTUNE": None}}
    assert {v: blas_loaded(r["environment"]) for v, r in records.items()} == {"eigen": "eigen", "onednn": "onednn"}
