"""Runners without launching anything: the arguments every runner passes, and a docker run's
container configured locked down (no network, read-only data, non-root)."""

import pytest

from bench.errors import UsageError
from campaign import runners
from campaign.runners.docker import DATA_MOUNT, OUT_MOUNT, container_config
from tests.runrecord import minimal_request


def test_every_runner_runs_the_request_in_its_run_folder(tmp_path):
    assert runners.entrypoint_args(tmp_path) == ["run", "--request", str(tmp_path / "request.json"),
                                                 "--out", str(tmp_path)]
    assert runners.entrypoint_args(OUT_MOUNT, DATA_MOUNT)[-2:] == ["--data", "/data"]


def test_an_unknown_runner_names_the_choices():
    with pytest.raises(UsageError, match=r"unknown runner 'slurm'; choose from: local, docker \(RUNNER=...\)"):
        runners.get("slurm")


def _request(tmp_path, device="cpu") -> dict:
    data = {"dataset": "mnist", "source": "real", "arrays_sha256": "ab" * 32, "path": str(tmp_path / "data"),
            "train_indices": None, "test_indices": None}
    return minimal_request(device=device, runner="docker", data=data, env_id="sha256:" + "12" * 32,
                           image_digest="sha256:" + "12" * 32)


def test_container_is_locked_down(tmp_path):
    pytest.importorskip("docker")
    cfg = container_config(_request(tmp_path), tmp_path / "out", (10001, 10001))
    assert cfg["image"] == "sha256:" + "12" * 32
    assert cfg["network_mode"] == "none"
    assert cfg["volumes"][str(tmp_path / "data")] == {"bind": str(DATA_MOUNT), "mode": "ro"}
    assert cfg["volumes"][str(tmp_path / "out")] == {"bind": str(OUT_MOUNT), "mode": "rw"}
    assert not cfg["user"].startswith("0:") and cfg["user"] == "10001:10001"
    assert cfg["command"] == ["run", "--request", "/out/request.json", "--out", "/out", "--data", "/data"]
    assert cfg["cap_drop"] == ["ALL"] and "no-new-privileges" in cfg["security_opt"]
    assert "device_requests" not in cfg


def test_gpu_runs_request_gpus_with_the_utility_capability(tmp_path):
    pytest.importorskip("docker")
    cfg = container_config(_request(tmp_path, "gpu"), tmp_path / "out", (1000, 1000))
    (device_request,) = cfg["device_requests"]
    assert device_request["Count"] == -1 and device_request["Capabilities"] == [["gpu", "compute", "utility"]]
