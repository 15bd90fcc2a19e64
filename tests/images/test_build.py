"""Images without an engine: one Dockerfile per era lints clean and pins its base, the build context
holds the payload and takes the optional build inputs without changing the image's identity, the
tag follows the payload and not the host code, and versions.lock is current."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from bench.errors import UsageError
from bench.frameworks import ERAS
from images import build as images
from images import lockfile

REPO = Path(__file__).resolve().parents[2]
DOCKERFILES = sorted((REPO / "images").glob("*.Dockerfile"))
FRAMEWORKS = ("tensorflow", "keras", "pytorch", "mxnet", "chainer", "theano")


def test_one_dockerfile_per_era_and_every_framework_has_a_lock_in_both():
    assert [p.name for p in DOCKERFILES] == sorted(f"{era}.Dockerfile" for era in ERAS)
    assert not list((REPO / "images").glob("*/*/Dockerfile")), "a framework is a build argument, not a Dockerfile"
    for era in ERAS:
        assert set(images.era_packages()[era]["frameworks"]) == set(FRAMEWORKS)
        for fw in FRAMEWORKS:
            images.ImageSpec(fw, era).check()


def test_framework_packages_are_build_arguments():
    assert images.ImageSpec("theano").packages()["FRAMEWORK_PACKAGES"].split() == [
        "g++=4:12.2.0-3", "python3-dev=3.11.2-1+b1", "libopenblas-dev=0.3.21+ds-4", "libblas-dev=3.11.0-2"]
    assert images.ImageSpec("pytorch").packages()["FRAMEWORK_PACKAGES"] == ""
    era = {images.ImageSpec(fw).packages()["ERA_PACKAGES"] for fw in FRAMEWORKS}
    assert len(era) == 1 and "python3=3.11.2-1+b1" in era.pop()  # one shared layer for the era
    for dockerfile in DOCKERFILES:
        assert "ARG FRAMEWORK_PACKAGES" in dockerfile.read_text()
    # hadolint cannot see through the build arguments: every package must be pinned here.
    for era, table in images.era_packages().items():
        for name in table.get("apt", []) + [p for fw in table["frameworks"].values() for p in fw.get("apt", [])]:
            assert re.fullmatch(r"[a-z0-9.+-]+=\S+", name), (era, name)


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.stem)
def test_hadolint_passes(dockerfile):
    hadolint = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which("hadolint")
    if hadolint is None:
        pytest.skip("hadolint is not installed (it is in images/host/requirements.txt: make host)")
    proc = subprocess.run([hadolint, "--config", str(REPO / ".hadolint.yaml"), str(dockerfile)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.stem)
def test_base_is_pinned_by_digest_and_user_is_not_root(dockerfile):
    text = dockerfile.read_text()
    spec = images.ImageSpec("pytorch", dockerfile.name.split(".")[0], "cpu")
    assert images.is_pinned(images.dockerfile_base(spec)), "the default base must be name@sha256:<digest>"
    assert "LABEL" not in text, "labels are set in one place: images/build.py labels()"
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
    assert (ctx / "Dockerfile").read_bytes() == (REPO / "images" / "current.Dockerfile").read_bytes()
    assert not list(ctx.rglob("__pycache__"))
    # The tag hashes what decides the content; the build inputs are not part of it.
    assert images.tag(spec, None) == images.tag(spec, None)
    assert re.fullmatch(r"dlrepro/pytorch:current-cpu-[0-9a-f]{12}", images.tag(spec, None))


def test_a_file_from_a_declared_index_goes_into_the_wheelhouse_and_the_lock_is_staged_as_it_is(monkeypatch, tmp_path):
    # images.build fetches it on the host (sources.fetch_all): the build's pip cannot reach a loopback index.
    spec = images.ImageSpec("pytorch", "current", "cpu")
    _env_inputs(monkeypatch, tmp_path, certs=False, wheels=False)
    fetched = tmp_path / "cache" / "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"
    fetched.parent.mkdir()
    fetched.write_bytes(b"the locked torch file")
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    assert images.stage_context(spec, ctx, indexed=[fetched]) == {"certs": 0, "wheels": 1}
    staged = ctx / "build-inputs" / "wheels" / fetched.name
    assert staged.read_bytes() == b"the locked torch file" and staged.stat().st_ino == fetched.stat().st_ino
    assert (ctx / "lock" / "requirements.txt").read_bytes() == spec.lock.read_bytes()
    assert sorted(p.name for p in (ctx / "lock").iterdir()) == ["requirements.txt"]


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


def test_the_context_carries_the_payload_and_nothing_of_the_host(tmp_path, monkeypatch):
    _env_inputs(monkeypatch, tmp_path, certs=False, wheels=False)
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    images.stage_context(images.ImageSpec("pytorch", "current", "cpu"), ctx)
    staged = {str(p.relative_to(ctx)) for p in ctx.rglob("*.py")}
    assert {"bench/entrypoint.py", "bench/request.py", "bench/frameworks/current/pytorch.py"} <= staged
    assert all(name.startswith("bench/") for name in staged), "host code (campaign/, images/, ...) never enters"
    assert not [n for n in staged if n.startswith("bench/frameworks/paper/")], "other eras' modules stay out"
    assert {p.suffix for p in ctx.rglob("bench/**/*") if p.is_file()} == {".py"}, "no spec files: the request has it"


def _repo_copy(dest: Path) -> Path:
    """The checkout's tracked and untracked-not-ignored files, copied to dest."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, capture_output=True,
                           check=True).stdout.decode().split("\0")
    for name in filter(None, files):
        if (REPO / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, dest / name)
    return dest


