"""Images without an engine: one Dockerfile per era lints clean and pins its base, the build context
holds the payload and takes the optional build inputs without changing the image's identity, the
tag follows the payload and not the host code, and versions.lock is current."""

from __future__ import annotations

import os
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
    # hadolint cannot see through the build arguments: every package must be pinned here, for every release.
    for era in ERAS:
        for release in images.era_releases(era) or [images.default_release(era)]:
            for fw in FRAMEWORKS:
                for name in " ".join(images.ImageSpec(fw, era).packages(release).values()).split():
                    assert re.fullmatch(r"[a-z0-9.+-]+=\S+", name), (era, release, name)


def test_paper_packages_are_the_base_s_debian_release_s():
    theano, mxnet, tensorflow = (images.ImageSpec(fw, "paper") for fw in ("theano", "mxnet", "tensorflow"))
    assert images.era_releases("paper") == ["buster", "bullseye"] and images.era_releases("current") == []
    # The Dockerfile's own base, python:3.6.15-slim-buster, is buster: its pins unless told otherwise.
    assert images.default_release("paper") == "buster"
    assert theano.packages() == theano.packages("buster") == {
        "ERA_PACKAGES": "", "FRAMEWORK_PACKAGES": "g++=4:8.3.0-1 libopenblas-dev=0.3.5+ds-3"}
    assert theano.packages("bullseye")["FRAMEWORK_PACKAGES"] == "g++=4:10.2.1-1 libopenblas-dev=0.3.13+ds-3+deb11u1"
    assert mxnet.packages("bullseye")["FRAMEWORK_PACKAGES"] == "libgomp1=10.2.1-6"
    assert tensorflow.packages("bullseye") == tensorflow.packages("buster") == {"ERA_PACKAGES": "",
                                                                                 "FRAMEWORK_PACKAGES": ""}
    # The release enters the tag through the packages it pins, not on its own.
    base = "sha256:" + "cd" * 32
    assert images.tag(theano, base, "bullseye") != images.tag(theano, base, "buster") == images.tag(theano, base)
    assert images.tag(tensorflow, base, "bullseye") == images.tag(tensorflow, base, "buster")
    assert images.labels(theano, base, (), "bullseye")["org.dlrepro.inputs-sha256"].startswith(
        images.tag(theano, base, "bullseye").rsplit("-", 1)[1])
    assert images.era_build_args("paper", "bullseye") == {"DEBIAN_RELEASE": "bullseye"}
    # The current era pins one list for its base, whatever the release.
    assert images.ImageSpec("theano").packages("trixie") == images.ImageSpec("theano").packages()
    with pytest.raises(UsageError) as caught:
        theano.packages("bookworm")
    assert str(caught.value) == (
        "for Debian bookworm: the paper era's Debian packages are pinned for buster and bullseye only "
        "(images/frameworks.toml); unset BASE_IMAGE to build on the era's own base, or pin the packages for bookworm")


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
    assert {"bench/entrypoint.py", "bench/request.py", "bench/frameworks/pytorch/current.py",
            "bench/frameworks/pytorch/__init__.py", "bench/frameworks/keras/current_optimizers.py"} <= staged
    assert all(name.startswith("bench/") for name in staged), "host code (campaign/, images/, ...) never enters"
    assert not [n for n in staged if n.endswith("/paper.py")], "other eras' modules stay out"
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
                        "analysis/report.py", "data/prepare.py", "studies/dlbench/workloads/cnn-mnist.toml",
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
    # The archive only for buster: bullseye (make base ERA=paper) is still on the mirror its sources name.
    assert "ARG DEBIAN_RELEASE=buster" in text and 'if [ "${DEBIAN_RELEASE}" = buster ]; then' in text
    assert images.era_build_args("current") == {}


def test_debian_archive_is_a_paper_build_argument_only_when_set(monkeypatch):
    monkeypatch.delenv(images.DEBIAN_ARCHIVE_VAR, raising=False)
    assert images.era_build_args("paper") == {"DEBIAN_RELEASE": "buster"}
    monkeypatch.setenv(images.DEBIAN_ARCHIVE_VAR, "http://mirror.example/retired")
    assert images.era_build_args("paper") == {"DEBIAN_ARCHIVE": "http://mirror.example/retired",
                                              "DEBIAN_RELEASE": "buster"}
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


@pytest.mark.parametrize(("era", "fix"), [("current", "make base"), ("paper", "make base ERA=paper")])
def test_a_base_that_cannot_be_pulled_is_one_line_naming_the_way_out(era, fix):
    spec = images.ImageSpec("pytorch", era)
    with pytest.raises(UsageError) as exc:
        images.ensure_base(_NoRegistry(), images.dockerfile_base(spec), era)
    assert "cannot be pulled" in exc.value.problem and fix in exc.value.fix and "\n" not in str(exc.value)


