"""GPU pre-flight (campaign.preflight): pure checks of the NVIDIA runtime, the driver, each GPU's compute
capability against the image's CUDA and its framework build (images/frameworks.toml), one line each."""

from __future__ import annotations

import pytest

from bench.errors import UsageError
from campaign import preflight
from campaign.runners.local import LocalRunner
from images import build as images

H100 = ("9.0",)
TORCH = "image dlrepro/pytorch:current-gpu-0123456789ab"
TF = "image dlrepro/tensorflow:current-gpu-0123456789ab"


def host(runtime=True, driver="550.54.15", ccs=H100, names=("NVIDIA H100 80GB HBM3",), indices=()):
    return preflight.HostGpu(nvidia_runtime=runtime, driver=driver, compute_capabilities=ccs, gpu_names=names,
                             gpu_indices=indices)


def one_line(host_gpu, cuda, image, build=None) -> str:
    """The pre-flight's error as the user reads it (run_cli prints 'error: ' before it)."""
    with pytest.raises(UsageError) as exc:
        preflight.check(host_gpu, cuda, image, build)
    assert "\n" not in str(exc.value)
    return str(exc.value)


# --- Acceptance 2: each case with its one-line message -----------------------------------------------

def test_no_nvidia_runtime():
    assert one_line(host(runtime=False, driver="580.65.06"), "13.0", TORCH, preflight.gpu_build("pytorch", "current")) \
        == ("the Docker engine has no NVIDIA runtime, so containers cannot see the GPU; install the NVIDIA Container "
            "Toolkit and restart dockerd (nvidia-ctk runtime configure --runtime=docker), or use RUNNER=local")


def test_driver_too_old_for_cuda_13_0():
    assert one_line(host(driver="570.172.08"), "13.0", TORCH, preflight.gpu_build("pytorch", "current")) == (
        "the host driver 570.172.08 is too old for image dlrepro/pytorch:current-gpu-0123456789ab (CUDA 13.0 needs "
        "driver >= 580.65.06); upgrade the NVIDIA driver to 580.65.06 or newer (it runs every CUDA 13.x runtime), "
        "or use an image built for an older CUDA")


def test_driver_too_old_for_cuda_12_x():
    assert one_line(host(driver="470.82.01", ccs=("8.0",), names=("NVIDIA A100-SXM4-40GB",)), "12.9", TF,
                    preflight.gpu_build("tensorflow", "current")) == (
        "the host driver 470.82.01 is too old for image dlrepro/tensorflow:current-gpu-0123456789ab (CUDA 12.9 needs "
        "driver >= 525.60.13); upgrade the NVIDIA driver to 525.60.13 or newer (it runs every CUDA 12.x runtime), "
        "or use an image built for an older CUDA")
    # Minor-version compatibility: 12.9 runs on 12.0's minimum driver, not only on 12.9's own.
    assert preflight.check(host(driver="525.60.13", ccs=("8.0",)), "12.9", TF,
                           preflight.gpu_build("tensorflow", "current")) is None


def test_gpu_older_than_the_build_the_p100_with_the_cuda_13_torch_build():
    assert one_line(host(driver="580.65.06", ccs=("6.0",), names=("Tesla P100-PCIE-16GB",)), "13.0", TORCH,
                    preflight.gpu_build("pytorch", "current")) == (
        "image dlrepro/pytorch:current-gpu-0123456789ab has no kernels for Tesla P100-PCIE-16GB (GPU 0), compute "
        "capability 6.0: older than the oldest it supports (7.5); its pytorch build (CUDA 13.0) ships 7.5, 8.0, 8.6, "
        "9.0, 10.0, 12.0 and PTX 12.0; run it on GPUs it supports, e.g. Tesla T4 (7.5), L4 (8.9), H100 (9.0); or its "
        "paper-era image (ERA=paper, CUDA 9.2) runs on it")


def test_gpu_newer_than_the_build_without_ptx():
    # mxnet-cu112's CUDA 11.2 already knows no Hopper GPU ...
    mxnet = preflight.gpu_build("mxnet", "current")
    assert one_line(host(driver="580.65.06", indices=(3,)), "11.2", "image dlrepro/mxnet:current-gpu-0123456789ab",
                    mxnet) == (
        "image dlrepro/mxnet:current-gpu-0123456789ab carries CUDA 11.2, which has no kernels for NVIDIA H100 80GB "
        "HBM3 (GPU 3) (compute capability 9.0 needs CUDA >= 11.8); GPUs of compute capability 8.x or older run it, "
        "e.g. L4 (8.9), A10 (8.6), Tesla P4 (6.1, the DLBench paper's GPU); or leave mxnet out (FRAMEWORKS=...)")
    # ... and the same kernels (up to 8.6, no PTX) built with a CUDA that does still have none for it.
    newer_cuda = preflight.GpuBuild("mxnet", "current", "12.4", mxnet.sm, mxnet.ptx)
    assert one_line(host(driver="580.65.06"), "12.4", "image dlrepro/mxnet:current-gpu-0123456789ab", newer_cuda) == (
        "image dlrepro/mxnet:current-gpu-0123456789ab has no kernels for NVIDIA H100 80GB HBM3 (GPU 0), compute "
        "capability 9.0: newer than its kernels, and it has no PTX the driver could compile for it; its mxnet build "
        "(CUDA 12.4) ships 5.0, 6.0, 7.0, 8.0, 8.6 and no PTX; run it on GPUs it supports, e.g. Tesla M60 (5.2), "
        "A10 (8.6), L4 (8.9); or leave mxnet out (FRAMEWORKS=...)")