def _tags(repo: Path) -> list[str]:
    out = []
    for era, variant in (("current", "cpu"), ("current", "gpu"), ("paper", "cpu")):
        fws = FRAMEWORKS if variant == "cpu" else GPU_FRAMEWORKS
        out += subprocess.run([sys.executable, "-m", "images", "tags", "--era", era, "--variant", variant,
                               "--frameworks", " ".join(fws)], cwd=repo, capture_output=True, text=True,
                              check=True).stdout.split()
    return out


def test_host_edits_keep_every_tag_and_payload_edits_change_them(tmp_path):
    repo = _repo_copy(tmp_path / "repo")
    before = _tags(repo)
    assert len(before) == 16 and len(set(before)) == 16
    for host_module in ("campaign/plan.py", "images/lockfile.py", "images/build.py", "campaign/overhead.py",
                        "analysis/report.py", "data/prepare.py", "campaign/workloads/cnn-mnist.toml",
                        "images/pytorch/current/sources.toml"):  # where a file comes from: the hashes decide
        with open(repo / host_module, "a") as fh:
            fh.write("\n# an edit on the host side\n")
    assert _tags(repo) == before
    with open(repo / "bench" / "monitor.py", "a") as fh:
        fh.write("\n# an edit inside the payload\n")
    after = _tags(repo)
    assert all(a != b for a, b in zip(after, before)), "every image carries the payload's monitor"


def test_paper_dockerfile_reads_debian_s_archive_of_retired_releases():
    text = (REPO / "images" / "paper.Dockerfile").read_text()
    assert "ARG BASE_IMAGE=python:3.6.15-slim-buster@sha256:e10aa836" in text
    assert "[check-valid-until=no]" in text and "debian-security /updates" in text
    assert "ARG DEBIAN_ARCHIVE" in text and ".org" not in text, "the archive's host is derived, not written here"
    assert images.era_build_args("current") == {}


def test_debian_archive_is_a_paper_build_argument_only_when_set(monkeypatch):
    monkeypatch.delenv(images.DEBIAN_ARCHIVE_VAR, raising=False)
    assert images.era_build_args("paper") == {}
    monkeypatch.setenv(images.DEBIAN_ARCHIVE_VAR, "http://mirror.example/retired")
    assert images.era_build_args("paper") == {"DEBIAN_ARCHIVE": "http://mirror.example/retired"}
    assert images.era_build_args("current") == {}


class _NoRegistry:
    """A docker client whose engine has no base image and cannot pull one."""

    class images:  # noqa: N801 (mirrors the docker SDK's attribute)
        @staticmethod
        def get(ref):
            from docker.errors import ImageNotFound

            raise ImageNotFound(f"no such image: {ref}")

        @staticmethod
        def pull(ref):
            from docker.errors import APIError

            raise APIError("pull access denied", explanation="no route to the registry")


@pytest.mark.parametrize(("era", "fix"), [("current", "make base"), ("paper", "CPython 3.6 from that image")])
def test_a_base_that_cannot_be_pulled_is_one_line_naming_the_way_out(era, fix):
    spec = images.ImageSpec("pytorch", era)
    with pytest.raises(UsageError) as exc:
        images.ensure_base(_NoRegistry(), images.dockerfile_base(spec), era)
    assert "cannot be pulled" in exc.value.problem and fix in exc.value.fix and "\n" not in str(exc.value)
