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