# --- the base per era, on a real engine (tiny images made by `docker import`, removed after) ---------------

@pytest.fixture
def tiny_image(engine):
    """make(tag, labels, files) imports a root file system of `files` (path -> text, or ('link', target)) with
    those labels; every image made, and any build layer over it, is removed after the test."""
    import io
    import tarfile
    import uuid

    mark = uuid.uuid4().hex[:12]
    made: list[str] = []

    def make(tag: str, labels: dict[str, str], files: dict | None = None) -> str:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            for path, content in (files or {}).items():
                info = tarfile.TarInfo(path)
                if isinstance(content, tuple):
                    info.type, info.linkname = tarfile.SYMTYPE, content[1]
                    tar.addfile(info)
                else:
                    data = content.encode()
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
        changes = [f"LABEL {k}={v}" for k, v in {**labels, "org.dlrepro.test-mark": mark}.items()]
        repo, _, version = tag.rpartition(":")
        engine.api.import_image_from_data(buf.getvalue(), repository=repo, tag=version, changes=changes)
        made.append(tag)
        return engine.images.get(tag).id

    yield make
    from docker.errors import ImageNotFound

    # Build layers over the tiny bases carry their labels: children first (removing one may take its untagged
    # parents with it), then the bases.
    for image in sorted(engine.images.list(all=True, filters={"label": f"org.dlrepro.test-mark={mark}"}),
                        key=lambda i: i.attrs.get("Created", ""), reverse=True):
        try:
            engine.images.remove(image.id, force=True)
        except ImageNotFound:
            pass


def _scratch(name: str) -> str:
    return f"dlrepro/scratch-test-{name}:{os.getpid()}"


def test_the_paper_base_is_base_image_else_the_local_paper_base_else_the_dockerfile_s(engine, tiny_image,
                                                                                       monkeypatch):
    local = _scratch("paper-base")
    monkeypatch.setattr(images, "ERA_BASES", {"paper": local})  # the engine's real dlrepro/base:paper is left alone
    monkeypatch.delenv(images.BASE_IMAGE_VAR, raising=False)
    assert images.base_image(engine, "paper") is None  # not made: the Dockerfile's pinned default
    base_id = tiny_image(local, {"org.dlrepro.base-era": "paper", "org.dlrepro.debian-release": "bullseye"})
    assert images.base_image(engine, "paper") == local and images.base_image(engine, "current") is None
    planned = images.plan(engine, images.ImageSpec("theano", "paper"), images.base_image(engine, "paper"))
    assert (planned.base, planned.release) == (base_id, "bullseye")
    assert planned.tag == images.tag(images.ImageSpec("theano", "paper"), base_id, "bullseye")
    monkeypatch.setenv(images.BASE_IMAGE_VAR, "python:3.6.15-slim-buster@sha256:" + "e1" * 32)
    assert images.base_image(engine, "paper") == "python:3.6.15-slim-buster@sha256:" + "e1" * 32


def test_a_base_made_for_another_era_is_refused_in_one_line(engine, tiny_image):
    tag = _scratch("paper-only")
    base_id = tiny_image(tag, {"org.dlrepro.base-era": "paper", "org.dlrepro.debian-release": "bullseye"})
    with pytest.raises(UsageError) as caught:
        images.plan(engine, images.ImageSpec("pytorch", "current"), tag)
    assert str(caught.value) == (
        f"base image {tag} is made for the paper era (org.dlrepro.base-era=paper), not for ERA=current; unset "
        "BASE_IMAGE (ERA=current then builds on dlrepro/base:bookworm when made, else the Dockerfile's base) or set "
        "it to a current-era base")
    other = _scratch("current-only")
    tiny_image(other, {"org.dlrepro.base-era": "current"})
    with pytest.raises(UsageError) as caught:
        images.plan(engine, images.ImageSpec("pytorch", "paper"), other)
    assert str(caught.value) == (
        f"base image {other} is made for the current era (org.dlrepro.base-era=current), not for ERA=paper; unset "
        "BASE_IMAGE (ERA=paper then builds on dlrepro/base:paper when made, else the Dockerfile's base) or set it "
        "to a paper-era base")
    assert images.plan(engine, images.ImageSpec("pytorch", "paper"), base_id).release == "bullseye"


