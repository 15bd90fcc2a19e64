"""Images without an engine: Dockerfiles lint clean and pin their bases, the build context takes the
optional build inputs without changing the image's identity, versions.lock is current, and a run's
container is configured locked down (no network, read-only data, non-root)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from bench import images, lockfile
from bench.errors import UsageError
from bench.runners import Launch
from bench.runners.docker import DATA_MOUNT, OUT_MOUNT, container_config

REPO = Path(__file__).resolve().parents[1]
DOCKERFILES = sorted((REPO / "images").glob("*/*/Dockerfile"))
FRAMEWORKS = ("tensorflow", "keras", "pytorch", "mxnet", "chainer", "theano")


def test_every_framework_has_both_eras():
    have = {(p.parent.parent.name, p.parent.name) for p in DOCKERFILES}
    assert {(fw, era) for fw in FRAMEWORKS for era in ("current", "paper")} <= have


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
def test_hadolint_passes(dockerfile):
    hadolint = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which("hadolint")
    if hadolint is None:
        pytest.skip("hadolint is not installed (it is in images/host/requirements.txt: make host)")
    proc = subprocess.run([hadolint, "--config", str(REPO / ".hadolint.yaml"), str(dockerfile)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
def test_base_is_pinned_by_digest_and_user_is_not_root(dockerfile):
    text = dockerfile.read_text()
    spec = images.ImageSpec(dockerfile.parent.parent.name, dockerfile.parent.name, "cpu")
    assert images.is_pinned(images.dockerfile_base(spec)), "the default base must be name@sha256:<digest>"
    assert all(line.split()[1] in ("${BASE_IMAGE}", "system") for line in text.splitlines()
               if line.startswith("FROM ")), "every FROM goes through the pinned BASE_IMAGE"
    assert re.search(r"(?m)^USER 10001:10001$", text)
    assert '"-m", "bench"]' in text.splitlines()[[i for i, line in enumerate(text.splitlines())
                                                  if line.startswith("ENTRYPOINT")][0]]


def test_versions_lock_is_current():
    assert lockfile.verify(False, [], "current", "cpu") == []


def test_versions_lock_records_cuda_and_sources_for_paper_images():
    import tomllib

    lock = tomllib.loads((REPO / "versions.lock").read_text())
    for fw in FRAMEWORKS:
        entry = lock["images"][f"{fw}/paper/cpu"]
        assert entry["sources"] and entry["base"].startswith("python:3.6")
    assert lock["images"]["tensorflow/paper/cpu"]["packages"]["tensorflow"]["sha256"] == [
        "8e70949273d52fe85c2f85c3159e0fcc666773beaae75a52ae9d90d71f599cc6"]


def _env_inputs(monkeypatch, tmp_path, certs: bool, wheels: bool) -> None:
    monkeypatch.setenv("DLREPRO_CA_CERTS", "")
    monkeypatch.setenv("DLREPRO_WHEELHOUSE", "")
    if certs:
        cert = tmp_path / "proxy.crt"
        cert.write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
        monkeypatch.setenv("DLREPRO_CA_CERTS", str(cert))
    if wheels:
        house = tmp_path / "wheels"
        house.mkdir()
        (house / "psutil-7.2.2-cp36-abi3-manylinux_2_17_x86_64.whl").write_bytes(b"locked")
        (house / "leftpad-1.0-py3-none-any.whl").write_bytes(b"not in the lock")
        monkeypatch.setenv("DLREPRO_WHEELHOUSE", str(house))


@pytest.mark.parametrize(("certs", "wheels"), [(False, False), (True, True)])
def test_build_inputs_are_optional_and_do_not_change_the_tag(monkeypatch, tmp_path, certs, wheels):
    spec = images.ImageSpec("pytorch", "current", "cpu")
    _env_inputs(monkeypatch, tmp_path, certs, wheels)
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    counts = images.stage_context(spec, ctx)
    assert counts == {"certs": int(certs), "wheels": int(wheels)}
    wheel_names = sorted(p.name for p in (ctx / "build-inputs" / "wheels").iterdir())
    assert wheel_names == (["psutil-7.2.2-cp36-abi3-manylinux_2_17_x86_64.whl"] if wheels else [])
    assert (ctx / "lock" / "requirements.txt").read_bytes() == spec.lock.read_bytes()
    assert (ctx / "bench" / "run.py").is_file() and not list(ctx.rglob("__pycache__"))
    # The tag hashes what decides the content; the build inputs are not part of it.
    assert images.tag(spec, None) == images.tag(spec, None)
    assert re.fullmatch(r"dlrepro/pytorch:current-cpu-[0-9a-f]{12}", images.tag(spec, None))


def test_tag_changes_with_the_base_and_the_variant():
    spec = images.ImageSpec("keras", "current", "cpu")
    other = "sha256:" + "ab" * 32
    assert images.tag(spec, None) != images.tag(spec, other)
    assert images.labels(spec, other)["org.dlrepro.base-image"] == other
    assert images.labels(spec, None)["org.dlrepro.lock-sha256"] == images.lock_sha256(spec)


def test_cuda_is_read_from_the_locks_cuda_wheels():
    assert images.cuda_of_lock("nvidia-cuda-runtime-cu12==12.8.90 \\\n") == "12.8"
    assert images.cuda_of_lock("mxnet-cu112==1.9.1 \\\n") == "11.2"
    assert images.cuda_of_lock("cupy-cuda92==4.5.0\n") == "9.2"
    assert images.cuda_of_lock("torch==2.13.0+cpu \\\n") is None
    # CUDA 13 wheels drop the -cuNN suffix (torch 2.13's runtime): the version still says it.
    assert images.cuda_of_lock("nvidia-cuda-runtime==13.0.96 \\\n") == "13.0"


# Frameworks with a GPU image in the current era; chainer and theano have none (no CuPy 7 / pygpu
# wheels for Python 3.11).
GPU_FRAMEWORKS = ("pytorch", "tensorflow", "keras", "mxnet")


@pytest.mark.parametrize("fw", GPU_FRAMEWORKS)
def test_gpu_lock_carries_the_cuda_versions_lock_records(fw):
    spec = images.ImageSpec(fw, "current", "gpu")
    spec.check()
    cuda = images.cuda_of_lock(spec.lock.read_text())
    assert cuda is not None, f"{spec.lock.name} of {fw} names no CUDA wheel"
    entry = tomllib.loads(lockfile.LOCK_FILE.read_text())["images"][f"{fw}/current/gpu"]
    assert entry["cuda"] == cuda and entry["lock"].endswith("requirements-gpu.txt")
    assert images.labels(spec, None)["org.dlrepro.cuda"] == cuda
    if fw == "mxnet":
        assert cuda == "11.2"  # mxnet-cu112 bundles CUDA 11.2


@pytest.mark.parametrize("fw", GPU_FRAMEWORKS)
def test_gpu_lock_keeps_the_cpu_locks_other_pins(fw):
    folder = images.ImageSpec(fw).folder
    cpu = lockfile.parse_lock((folder / "requirements.txt").read_text())
    gpu = lockfile.parse_lock((folder / "requirements-gpu.txt").read_text())
    # torch is the one package both name in different builds (2.13.0+cpu against the CUDA 2.13.0).
    differ = {n: (cpu[n]["version"], gpu[n]["version"]) for n in set(cpu) & set(gpu) - {"torch"}
              if cpu[n]["version"] != gpu[n]["version"]}
    assert not differ
    assert not {"tensorflow-cpu", "mxnet"} & set(gpu)  # the CPU builds are swapped out
    assert "+cpu" not in gpu.get("torch", {}).get("version", "")


@pytest.mark.parametrize("fw", GPU_FRAMEWORKS)
def test_gpu_variant_has_its_own_tag_and_stages_its_own_lock(monkeypatch, tmp_path, fw):
    _env_inputs(monkeypatch, tmp_path, certs=False, wheels=False)
    cpu, gpu = images.ImageSpec(fw, "current", "cpu"), images.ImageSpec(fw, "current", "gpu")
    assert images.tag(gpu, None) != images.tag(cpu, None)
    assert re.fullmatch(rf"dlrepro/{fw}:current-gpu-[0-9a-f]{{12}}", images.tag(gpu, None))
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    images.stage_context(gpu, ctx)
    staged = (ctx / "lock" / "requirements.txt").read_bytes()
    assert staged == (gpu.folder / "requirements-gpu.txt").read_bytes() != cpu.lock.read_bytes()


@pytest.mark.parametrize("fw", ["chainer", "theano"])
def test_frameworks_without_a_gpu_build_refuse_the_gpu_variant(fw):
    with pytest.raises(UsageError, match=f"no image for {fw} \\(current, gpu\\)"):
        images.ImageSpec(fw, "current", "gpu").check()


def test_freeze_drift_finds_missing_extra_and_other_versions():
    lock = "numpy==2.4.6 \\\n    --hash=sha256:" + "a" * 64 + "\npsutil==7.2.2 \\\n    --hash=sha256:" + "b" * 64 + "\n"
    assert lockfile.freeze_drift(lock, "numpy==2.4.6\npsutil==7.2.2\npip==23.0.1\nsetuptools==66.1.1\n") == []
    drift = lockfile.freeze_drift(lock, "numpy==2.4.5\nrequests==2.0\npip==23.0.1\n")
    assert drift == ["numpy: locked 2.4.6, installed 2.4.5", "psutil: locked 7.2.2, installed nothing",
                     "requests: installed 2.0, not in the lock"]


def _launch(tmp_path, device="cpu") -> Launch:
    return Launch(framework="pytorch", workload="lstm-imdb", profile="quick", device=device, seed=0, repeat=1,
                  campaign="t", run_id="r1", data_dir=tmp_path / "data", out_dir=tmp_path / "out", env_id="sha256:x")


def test_container_is_locked_down(tmp_path):
    pytest.importorskip("docker")
    cfg = container_config(_launch(tmp_path), "sha256:img", "sha256:img", (10001, 10001))
    assert cfg["network_mode"] == "none"
    assert cfg["volumes"][str(tmp_path / "data")] == {"bind": str(DATA_MOUNT), "mode": "ro"}
    assert cfg["volumes"][str(tmp_path / "out")] == {"bind": str(OUT_MOUNT), "mode": "rw"}
    assert not cfg["user"].startswith("0:") and cfg["user"] == "10001:10001"
    cmd = cfg["command"]
    assert cmd[0] == "run" and cmd[cmd.index("--data") + 1] == "/data" and cmd[cmd.index("--out") + 1] == "/out"
    assert cmd[cmd.index("--image-digest") + 1] == "sha256:img" and cmd[cmd.index("--runner") + 1] == "docker"
    assert "device_requests" not in cfg


def test_gpu_runs_request_gpus_with_the_utility_capability(tmp_path):
    pytest.importorskip("docker")
    cfg = container_config(_launch(tmp_path, "gpu"), "sha256:img", "sha256:img", (1000, 1000))
    (request,) = cfg["device_requests"]
    assert request["Count"] == -1 and request["Capabilities"] == [["gpu", "compute", "utility"]]
