"""Runners: the arguments every runner passes, a docker run's container configured locked down (no
network, read-only data, non-root), and the system runner in the Python environments at hand (a bare
one, the host tools', the PyTorch one) with the Makefile's RUNNER=system wiring."""

import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from bench import schema
from bench.errors import UsageError
from campaign import execute, plan, requests, runners, specs
from campaign.runners.docker import DATA_MOUNT, OUT_MOUNT, container_config
from campaign.runners.system import (
    SystemRunner,
    installed_packages,
    label,
    packages_sha256,
    payload_path,
    system_block,
)
from images import envs
from tests.campaign.scriptrunner import prepared_mnist
from tests.runrecord import minimal_request

REPO = Path(__file__).resolve().parents[2]


def test_every_runner_runs_the_request_in_its_run_folder(tmp_path):
    assert runners.entrypoint_args(tmp_path) == ["run", "--request", str(tmp_path / "request.json"),
                                                 "--out", str(tmp_path)]
    assert runners.entrypoint_args(OUT_MOUNT, DATA_MOUNT)[-2:] == ["--data", "/data"]


def test_an_unknown_runner_names_the_choices():
    choices = r"charliecloud, docker, local, system \(RUNNER=...\)"
    with pytest.raises(UsageError, match=r"unknown runner 'slurm'; choose from: " + choices):
        runners.get("slurm")


TOY_RUNNER = """
class ToyRunner:
    name = "toy"

    def __init__(self, device="cpu", data_root=None):
        self.device, self.data_root = device, data_root
"""


def test_a_runner_module_in_the_folder_is_found_made_and_named(tmp_path, monkeypatch):
    """A runner is its module: one more file on the package's path is one more runner, with no list edited; get()
    gives its constructor what it takes, and an unknown name's error lists it."""
    (tmp_path / "toy.py").write_text(TOY_RUNNER, encoding="utf-8")
    monkeypatch.setattr(runners, "__path__", [*runners.__path__, str(tmp_path)])
    monkeypatch.delitem(sys.modules, "campaign.runners.toy", raising=False)
    assert runners.discovered() == ("charliecloud", "docker", "local", "system", "toy")
    made = runners.get("toy", device="gpu", era="paper", data_root=tmp_path)
    assert (made.name, made.device, made.data_root) == ("toy", "gpu", tmp_path)
    with pytest.raises(UsageError, match=r"choose from: charliecloud, docker, local, system, toy \(RUNNER"):
        runners.check_name("slurm")
    monkeypatch.delitem(sys.modules, "campaign.runners.toy", raising=False)


def test_every_runner_module_names_its_class_and_requests_take_only_a_discovered_runner(tmp_path):
    """Each discovered module's runner class carries the module's name; the host refuses a request naming no
    runner in one line, the payload (which cannot import host code) checks the name's form only."""
    assert {runners.runner_class(n).name for n in runners.discovered()} == set(runners.discovered())
    environment = requests.Environment("cd" * 32)
    with pytest.raises(UsageError, match=r"^unknown runner 'slurm'; choose from: charliecloud, docker, local, system"):
        requests.resolve(framework="pytorch", era="current", workload="cnn-mnist", profile="smoke",
                         spec=specs.load("cnn-mnist", "smoke"), dataset=None, device="cpu", threads=1, seed=0,
                         repeat=1, campaign="t", runner="slurm", environment=environment)
    assert minimal_request(runner="slurm")["runner"] == "slurm"  # a well-formed name: the payload's check


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


def test_a_run_on_generated_data_mounts_no_data(tmp_path):
    pytest.importorskip("docker")
    from campaign import requests, specs

    spec = specs.load("fcn-s-synthetic", "smoke")
    req = minimal_request(runner="docker", workload="fcn-s-synthetic", spec=spec, data=requests.generated_data(spec),
                          env_id="sha256:" + "12" * 32, image_digest="sha256:" + "12" * 32)
    cfg = container_config(req, tmp_path / "out", (10001, 10001))
    assert list(cfg["volumes"]) == [str(tmp_path / "out")]
    assert cfg["command"] == ["run", "--request", "/out/request.json", "--out", "/out"]


def test_gpu_runs_request_gpus_with_the_utility_capability(tmp_path):
    pytest.importorskip("docker")
    cfg = container_config(_request(tmp_path, "gpu"), tmp_path / "out", (1000, 1000))
    (device_request,) = cfg["device_requests"]
    assert device_request["Count"] == -1 and device_request["Capabilities"] == [["gpu", "compute", "utility"]]