@pytest.mark.parametrize("layout", ["file", "link"])
def test_an_unlabelled_base_s_release_is_read_from_its_os_release(engine, tiny_image, layout):
    os_release = 'PRETTY_NAME="Debian GNU/Linux 11 (bullseye)"\nVERSION_ID="11"\nVERSION_CODENAME=bullseye\n'
    files = ({"etc/os-release": os_release} if layout == "file" else
             {"usr/lib/os-release": os_release, "etc/os-release": ("link", "../usr/lib/os-release")})
    base_id = tiny_image(_scratch(f"bullseye-{layout}"), {}, files)
    assert images.plan(engine, images.ImageSpec("mxnet", "paper"), base_id).release == "bullseye"
    bookworm = _scratch("bookworm")
    tiny_image(bookworm, {}, {"etc/os-release": os_release.replace("bullseye", "bookworm").replace("11", "12")})
    with pytest.raises(UsageError) as caught:
        images.plan(engine, images.ImageSpec("tensorflow", "paper"), bookworm)
    assert str(caught.value) == (
        f"base image {bookworm} is Debian bookworm, but the paper era's Debian packages are pinned for buster and "
        "bullseye only (images/frameworks.toml); unset BASE_IMAGE to build on the era's own base, or pin the "
        "packages for bookworm")


def _refusing_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed again: connecting is refused


def test_make_images_skips_pytorch_s_paper_image_when_torch_cannot_be_had_and_goes_on(engine, tiny_image, tmp_path):
    base = _scratch("empty-paper-base")
    tiny_image(base, {"org.dlrepro.base-era": "paper", "org.dlrepro.debian-release": "bullseye"})
    archive = f"http://127.0.0.1:{_refusing_port()}/whl"
    env = {**os.environ, images.BASE_IMAGE_VAR: base, "DLREPRO_TORCH_ARCHIVE": archive, "DLREPRO_WHEELHOUSE": "",
           "DLREPRO_CA_CERTS": "", "DLREPRO_LOCAL_LOCK": str(tmp_path / "versions.local.lock"),
           "DLREPRO_EXTERNAL_CACHE": str(tmp_path / "cache")}
    url = f"{archive}/cpu/torch-0.4.1-cp36-cp36m-linux_x86_64.whl"
    fix = "check the network or proxy, or set DLREPRO_TORCH_ARCHIVE to a mirror of PyTorch's wheel archive"

    def make_images(frameworks: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "images", "build", "--era", "paper", "--frameworks", frameworks],
                              cwd=REPO, env=env, capture_output=True, text=True, timeout=300)

    both = make_images("pytorch mxnet")
    lines = both.stderr.splitlines()
    assert lines[0] == (f"skipped: the pytorch image (paper, cpu): cannot fetch {url} ([Errno 111] Connection "
                        f"refused); {fix}, then build it with FRAMEWORKS=pytorch")
    # MXNet was attempted after it (and fails here only because this base is an empty file system).
    assert lines[1].startswith("building dlrepro/mxnet:paper-cpu-") and both.returncode == 2
    assert lines[-1].startswith("error: building dlrepro/mxnet:paper-cpu-")
    alone = make_images("pytorch")  # asked for alone (as a campaign asks for it): the build's own error
    assert (alone.returncode, alone.stderr.strip()) == (2, f"error: cannot fetch {url} ([Errno 111] Connection "
                                                           f"refused); {fix}")
    assert not (tmp_path / "versions.local.lock").exists()


@pytest.mark.slow
@pytest.mark.paper_image
def test_make_images_builds_the_other_paper_images_and_exits_0_without_torch(engine, tmp_path):
    # On the paper base of `make base ERA=paper` (images built with unchanged inputs are reused).
    if images.find(engine, images.ERA_BASES["paper"]) is None:
        pytest.skip(f"no {images.ERA_BASES['paper']} on this engine: make base ERA=paper")
    archive = f"http://127.0.0.1:{_refusing_port()}/whl"
    env = {k: v for k, v in os.environ.items() if k != images.BASE_IMAGE_VAR}
    env.update(DLREPRO_TORCH_ARCHIVE=archive, DLREPRO_LOCAL_LOCK=str(tmp_path / "versions.local.lock"),
               DLREPRO_EXTERNAL_CACHE=str(tmp_path / "cache"))
    proc = subprocess.run(["make", "--no-print-directory", "images", "ERA=paper", "FRAMEWORKS=pytorch chainer"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert [line for line in proc.stderr.splitlines() if line.startswith("skipped: ")] == [
        f"skipped: the pytorch image (paper, cpu): cannot fetch {archive}/cpu/torch-0.4.1-cp36-cp36m-linux_x86_64.whl "
        "([Errno 111] Connection refused); check the network or proxy, or set DLREPRO_TORCH_ARCHIVE to a mirror of "
        "PyTorch's wheel archive, then build it with FRAMEWORKS=pytorch"]
    (built,) = [line.split() for line in proc.stdout.splitlines() if line.startswith("dlrepro/")]
    chainer = engine.images.get(built[0])
    assert built[0].startswith("dlrepro/chainer:paper-cpu-") and chainer.id == built[1]
    assert chainer.labels["org.dlrepro.base-image"] == engine.images.get(images.ERA_BASES["paper"]).id