def test_ok():
    assert preflight.check(host(driver="580.65.06"), "13.0", TORCH, preflight.gpu_build("pytorch", "current")) is None
    # Blackwell (12.0) runs TensorFlow 2.21's PTX for 9.0; an L4 (8.9) mxnet-cu112's sm_86 kernels.
    blackwell = host(driver="580.65.06", ccs=("12.0",), names=("NVIDIA RTX PRO 6000 Blackwell",))
    assert preflight.check(blackwell, "12.9", TF, preflight.gpu_build("tensorflow", "current")) is None
    assert preflight.check(host(ccs=("8.9",), names=("NVIDIA L4",)), "11.2", "img",
                           preflight.gpu_build("mxnet", "current")) is None
    # The paper's GPU with every paper-era GPU image.
    p4 = host(driver="396.26", ccs=("6.1",), names=("Tesla P4",))
    for build in (b for b in preflight.gpu_builds() if b.era == "paper"):
        assert preflight.check(p4, build.cuda, "img", build) is None, build


def test_every_problem_at_once_in_one_line():
    line = one_line(host(runtime=False, driver="535.104.05", ccs=("6.0", "9.0", "9.0"),
                         names=("Tesla P100-PCIE-16GB", "NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"),
                         indices=(0, 1, 2)), "13.0", TORCH, preflight.gpu_build("pytorch", "current"))
    assert line.startswith("the GPU pre-flight found 3 problems: (1) the Docker engine has no NVIDIA runtime")
    assert "; (2) the host driver 535.104.05 is too old" in line and "(GPU 0), compute capability 6.0" in line
    assert "NVIDIA H100 80GB HBM3" not in line  # the H100s are fine: only the P100 is named
    assert line.endswith("; fix each as named, then run the same command again")


def test_identical_gpus_are_one_problem_naming_them_all():
    line = one_line(host(driver="580.65.06", ccs=("6.0",) * 8, names=("Tesla P100-SXM2-16GB",) * 8,
                         indices=tuple(range(8))), "13.0", TORCH, preflight.gpu_build("pytorch", "current"))
    assert "Tesla P100-SXM2-16GB (GPUs 0, 1, 2, 3, 4, 5, 6, 7), compute capability 6.0" in line
    assert line.count("has no kernels") == 1


def test_the_local_runner_checks_the_driver_and_gpus_without_docker():
    """A GPU campaign with the local runner runs the same checks first (no NVIDIA runtime check: no
    engine in between). This machine has no NVIDIA driver, which is the problem it names."""
    from bench.gpu import probe

    if probe().available:
        pytest.skip("this machine has an NVIDIA GPU")
    with pytest.raises(UsageError) as exc:
        LocalRunner(era="current", device="gpu").prepare("pytorch")
    assert str(exc.value) == "no NVIDIA driver answers on this host; install the NVIDIA driver, or run the cpu-* target"


# --- The tables -----------------------------------------------------------------------------------

def test_each_gpu_image_has_a_build_table_that_matches_its_lock():
    """images/frameworks.toml's [gpu] tables: one per GPU lock, with the CUDA the lock installs."""
    locks = {(p.parent.parent.name, p.parent.name): p for p in images.IMAGES.glob("*/*/requirements-gpu.txt")}
    builds = {(b.framework, b.era): b for b in preflight.gpu_builds()}
    assert set(builds) == set(locks)
    for key, build in builds.items():
        assert images.cuda_of_lock(locks[key].read_text()) == build.cuda, key
        assert build.sm and build.source, key
        for cc in (*build.sm, *build.ptx):
            assert preflight.min_cuda(cc) <= preflight._major_minor(build.cuda), (key, cc)  # its CUDA builds it
    assert builds[("pytorch", "current")].sm[0] == "7.5"  # CUDA 13 dropped Maxwell, Pascal and Volta


