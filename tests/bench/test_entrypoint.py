"""The entrypoint: one run request in, one run folder out; any run can be run again from its folder."""

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench import request, schema
from campaign import execute, plan
from campaign.runners.local import LocalRunner
from images import envs

REPO = Path(__file__).resolve().parents[2]


def _bench(python: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(python), "-m", "bench", *args], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})}, timeout=900)


def test_a_bad_request_is_one_line_and_exit_2(tmp_path):
    proc = _bench(Path(sys.executable), "run", "--request", str(tmp_path / "none.json"), "--out", str(tmp_path / "o"))
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"error: cannot read the run request {tmp_path / 'none.json'} (No such file or directory); pass the "
        "request.json of a run folder (--request results/<campaign>/<run-id>/request.json)"]
    (tmp_path / "edited.json").write_text(json.dumps({"request_version": 1}))
    proc = _bench(Path(sys.executable), "run", "--request", str(tmp_path / "edited.json"), "--out", str(tmp_path / "o"))
    assert proc.returncode == 2 and "missing field" in proc.stderr and not (tmp_path / "o").exists()
    proc = _bench(Path(sys.executable), "campaign")
    assert proc.returncode == 2 and "the only command is 'run'; host commands: python -m campaign" in proc.stderr


def test_run_json_names_the_gpus_the_campaign_gave_the_run():
    from bench.entrypoint import gpus_used

    given = [{"index": 5, "uuid": "GPU-cccc", "name": "NVIDIA H100 80GB HBM3"}]
    # Inside a container NVML lists only that GPU, as index 0: the record keeps the host's index.
    seen = [{"index": 0, "name": "NVIDIA H100 80GB HBM3 (as NVML names it here)", "uuid": "GPU-cccc"}]
    assert gpus_used(given, seen) == [{"index": 5, "uuid": "GPU-cccc", "name": seen[0]["name"]}]
    assert gpus_used(given, []) == given  # NVML unseen from the run: the host's name stands
    assert gpus_used([], seen) == []  # a run given no GPU records none
    two = given + [{"index": 1, "uuid": None, "name": "NVIDIA H100 80GB HBM3"}]
    assert gpus_used(two, seen) == [{"index": 5, "uuid": "GPU-cccc", "name": seen[0]["name"]}, two[1]]


def test_a_run_given_several_gpus_lists_them_all_and_rank_0s_stands_first():
    from bench import schema

    gpus = [{"index": 2, "uuid": "GPU-c", "name": "H100"}, {"index": 0, "uuid": "GPU-a", "name": "H100"}]
    record = {"device_used": {"requested": "gpu", "gpu": gpus[0], "gpus": gpus}}
    schema._check_device_gpus(record, "run.json")
    for bad in ([gpus[0]], [gpus[0], {"index": "0"}], "GPU-a"):
        with pytest.raises(schema.SchemaError, match="device_used.gpus"):
            schema._check_device_gpus({"device_used": {"requested": "gpu", "gpus": bad}}, "run.json")


@pytest.mark.slow
def test_a_run_re_executed_from_its_own_request_is_the_same_run(tmp_path):
    subprocess.run([sys.executable, "-m", "data", "synthetic", "--root", str(tmp_path / "data"), "--datasets",
                    "mnist"], cwd=REPO, check=True)
    runner = LocalRunner(data_root=tmp_path / "data")
    matrix = plan.Matrix(("pytorch",), ("cnn-mnist",), "cpu", "smoke", 1, "synthetic")
    cdir = tmp_path / "results" / "again"
    runs = plan.plan(matrix, runner, "again", cdir, tmp_path / "data", threads=1)
    assert execute.execute(runs, runner, cdir, 900)["ok"] == 1
    folder = cdir / runs[0].run_id
    first = schema.read_run(folder)

    python = envs.ensure_env("pytorch").python
    # The request names its data relative to the data root; this one is not ./data, so the rerun is told it.
    proc = _bench(python, "run", "--request", str(folder / request.REQUEST_FILE), "--out", str(tmp_path / "rerun"),
                  env={request.DATA_ROOT_VAR: str(tmp_path / "data")})
    assert proc.returncode == 0, proc.stderr[-2000:]
    second = schema.read_run(tmp_path / "rerun")
    assert second["status"] == "ok", second["failure"]
    assert second["run_id"] == first["run_id"] == folder.name
    for section in ("config", "spec"):
        assert second[section] == first[section], section
    assert second["dataset"]["sha256"] == first["dataset"]["sha256"]
    assert second["dataset"]["train_examples"] == first["dataset"]["train_examples"] == 512  # the smoke subset
    assert second["device_used"]["threads"]["intra_op"] == 1  # the request's thread count was obeyed
    assert request.read(tmp_path / "rerun" / request.REQUEST_FILE) == request.read(folder / request.REQUEST_FILE)
    # A finished run folder is never overwritten.
    refused = _bench(python, "run", "--request", str(folder / request.REQUEST_FILE), "--out", str(folder))
    assert refused.returncode == 2 and "already holds a finished run" in refused.stderr
    assert schema.read_run(folder) == first