def test_a_container_run_is_bounded_as_its_request_records(tmp_path):
    pytest.importorskip("docker")
    limits = runners.container_limits("2g", "512")
    data = {"dataset": "mnist", "source": "real", "arrays_sha256": "ab" * 32, "path": "prepared/mnist",
            "train_indices": None, "test_indices": None}
    req = minimal_request(runner="docker", data=data, env_id="sha256:" + "12" * 32,
                          image_digest="sha256:" + "12" * 32, limits=limits.record())
    assert req["environment"]["limits"] == {"memory_bytes": 2 * 2**30, "pids": 512, "read_only_root": True,
                                            "init": True}
    cfg = container_config(req, tmp_path / "out", (10001, 10001), data_root=tmp_path / "data")
    assert cfg["read_only"] is True and cfg["init"] is True
    assert cfg["mem_limit"] == cfg["memswap_limit"] == 2 * 2**30  # no swap beyond the limit
    assert cfg["pids_limit"] == 512
    # The one writable place besides /out: a bounded tmpfs, exec (Theano loads the modules it compiles there).
    assert cfg["tmpfs"] == {"/tmp": f"rw,exec,nosuid,nodev,size={2**30},mode=1777"}
    assert cfg["environment"]["HOME"] == cfg["environment"]["TMPDIR"] == "/tmp"
    # The request's data path is relative to the data root; the runner mounts that folder of its own data root.
    assert cfg["volumes"][str((tmp_path / "data" / "prepared" / "mnist").resolve())] == {"bind": "/data", "mode": "ro"}
    # A request from before limits were recorded gets the host's defaults.
    old = container_config(_request(tmp_path), tmp_path / "out", (10001, 10001))
    assert (old["mem_limit"], old["pids_limit"], old["read_only"], old["init"]) == (
        runners.default_memory_bytes(), runners.default_pids(), True, True)


def test_container_bounds_default_to_the_host_less_a_reserve():
    gib = 2**30
    assert runners.default_memory_bytes(16 * gib) == 16 * gib - int(1.6 * gib)  # a tenth kept for the host
    assert runners.default_memory_bytes(4 * gib) == 3 * gib  # at least 1 GiB kept
    assert runners.default_memory_bytes(1 * gib) == 256 * 2**20  # never below what a framework needs to start
    assert runners.default_pids(2) == runners.default_pids(128) == 4096 and runners.default_pids(256) == 8192
    assert runners.memory_bytes("16g") == runners.memory_bytes("16GiB") == 16 * gib
    assert runners.memory_bytes("512m") == 512 * 2**20


@pytest.mark.parametrize("variable, value, line", [
    ("MEMORY", "lots", "error: MEMORY=lots is not a memory size of at least 256m; set e.g. MEMORY=16g (each "
     "container run's memory limit), or leave it unset for the host's memory less a tenth"),
    ("MEMORY", "10m", "error: MEMORY=10m is not a memory size of at least 256m; set e.g. MEMORY=16g (each "
     "container run's memory limit), or leave it unset for the host's memory less a tenth"),
    ("PIDS", "0", "error: PIDS=0 is not a whole number of at least 64; set e.g. PIDS=4096 (processes and "
     "threads per container run), or leave it unset"),
    ("PIDS", "-5", "error: PIDS=-5 is not a whole number of at least 64; set e.g. PIDS=4096 (processes and "
     "threads per container run), or leave it unset"),
])
def test_a_bad_memory_or_pids_limit_stops_the_campaign_before_any_work_in_one_line(tmp_path, variable, value, line):
    args = ["make", "-s", "run", "WORKLOADS=cnn-mnist", "FRAMEWORKS=pytorch", "RUNNER=local", "DATA=synthetic",
            f"CAMPAIGN=bounds-{variable.lower()}", f"{variable}={value}"]
    done = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and done.stderr.strip().splitlines()[0] == line
    assert not (REPO / "results" / f"bounds-{variable.lower()}").exists()  # nothing written


