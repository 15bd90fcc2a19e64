"""GPU pre-flight (campaign.preflight): pure checks of driver, compute capability and image CUDA."""

from __future__ import annotations

import pytest

from bench.errors import UsageError
from campaign import preflight

H100 = ("9.0",)


def host(runtime=True, driver="550.54.15", ccs=H100, names=("NVIDIA H100 80GB HBM3",)):
    return preflight.HostGpu(nvidia_runtime=runtime, driver=driver, compute_capabilities=ccs, gpu_names=names)


def test_no_nvidia_runtime_names_the_toolkit():
    with pytest.raises(UsageError) as exc:
        preflight.check(host(runtime=False), "12.8", "dlrepro/pytorch:x")
    assert "no NVIDIA runtime" in exc.value.problem and "NVIDIA Container Toolkit" in exc.value.fix


def test_driver_too_old_for_the_image_cuda():
    with pytest.raises(UsageError) as exc:
        preflight.check(host(driver="470.82.01", ccs=("8.0",)), "12.8", "img")
    assert "470.82.01 is too old" in exc.value.problem and ">= 525.60.13" in exc.value.problem


def test_cuda_10_image_on_hopper_is_refused():
    with pytest.raises(UsageError) as exc:
        preflight.check(host(driver="550.54.15"), "10.0", "dlrepro/tensorflow:paper-gpu")
    problem = exc.value.problem
    assert "CUDA 10.0" in problem and "compute capability 9.0" in problem and "CUDA >= 11.8" in problem


def test_cuda_11_0_is_too_old_for_ada_but_fine_for_ampere():
    with pytest.raises(UsageError, match="8.9 needs CUDA >= 11.8"):
        preflight.check(host(ccs=("8.9",), names=("L4",)), "11.2", "img")
    preflight.check(host(ccs=("8.0",), names=("A100",)), "11.2", "img")


def test_ok_on_a_matching_host():
    assert preflight.check(host(), "12.8", "dlrepro/pytorch:current-gpu") is None
    assert preflight.check(host(driver="384.81", ccs=("6.1",), names=("Tesla P4",)), "9.0", "paper") is None


def test_cpu_image_and_missing_driver_are_clear():
    with pytest.raises(UsageError, match="no CUDA runtime"):
        preflight.check(host(), None, "img")
    with pytest.raises(UsageError, match="no NVIDIA driver"):
        preflight.check(host(driver=None), "12.8", "img")


@pytest.mark.parametrize(("cuda", "driver"), [("9.0", "384.81"), ("10.0", "410.48"), ("11.4", "450.80.02"),
                                              ("12.8", "525.60.13"), ("13.0", "580.65.06")])
def test_min_driver_table(cuda, driver):
    assert preflight.min_driver(cuda) == driver


def test_unknown_newer_gpu_needs_the_newest_known_cuda():
    assert preflight.min_cuda("12.5") == (12, 9)
    assert preflight.min_cuda("7.5") == (10, 0)


# The paper-era GPU images: tensorflow-gpu 1.11 / mxnet-cu90 (CUDA 9.0), torch 0.4.1 cu92 / cupy-cuda92 (CUDA 9.2).
@pytest.mark.parametrize("cuda", ["9.0", "9.2"])
@pytest.mark.parametrize(("cc", "name"), [("9.0", "NVIDIA H100 80GB HBM3"), ("8.0", "NVIDIA A100-SXM4-40GB"),
                                          ("8.9", "NVIDIA L4"), ("7.5", "Tesla T4")])
def test_paper_era_cuda_9_builds_are_refused_on_newer_gpus_naming_the_gpus_that_can(cuda, cc, name):
    with pytest.raises(UsageError) as exc:
        preflight.check(host(ccs=(cc,), names=(name,)), cuda, "dlrepro/tensorflow:paper-gpu-0123456789ab")
    err = exc.value
    assert f"CUDA {cuda}" in err.problem and name in err.problem and f"compute capability {cc}" in err.problem
    newest = "7.0" if cuda == "9.0" else "7.2"
    assert err.fix.startswith(f"GPUs of compute capability {newest} or older run it")
    assert "Tesla P4 (6.1, the DLBench paper's GPU)" in err.fix and "Tesla V100 (7.0)" in err.fix
    assert "\n" not in str(err)


@pytest.mark.parametrize(("cc", "name"), [("6.1", "Tesla P4"), ("7.0", "Tesla V100-SXM2-16GB"), ("6.0", "Tesla P100")])
def test_paper_era_cuda_9_builds_run_on_pascal_and_volta(cc, name):
    for cuda in ("9.0", "9.2"):
        assert preflight.check(host(driver="410.48", ccs=(cc,), names=(name,)), cuda, "paper-gpu") is None


def test_newest_compute_capability_per_cuda():
    assert [preflight.newest_cc(c) for c in ("9.0", "9.2", "10.0", "11.2", "12.9")] == [
        (7, 0), (7, 2), (7, 5), (8, 6), (12, 1)]
    with pytest.raises(UsageError, match="older than any GPU"):
        preflight.newest_cc("4.0")