@pytest.mark.parametrize(("cuda", "driver"), [
    ("9.0", "384.81"), ("9.2", "396.26"), ("10.0", "410.48"), ("10.2", "440.33"), ("11.0", "450.36.06"),
    # Minor-version compatibility from 11.1 on: the major release's minimum runs every x.y.
    ("11.1", "450.80.02"), ("11.2", "450.80.02"), ("11.8", "450.80.02"),
    ("12.0", "525.60.13"), ("12.4", "525.60.13"), ("12.8", "525.60.13"), ("12.9", "525.60.13"),
    ("13.0", "580.65.06"), ("13.1", "580.65.06"),
])
def test_min_driver_table(cuda, driver):
    assert preflight.min_driver(cuda) == driver


def test_a_cuda_the_table_does_not_know_is_named():
    with pytest.raises(UsageError, match="CUDA 14.0 is not in the pre-flight table"):
        preflight.min_driver("14.0")


def test_binary_compatibility_within_a_major_version():
    assert preflight.min_cuda("7.5") == (9, 0)  # Turing runs Volta's sm_70 kernels
    assert preflight.min_cuda("8.9") == (11, 0)  # Ada runs Ampere's
    assert preflight.min_cuda("9.0") == (11, 8)  # Hopper is a new major version
    assert preflight.min_cuda("12.5") == (12, 8)  # an unknown newer minor: its major's first release
    build = preflight.gpu_build("pytorch", "paper")  # sm 3.5, 5.0, 6.0, 6.1, 7.0, PTX 5.0
    assert build.runs_on("3.7") and build.runs_on("5.2") and build.runs_on("7.5") and not build.runs_on("3.0")


# --- The CUDA of an image against the GPU (paper-era CUDA 9 images) ----------------------------------

def test_cuda_10_image_on_hopper_is_refused():
    with pytest.raises(UsageError) as exc:
        preflight.check(host(driver="550.54.15"), "10.0", "image dlrepro/tensorflow:paper-gpu")
    problem = exc.value.problem
    assert "CUDA 10.0" in problem and "compute capability 9.0" in problem and "CUDA >= 11.8" in problem


def test_cuda_10_is_too_old_for_ampere_and_11_2_fine_for_ada():
    with pytest.raises(UsageError, match="8.0 needs CUDA >= 11.0"):
        preflight.check(host(ccs=("8.0",), names=("A100",)), "10.0", "img")
    preflight.check(host(ccs=("8.9",), names=("L4",)), "11.2", "img")


def test_cpu_image_and_missing_driver_are_clear():
    with pytest.raises(UsageError, match="no CUDA runtime"):
        preflight.check(host(), None, "img")
    with pytest.raises(UsageError, match="no NVIDIA driver"):
        preflight.check(host(driver=None), "12.8", "img")


# The paper-era GPU images: tensorflow-gpu 1.11 / mxnet-cu90 (CUDA 9.0), torch 0.4.1 cu92 / cupy-cuda92 (CUDA 9.2).
@pytest.mark.parametrize("cuda", ["9.0", "9.2"])
@pytest.mark.parametrize(("cc", "name"), [("9.0", "NVIDIA H100 80GB HBM3"), ("8.0", "NVIDIA A100-SXM4-40GB"),
                                          ("8.9", "NVIDIA L4")])
def test_paper_era_cuda_9_builds_are_refused_on_newer_gpus_naming_the_gpus_that_can(cuda, cc, name):
    with pytest.raises(UsageError) as exc:
        preflight.check(host(ccs=(cc,), names=(name,)), cuda, "image dlrepro/tensorflow:paper-gpu-0123456789ab")
    err = exc.value
    assert f"CUDA {cuda}" in err.problem and name in err.problem and f"compute capability {cc}" in err.problem
    assert err.fix.startswith("GPUs of compute capability 7.x or older run it")
    assert "Tesla P4 (6.1, the DLBench paper's GPU)" in err.fix and "Tesla T4 (7.5)" in err.fix
    assert "\n" not in str(err)


@pytest.mark.parametrize(("cc", "name"), [("6.1", "Tesla P4"), ("7.0", "Tesla V100-SXM2-16GB"), ("6.0", "Tesla P100"),
                                          ("7.5", "Tesla T4")])
def test_paper_era_cuda_9_builds_run_on_pascal_volta_and_turing(cc, name):
    for build in (b for b in preflight.gpu_builds() if b.era == "paper"):
        assert preflight.check(host(driver="410.48", ccs=(cc,), names=(name,)), build.cuda, "paper-gpu", build) is None


def test_newest_compute_capability_per_cuda():
    assert [preflight.newest_cc(c) for c in ("9.0", "9.2", "10.0", "11.2", "12.9")] == [
        (7, 0), (7, 2), (7, 5), (8, 6), (12, 1)]
    with pytest.raises(UsageError, match="older than any GPU"):
        preflight.newest_cc("4.0")
