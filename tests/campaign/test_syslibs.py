"""The host pre-flight: what each framework's runs need from the machine, checked before the first run, each
missing thing one line naming the package that provides it (Debian and RPM)."""

from __future__ import annotations

import glob
import subprocess
import sys
from pathlib import Path

import pytest

from campaign import syslibs
from images.build import ImageSpec, default_release, era_releases
from tests.mountspace import MountSpace

REPO = Path(__file__).resolve().parents[2]
NO_OPENBLAS = (
    "error: theano needs OpenBLAS (libopenblas, which Theano links its compiled graphs with), which this machine "
    "lacks; install libopenblas-dev (Debian, Ubuntu) or openblas-devel (Fedora, RHEL), or run theano in its image "
    "(RUNNER=docker), or leave it out (FRAMEWORKS=...)")


def test_each_need_is_checked_for_real_and_names_its_packages():
    absent = [syslibs.Need("x", kind, name, "deb", "rpm") for kind, name in (
        (syslibs.LIBRARY, "dlrepro-absent"), (syslibs.TOOL, "dlrepro-absent-tool"), (syslibs.HEADER, "absent.h"))]
    assert [need.present() for need in absent] == [False, False, False]
    # This Python finds its own C library, runs its own interpreter's name, and has its headers' folder.
    assert syslibs.Need("x", syslibs.LIBRARY, "c", "", "").present()
    assert syslibs.Need("x", syslibs.TOOL, Path(sys.executable).name, "", "").present()
    assert syslibs.OPENBLAS.package() == "libopenblas-dev (Debian, Ubuntu) or openblas-devel (Fedora, RHEL)"


def test_the_needs_are_the_debian_packages_the_images_install():
    """Every Debian package the table names is one the framework's image installs (images/frameworks.toml)."""
    for (era, fw), needs in syslibs.NEEDS.items():
        for release in era_releases(era) or [default_release(era)]:  # the paper era pins buster's and bullseye's
            apt = {p.split("=")[0] for p in " ".join(ImageSpec(fw, era).packages(release).values()).split()}
            named = {n.debian for n in needs} - {"python3-dev"}  # the paper era's base image brings its own headers
            assert named <= apt, (era, fw, release, named - apt)
    assert [n.debian for n in syslibs.NEEDS["current", "theano"]] == ["libopenblas-dev", "g++", "python3-dev"]
    assert [n.debian for n in syslibs.NEEDS["current", "mxnet"]] == ["libgomp1", "libquadmath0"]
    # A blas sweep needs each of its points' libraries; the default BLAS only where a point has none.
    assert list(syslibs.needs(["theano"], "current", ["reference"])) == [syslibs.GXX, syslibs.PYTHON_H,
                                                                        syslibs.REFERENCE_BLAS]
    assert syslibs.OPENBLAS in syslibs.needs(["theano"], "current", [None, "reference"])
    assert syslibs.needs(["pytorch", "tensorflow", "keras", "chainer"], "current") == {}


def _without_library(space, name: str, scratch: Path) -> None:
    """Take lib<name> away from the namespace: /dev/null bound over each of its files, and the dynamic linker's
    cache rebuilt there without them (ldconfig -X changes no link on the host's disk)."""
    listed = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout.split("\n")
    paths = [line.split("=> ")[-1].strip() for line in listed if f"lib{name}." in line and "=> " in line]
    paths += glob.glob(f"/usr/lib/*/lib{name}.*") + glob.glob(f"/usr/lib64/lib{name}.*")
    for real in sorted({str(Path(p).resolve()) for p in paths if Path(p).exists()}):
        space.mount("--bind", "/dev/null", real)
    scratch.mkdir()
    space.tmpfs(scratch, "64m")
    space.run("ldconfig", "-X", "-C", scratch / "ld.so.cache", timeout=300)
    space.mount("--bind", scratch / "ld.so.cache", "/etc/ld.so.cache")


def test_a_campaign_on_a_machine_without_openblas_stops_before_its_first_run(tmp_path):
    with MountSpace() as space:
        _without_library(space, "openblas", tmp_path / "cache")
        proc = _theano_campaign(space, tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.strip().splitlines() == [NO_OPENBLAS]
    assert not (tmp_path / "results").exists()  # nothing recorded, nothing planned


# Debian's libopenblas-dev is what gives the linker libopenblas.so, through this alternatives link; the runtime
# package (libopenblas0) gives libopenblas.so.0 through another.
DEV_LINK = Path("/etc/alternatives/libopenblas.so-x86_64-linux-gnu")


def test_openblas_without_its_development_link_is_missing_for_theano(tmp_path):
    """The runtime library alone (libopenblas.so.0: the dynamic loader finds it) does not link -lopenblas."""
    if not DEV_LINK.is_symlink():
        pytest.skip(f"{DEV_LINK} is not here (Debian's libopenblas-dev on x86-64 makes it)")
    alternatives = tmp_path / "alternatives"
    subprocess.run(["cp", "-a", "/etc/alternatives", alternatives], check=True)
    (alternatives / DEV_LINK.name).unlink()
    with MountSpace() as space:
        space.mount("--bind", alternatives, "/etc/alternatives")  # as if libopenblas-dev were not installed
        proc = _theano_campaign(space, tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.strip().splitlines() == [NO_OPENBLAS]
    assert not (tmp_path / "results").exists()


def _theano_command(tmp_path: Path) -> list:
    """`python -m campaign run` of one smoke Theano run into tmp_path."""
    return [sys.executable, "-m", "campaign", "run", "--workloads", "lstm-imdb", "--frameworks", "theano",
            "--runner", "local", "--data", "synthetic", "--profile", "smoke", "--repeats", "1",
            "--results", tmp_path / "results", "--data-root", tmp_path / "data", "--campaign", "t"]


def _theano_campaign(space, tmp_path: Path) -> subprocess.CompletedProcess:
    """The smoke Theano campaign (_theano_command), in the namespace."""
    return space.run(*_theano_command(tmp_path), cwd=REPO)


@pytest.mark.slow
def test_once_openblas_is_installed_the_same_command_runs_theano_without_retry_failed(tmp_path):
    subprocess.run([sys.executable, "-m", "data", "synthetic", "--root", tmp_path / "data", "--datasets", "imdb"],
                   cwd=REPO, check=True, capture_output=True)
    with MountSpace() as space:  # the machine without OpenBLAS
        _without_library(space, "openblas", tmp_path / "cache")
        refused = _theano_campaign(space, tmp_path)
    assert refused.returncode == 2 and refused.stderr.strip().splitlines() == [NO_OPENBLAS], refused.stderr
    # The same machine with it (outside the namespace: the host has libopenblas-dev, as .ci/run installs it).
    proc = subprocess.run(_theano_command(tmp_path), cwd=REPO, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("campaign 't': 1 ok, 0 failed, 0 done earlier;"), last


def test_image_runners_need_nothing_from_the_host():
    for runner in ("docker", "charliecloud"):
        assert syslibs.check(runner, ["theano", "mxnet"], "current") is None
