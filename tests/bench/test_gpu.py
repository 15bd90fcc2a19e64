"""bench.gpu: which GPU a run's monitor reads, and what the entrypoint learns of the GPU it was given.

There is no GPU here: a small stand-in for the NVML bindings lists devices by index and UUID, so that
only the choice of device is under test (the counters themselves need a GPU)."""

import pytest

from bench import gpu


class FakeNvml:
    """NVML's handle lookups over a list of UUIDs (index = position), as pynvml exposes them."""

    class NVMLError(Exception):
        pass

    def __init__(self, uuids):
        self.uuids = list(uuids)

    def nvmlDeviceGetHandleByIndex(self, index):
        if not 0 <= index < len(self.uuids):
            raise self.NVMLError("Invalid Argument")
        return ("handle", index)

    def nvmlDeviceGetHandleByUUID(self, uuid):
        if uuid not in self.uuids:
            raise self.NVMLError("Not Found")
        return ("handle", self.uuids.index(uuid))


HOST = FakeNvml(["GPU-aaaa", "GPU-bbbb", "GPU-cccc", "GPU-dddd"])


@pytest.fixture()
def no_gpu_env(monkeypatch):
    for var in (gpu.GPU_INDEX_VAR, gpu.GPU_UUID_VAR, gpu.GPU_NAME_VAR, "CUDA_VISIBLE_DEVICES"):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def test_the_sampler_reads_the_gpu_named_by_dlrepro_gpu_uuid(no_gpu_env):
    no_gpu_env.setenv(gpu.GPU_UUID_VAR, "GPU-cccc")
    assert gpu.GpuSampler(nvml=HOST).handle == ("handle", 2)
    # Inside a container NVML lists only the granted GPU (index 0): the UUID still finds it.
    assert gpu.GpuSampler(nvml=FakeNvml(["GPU-cccc"])).handle == ("handle", 0)


def test_without_a_uuid_the_index_decides(no_gpu_env):
    assert gpu.GpuSampler(nvml=HOST).handle == ("handle", 0)
    no_gpu_env.setenv("CUDA_VISIBLE_DEVICES", "3")  # the local runner's choice, in NVML's order
    assert gpu.GpuSampler(nvml=HOST).handle == ("handle", 3)
    # A UUID NVML does not list falls back to the index rather than measuring nothing.
    no_gpu_env.setenv(gpu.GPU_UUID_VAR, "GPU-ffff")
    assert gpu.GpuSampler(nvml=HOST).handle == ("handle", 3)
    # CUDA_VISIBLE_DEVICES may itself name the GPU by UUID.
    no_gpu_env.delenv(gpu.GPU_UUID_VAR)
    no_gpu_env.setenv("CUDA_VISIBLE_DEVICES", "GPU-bbbb")
    assert gpu.GpuSampler(nvml=HOST).handle == ("handle", 1)


def test_an_index_nvml_does_not_have_is_a_reason_not_a_crash(no_gpu_env):
    sampler = gpu.GpuSampler(index=7, nvml=HOST)
    assert sampler.handle is None and "Invalid Argument" in sampler.reason and sampler.sample() == {}


def test_the_gpus_a_run_was_given_come_from_the_environment():
    assert gpu.assigned_gpus({}) == []
    env = {gpu.GPU_INDEX_VAR: "2", gpu.GPU_UUID_VAR: "GPU-cccc", gpu.GPU_NAME_VAR: "NVIDIA H100 80GB HBM3"}
    assert gpu.assigned_gpus(env) == [{"index": 2, "uuid": "GPU-cccc", "name": "NVIDIA H100 80GB HBM3"}]
    assert gpu.assigned_gpus({gpu.GPU_INDEX_VAR: "1", gpu.GPU_UUID_VAR: ""}) == [{"index": 1, "uuid": None,
                                                                                  "name": None}]
    # A data-parallel run's GPUs, in rank order; a name list that does not split evenly names none.
    two = {gpu.GPU_INDEX_VAR: "3,1", gpu.GPU_UUID_VAR: "GPU-dddd,GPU-bbbb", gpu.GPU_NAME_VAR: "A, B, C"}
    assert gpu.assigned_gpus(two) == [{"index": 3, "uuid": "GPU-dddd", "name": None},
                                      {"index": 1, "uuid": "GPU-bbbb", "name": None}]
    assert gpu.assigned_gpus({gpu.GPU_INDEX_VAR: "3,x"}) == []


def test_the_sampler_of_a_run_given_several_gpus_reads_rank_0s(no_gpu_env):
    no_gpu_env.setenv(gpu.GPU_UUID_VAR, "GPU-dddd,GPU-bbbb")
    assert gpu.GpuSampler(nvml=HOST).handle == ("handle", 3)


def test_other_processes_on_the_gpu_by_pid_or_all_but_the_run():
    assert gpu.count_others({10, 11, 99}, {10, 11, 12}) == 1  # PIDs compare: the one outside the tree
    assert gpu.count_others({5001, 5002}, {10, 11}) == 1  # host PIDs in a container: all but the run
    assert gpu.count_others({5001}, {10}) == 0 and gpu.count_others(set(), {10}) == 0


class LinkedNvml:
    """NVML's NVLink and PCIe queries for two boards: one with 18 NVLink links, 12 of them up (an H100 SXM),
    and one on PCIe only (every link query NotSupported), as pynvml answers them."""

    NVML_NVLINK_MAX_LINKS = 18
    NVML_FEATURE_ENABLED = 1

    class NVMLError(Exception):
        pass

    def nvmlDeviceGetNvLinkState(self, handle, link):
        if handle == "pcie-board":
            raise self.NVMLError("Not Supported")
        return 1 if link < 12 else 0

    def nvmlDeviceGetCurrPcieLinkGeneration(self, handle):
        return 5

    def nvmlDeviceGetCurrPcieLinkWidth(self, handle):
        return 16


def test_a_gpus_links_say_nvlink_or_pcie_only():
    assert gpu.links(LinkedNvml(), "sxm-board") == {"nvlink_active_links": 12, "pcie_generation": 5,
                                                     "pcie_width": 16}
    assert gpu.links(LinkedNvml(), "pcie-board")["nvlink_active_links"] == 0
    # Bindings without these queries (the paper era's) record that they could not tell.
    assert gpu.links(FakeNvml([]), ("handle", 0)) == {"nvlink_active_links": None, "pcie_generation": None,
                                                       "pcie_width": None}