def test_the_command_line_reads_the_request_before_numpy_loads():
    """The thread count is pinned from the request before NumPy (and its BLAS, which sizes its pool when it
    loads) is imported: nothing bench/__main__.py imports up to the pin may import NumPy."""
    code = ("import sys; import bench.__main__; from bench import request, threads; "
            "print(sorted(m for m in ('numpy', 'torch', 'tensorflow') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def _replaced_labels(tmp_path: Path) -> tuple[dict, Path]:
    """A smoke request planned on a small synthetic MNIST whose arrays.npz was then replaced by a valid one with
    every label 0 (meta.json untouched): the request and the prepared folder."""
    import numpy as np

    from campaign import requests, specs
    from data import synthetic
    from data.npz import write_npz
    from tests.data.fixtures import MNIST_SIZES

    folder = synthetic.make_synthetic("mnist", tmp_path / "data", sizes=MNIST_SIZES, progress=False)
    req = requests.resolve(framework="pytorch", era="current", workload="cnn-mnist", profile="smoke",
                           spec=specs.load("cnn-mnist", "smoke"), device="cpu", threads=1, seed=0, repeat=1,
                           dataset=requests.find_dataset(tmp_path / "data", "mnist", "synthetic"), campaign="t",
                           runner="local", environment=requests.Environment("cd" * 32), monitor=False)
    with np.load(folder / "arrays.npz") as npz:
        arrays = {key: np.zeros_like(npz[key]) if key.startswith("y_") else npz[key] for key in npz.files}
    write_npz(folder / "arrays.npz", arrays)
    return req, folder


def test_the_entrypoint_refuses_arrays_other_than_the_planned_ones_in_one_line(tmp_path):
    """A replaced but valid arrays.npz (all labels 0) is refused before a framework sees it, and the record names
    the sha256 of the bytes found, not the planned one."""
    from bench import entrypoint, prepared
    from bench.errors import UsageError

    req, folder = _replaced_labels(tmp_path)
    found = hashlib.sha256((folder / "arrays.npz").read_bytes()).hexdigest()
    record = schema.run_record(req)
    with pytest.raises(UsageError) as refused:
        entrypoint.train(req, folder, tmp_path / "out", record)
    assert str(refused.value) == (
        f"{Path(req['data']['path']) / 'arrays.npz'} has sha256 {found}, the run was planned for "
        f"{req['data']['arrays_sha256']}; prepare it again: run 'python -m data synthetic --datasets mnist' "
        "(make demo does it)")
    assert isinstance(refused.value, prepared.ArraysDiffer) and "framework_build" not in record["environment"]
    assert record["dataset"]["sha256"] == found != req["data"]["arrays_sha256"]


def test_run_json_names_the_sha256_of_the_arrays_the_run_read(tmp_path):
    """Through the command line, as a container runs it (--data: the folder mounted elsewhere): run.json's
    dataset.sha256 is the digest of the bytes read, and the run is not ok."""
    req, folder = _replaced_labels(tmp_path)
    request.write(tmp_path / "run", req)
    proc = _bench(Path(sys.executable), "run", "--request", str(tmp_path / "run" / request.REQUEST_FILE), "--out",
                  str(tmp_path / "run"), "--data", str(folder))
    run = schema.read_run(tmp_path / "run")
    assert proc.returncode != 0 and run["status"] == "failed"
    found = hashlib.sha256((folder / "arrays.npz").read_bytes()).hexdigest()
    assert run["dataset"]["sha256"] == found != req["data"]["arrays_sha256"]
    assert f"has sha256 {run['dataset']['sha256']}, the run was planned for" in run["failure"]["message"]