def test_the_local_and_system_runners_pass_the_data_folder_and_record_no_bounds(tmp_path):
    fake = tmp_path / "python"  # records the command line it was given, as the entrypoint's python would get it
    fake.write_text('#!/bin/sh\necho "$@"\n')
    fake.chmod(0o755)
    data = {"dataset": "mnist", "source": "real", "arrays_sha256": "ab" * 32, "path": "prepared/mnist",
            "train_indices": None, "test_indices": None}
    runner = SystemRunner(python=str(fake), data_root=tmp_path / "data")
    (tmp_path / "run").mkdir()
    assert runner.launch(minimal_request(data=data), tmp_path / "run", 30).returncode == 0
    argv = (tmp_path / "run" / schema.LOG_FILE).read_text().split()
    assert argv[argv.index("--data") + 1] == str((tmp_path / "data" / "prepared" / "mnist").resolve())
    assert runners.NOT_APPLIED.record() == {"memory_bytes": None, "pids": None, "read_only_root": False,
                                            "init": False}


# --- The system runner ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def bare_python(tmp_path_factory) -> str:
    """A Python with nothing installed, not even pip."""
    folder = tmp_path_factory.mktemp("bare")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder / "venv")], check=True)
    return str(folder / "venv" / "bin" / "python")


@pytest.fixture()
def broken_torch(tmp_path, monkeypatch) -> Path:
    """A PYTHONPATH entry whose torch fails on import, as a site's own (broken) build could."""
    (tmp_path / "site" / "torch").mkdir(parents=True)
    (tmp_path / "site" / "torch" / "__init__.py").write_text("raise RuntimeError('the torch on PYTHONPATH')\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "site"))
    return tmp_path / "site"


def test_a_missing_package_is_named_with_the_fix(bare_python):
    with pytest.raises(UsageError) as caught:
        SystemRunner(python=sys.executable).prepare("pytorch")  # the host tools' Python has no torch
    assert str(caught.value) == (f"pytorch cannot run in the system Python {sys.executable}: ModuleNotFoundError: "
                                 "No module named 'torch'; pip install torch into it, or use RUNNER=local (a locked "
                                 "environment)")
    with pytest.raises(UsageError, match="No module named 'psutil'; pip install psutil into it"):
        SystemRunner(python=bare_python).prepare("pytorch")  # the run's monitor needs psutil first


def test_the_environment_is_checked_with_its_own_pythonpath(broken_torch):
    with pytest.raises(UsageError, match="pytorch does not import in the system Python .*: RuntimeError: the torch "
                                         "on PYTHONPATH; repair that environment, or use RUNNER=local"):
        SystemRunner(python=sys.executable).prepare("pytorch")
    assert payload_path() == f"{REPO}{os.pathsep}{broken_torch}"


def test_packages_come_from_pip_freeze_or_else_from_importlib_metadata(bare_python):
    lines, source = installed_packages(sys.executable, None)
    assert source == "pip freeze"
    assert any(line.startswith("numpy==") for line in lines)
    assert installed_packages(bare_python, ["b==2", "a==1"]) == (["b==2", "a==1"], "importlib.metadata")
    with pytest.raises(UsageError, match="has neither pip nor importlib.metadata"):
        installed_packages(bare_python, None)


def test_the_environment_id_is_the_packages_and_the_python():
    digest = packages_sha256("3.11.7", ["numpy==2.4.6", "Torch==2.5.1"])
    assert digest == packages_sha256("3.11.7", ["Torch==2.5.1", "numpy==2.4.6", ""])  # order and blanks aside
    assert digest != packages_sha256("3.12.1", ["numpy==2.4.6", "Torch==2.5.1"])  # another Python
    assert digest != packages_sha256("3.11.7", ["numpy==2.4.6", "Torch==2.5.1+cu124"])  # another build


def test_a_system_environment_is_labelled_as_such():
    found = {"python": "3.11.7", "executable": "/usr/bin/python3", "package": "torch",
             "versions": {"torch": "2.5.1", "numpy": "2.4.6", "python": "3.11.7", "cuda": "12.4", "cudnn": "90100"}}
    system = system_block(found, ["torch==2.5.1"], "pip freeze")
    assert system["cuda"] == "12.4" and "python" not in system["frameworks"]
    sha = packages_sha256("3.11.7", ["torch==2.5.1"])
    assert label(system) == ("system environment (not a kit image or lock): Python 3.11.7 (/usr/bin/python3), "
                             f"packages sha256 {sha[:12]} (pip freeze), torch 2.5.1 (CUDA 12.4)")
    cpu = system_block(dict(found, versions={"torch": "2.5.1+cpu"}), [], "importlib.metadata")
    assert label(cpu).endswith("(importlib.metadata), torch 2.5.1+cpu (no CUDA)")


def test_a_run_launched_by_the_system_runner_keeps_the_environment_as_it_is(tmp_path, broken_torch):
    """A real launch in the host tools' Python: the entrypoint runs there with the environment's own
    PYTHONPATH (whose torch fails), records the failure, and run.json carries environment.system."""
    prepared_mnist(tmp_path / "data")
    runner = SystemRunner(python=sys.executable, data_root=tmp_path / "data")
    packages, source = installed_packages(sys.executable, None)
    system = system_block({"python": platform.python_version(), "executable": sys.executable, "package": "torch",
                           "versions": {"torch": "from PYTHONPATH"}}, packages, source)
    environment = requests.Environment(system["packages_sha256"], system=system)
    req = requests.resolve(
        framework="pytorch", era="current", workload="cnn-mnist", profile="smoke",
        spec=specs.load("cnn-mnist", "smoke"), dataset=requests.find_dataset(tmp_path / "data", "mnist", "real"),
        device="cpu", threads=1, seed=0, repeat=1, campaign="t", runner=runner.name, environment=environment)
    run = plan.PlannedRun(req, "pytorch cnn-mnist cpu repeat 1")
    (tmp_path / "results").mkdir()
    record = execute.execute_one(run, runner, tmp_path / "results", timeout_s=120)
    assert record["status"] == "failed" and record["failure"]["cause"] == "crash"
    assert "RuntimeError: the torch on PYTHONPATH" in record["failure"]["message"]
    assert record["config"]["runner"] == "system" and record["environment"]["system"] == system
    assert record["environment"]["env_id"] == system["packages_sha256"]
    assert record["host"]["python"] == system["python"]
    assert "the torch on PYTHONPATH" in (tmp_path / "results" / run.run_id / schema.LOG_FILE).read_text()


@pytest.mark.slow
def test_the_system_runner_trains_in_an_existing_environment(tmp_path):
    """cnn-mnist (smoke) in an existing PyTorch environment, used as it is: run.json names it."""
    subprocess.run([sys.executable, "-m", "data", "synthetic", "--root", str(tmp_path / "data"), "--datasets",
                    "mnist"], cwd=REPO, check=True)
    python = envs.ensure_env("pytorch").python
    runner = SystemRunner(python=python, data_root=tmp_path / "data")
    matrix = plan.Matrix(("pytorch",), ("cnn-mnist",), "cpu", "smoke", 1, "synthetic")
    cdir = tmp_path / "results" / "system"
    runs = plan.plan(matrix, runner, "system", cdir, tmp_path / "data", threads=1)
    assert execute.execute(runs, runner, cdir, 900)["ok"] == 1
    record = schema.read_run(cdir / runs[0].run_id)
    system = record["environment"]["system"]
    assert record["config"]["runner"] == "system" and record["environment"]["env_id"] == system["packages_sha256"]
    assert system["executable"] == str(python) and system["packages_source"] == "pip freeze"
    assert system["framework_package"] == "torch" and system["frameworks"]["torch"] == record["environment"][
        "framework_version"]
    assert system["python"] == record["host"]["python"]
    assert list(schema.read_monitor(cdir / runs[0].run_id)), "no monitor samples"
    # The same environment planned again is the same environment: the finished run is found.
    again = plan.plan(matrix, SystemRunner(python=python), "system", cdir, tmp_path / "data", threads=1)
    assert [r.run_id for r in again] == [r.run_id for r in runs]


def _dry_run(*args: str) -> str:
    return subprocess.run(["make", "-n", "--no-print-directory", "cpu-lstm", "PROFILE=quick", "DATA=synthetic",
                           "FRAMEWORKS=pytorch", *args], cwd=REPO, capture_output=True, text=True, timeout=120,
                          check=True).stdout


def test_runner_system_runs_the_host_stages_on_python_and_builds_nothing():
    commands = _dry_run("RUNNER=system", "PYTHON=/opt/site/bin/python3")
    assert "/opt/site/bin/python3 -m campaign.hostcheck" in commands
    for stage in ("-m data synthetic", "-m campaign run", "-m analysis"):
        assert f"/opt/site/bin/python3 {stage}" in commands, stage
    assert ".venv" not in commands and "pip install" not in commands and "-m venv" not in commands
    assert "/opt/site/bin/python3" not in _dry_run("RUNNER=local", "PYTHON=/opt/site/bin/python3")


# --- One GPU per run ---------------------------------------------------------------------------

NVML_LISTS = [{"index": i, "name": "NVIDIA A100-SXM4-40GB", "uuid": f"GPU-{i}0000000-aaaa-bbbb-cccc-dddddddddddd",
               "compute_capability": "8.0", "memory_total_mb": 40536} for i in range(3)]


def test_gpus_all_or_a_list_of_nvml_indices():
    assert [s.index for s in runners.gpu_slots(NVML_LISTS)] == [0, 1, 2]
    picked = runners.gpu_slots(NVML_LISTS, "2, 0")
    assert picked == [runners.GpuSlot(2, NVML_LISTS[2]["uuid"], "NVIDIA A100-SXM4-40GB"),
                      runners.GpuSlot(0, NVML_LISTS[0]["uuid"], "NVIDIA A100-SXM4-40GB")]
    with pytest.raises(UsageError) as exc:
        runners.gpu_slots(NVML_LISTS, "0,4")
    assert str(exc.value) == ("GPUS=0,4 names '4', which is not a GPU of this machine (NVML indices: 0, 1, 2); "
                              "set GPUS=all or a comma-separated list of those indices, e.g. GPUS=0,2")


def test_a_gpu_run_asks_docker_for_exactly_its_gpus_by_id(tmp_path):
    pytest.importorskip("docker")
    slot = runners.gpu_slots(NVML_LISTS, "1")[0]
    cfg = container_config(_request(tmp_path, "gpu"), tmp_path / "out", (1000, 1000), (slot,))
    (device_request,) = cfg["device_requests"]
    assert device_request["DeviceIDs"] == [slot.uuid] and device_request["Count"] == 0
    assert device_request["Capabilities"] == [["gpu", "compute", "utility"]]
    # The entrypoint learns which GPU it is.
    assert {k: cfg["environment"][k] for k in ("DLREPRO_GPU_INDEX", "DLREPRO_GPU_UUID", "DLREPRO_GPU_NAME")} == {
        "DLREPRO_GPU_INDEX": "1", "DLREPRO_GPU_UUID": slot.uuid, "DLREPRO_GPU_NAME": "NVIDIA A100-SXM4-40GB"}
    without_uuid = container_config(_request(tmp_path, "gpu"), tmp_path / "out", (1000, 1000), (runners.GpuSlot(1),))
    assert without_uuid["device_requests"][0]["DeviceIDs"] == ["1"]
    # A data-parallel run given two GPUs asks for both in one request and learns both, rank 0's first.
    two = tuple(runners.gpu_slots(NVML_LISTS, "2,0"))
    cfg = container_config(_request(tmp_path, "gpu"), tmp_path / "out", (1000, 1000), two)
    assert cfg["device_requests"][0]["DeviceIDs"] == [two[0].uuid, two[1].uuid]
    assert cfg["environment"]["DLREPRO_GPU_INDEX"] == "2,0"
    from bench.gpu import assigned_gpus
    assert [g["uuid"] for g in assigned_gpus(cfg["environment"])] == [two[0].uuid, two[1].uuid]


def test_a_local_gpu_run_sees_only_its_gpu_in_nvml_order(tmp_path):
    """The local (and system) runner's real launch, with a stand-in interpreter that reports its environment."""
    from campaign.runners.local import launch_entrypoint

    python = tmp_path / "python"
    python.write_text("#!/bin/sh\necho CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES CUDA_DEVICE_ORDER=$CUDA_DEVICE_ORDER "
                      "DLREPRO_GPU_INDEX=$DLREPRO_GPU_INDEX DLREPRO_GPU_UUID=$DLREPRO_GPU_UUID\n")
    python.chmod(0o755)
    slot = runners.gpu_slots(NVML_LISTS, "2")[0]
    (tmp_path / "run").mkdir()
    assert launch_entrypoint(python, tmp_path / "run", 30, pythonpath=str(REPO), gpus=(slot,)).returncode == 0
    assert (tmp_path / "run" / "log.txt").read_text().split() == [
        "CUDA_VISIBLE_DEVICES=2", "CUDA_DEVICE_ORDER=PCI_BUS_ID", "DLREPRO_GPU_INDEX=2",
        f"DLREPRO_GPU_UUID={slot.uuid}"]
