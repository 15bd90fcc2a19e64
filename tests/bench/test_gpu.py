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


def test_the_gpu_a_run_was_given_comes_from_the_environment():
    assert gpu.assigned_gpu({}) is None
    env = {gpu.GPU_INDEX_VAR: "2", gpu.GPU_UUID_VAR: "GPU-cccc", gpu.GPU_NAME_VAR: "NVIDIA H100 80GB HBM3"}
    assert gpu.assigned_gpu(env) == {"index": 2, "uuid": "GPU-cccc", "name": "NVIDIA H100 80GB HBM3"}
    assert gpu.assigned_gpu({gpu.GPU_INDEX_VAR: "1", gpu.GPU_UUID_VAR: ""}) == {"index": 1, "uuid": None, "name": None}


def test_other_processes_on_the_gpu_by_pid_or_all_but_the_run():
    assert gpu.count_others({10, 11, 99}, {10, 11, 12}) == 1  # PIDs compare: the one outside the tree
    assert gpu.count_others({5001, 5002}, {10, 11}) == 1  # host PIDs in a container: all but the run
    assert gpu.count_others({5001}, {10}) == 0 and gpu.count_others(set(), {10}) == 0
