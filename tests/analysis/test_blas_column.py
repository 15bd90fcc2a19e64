"""The run table's `blas` (the backend a run asked for: its sweep's blas) and `blas_loaded` (the one its record
says did the work: analysis.runs.blas_loaded over run.json environment.libraries and library_settings)."""

from __future__ import annotations

import json

import analysis
from analysis.runs import blas_loaded
from bench import schema
from tests.runfactory import make_run

NUMPY_OPENBLAS = "/env/lib/python3.11/site-packages/numpy.libs/libopenblas64_p-r0-742d56dc.3.20.so"
SCIPY_OPENBLAS = "/env/lib/python3.11/site-packages/scipy.libs/libopenblasp-r0-41284840.3.18.so"
DEBIAN_OPENBLAS = "/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0"
REFERENCE = "/usr/lib/x86_64-linux-gnu/blas/libblas.so.3"
MKL_RT = "/env/lib/libmkl_rt.so.2"
TORCH = "/env/lib/python3.11/site-packages/torch/lib/libtorch_cpu.so"


def _lib(api: str, path: str, kind: str = "blas") -> dict:
    return {"kind": kind, "api": api, "filepath": path, "version": None, "num_threads": 1, "threading_layer": None,
            "architecture": None}


def test_the_blas_a_theano_run_links_is_read_apart_from_the_copies_numpy_and_scipy_bundle():
    bundled = [_lib("openblas", NUMPY_OPENBLAS), _lib("openblas", SCIPY_OPENBLAS), _lib("gomp", "/x/libgomp.so.1",
                                                                                          "openmp")]
    assert blas_loaded({"libraries": [*bundled, _lib("other", REFERENCE)]}) == "other"
    assert blas_loaded({"libraries": [_lib("mkl", MKL_RT), *bundled]}) == "mkl"
    assert blas_loaded({"libraries": [_lib("openblas", DEBIAN_OPENBLAS), *bundled]}) == "openblas"
    # Two BLAS of the run's own: both, in name order.
    assert blas_loaded({"libraries": [_lib("other", REFERENCE), _lib("openblas", DEBIAN_OPENBLAS)]}) == "openblas+other"
    # Only NumPy's (a NumPy-based framework): that one did the work.
    assert blas_loaded({"libraries": bundled}) == "openblas"
    assert blas_loaded({"libraries": [_lib("mkl", TORCH), _lib("openblas", NUMPY_OPENBLAS)]}) == "mkl"


def test_tensorflow_is_read_from_its_onednn_switch_and_an_unrecorded_run_is_empty():
    libraries = [_lib("openblas", NUMPY_OPENBLAS)]
    assert blas_loaded({"libraries": libraries, "library_settings": {"TF_ENABLE_ONEDNN_OPTS": "0"}}) == "eigen"
    assert blas_loaded({"libraries": libraries, "library_settings": {"TF_ENABLE_ONEDNN_OPTS": "1"}}) == "onednn"
    assert blas_loaded({"libraries": libraries, "library_settings": {"TF_ENABLE_ONEDNN_OPTS": None}}) == "onednn"
    assert blas_loaded({}) is None and blas_loaded({"libraries": []}) is None


def test_a_tensorflow_without_onednn_in_its_wheel_ran_eigen_whatever_the_switch():
    def loaded(version: str, setting: str | None) -> str | None:
        return blas_loaded({"libraries": [], "packages": {"tensorflow": version},
                            "library_settings": {"TF_ENABLE_ONEDNN_OPTS": setting}})

    assert loaded("1.11.0", None) == loaded("1.11.0", "1") == "eigen"  # the paper era: no oneDNN in the wheel
    assert loaded("2.8.4", None) == "eigen" and loaded("2.8.4", "1") == "onednn"  # the switch, off by default
    assert loaded("2.16.1", None) == "onednn" and loaded("2.16.1", "0") == "eigen"


def test_the_run_table_shows_what_was_asked_beside_what_was_loaded(tmp_path):
    campaign = tmp_path / "c"
    asked = make_run(campaign, "theano", "cnn-mnist", 1, sweep={"blas": "reference"})
    record = schema.read_run(asked)
    # A run that asked for the reference BLAS but loaded OpenBLAS (a THEANO_FLAGS of the user's, say): the table
    # shows both, so the report reads the truth.
    record["environment"]["libraries"] = [_lib("openblas", DEBIAN_OPENBLAS), _lib("openblas", NUMPY_OPENBLAS)]
    (asked / schema.RUN_FILE).write_text(json.dumps(record))
    make_run(campaign, "pytorch", "cnn-mnist", 1)  # no sweep, no libraries recorded
    frame = analysis.load(campaign).set_index("framework")
    assert frame.loc["theano", "blas"] == "reference" and frame.loc["theano", "blas_loaded"] == "openblas"
    assert frame.loc["theano", "sweep"] == "blas=reference"
    assert frame[["blas", "blas_loaded"]].loc["pytorch"].isna().all()
