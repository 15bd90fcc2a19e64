"""A scheduler task: which GPU Slurm gave it, named as the campaign names GPUs (one GpuSlot builder)."""

from campaign import runners, task

# What NVML lists on a node with three GPUs (bench.gpu.probe().devices): there is no GPU here.
NVML_LISTS = [{"index": i, "name": "NVIDIA A100-SXM4-40GB", "uuid": f"GPU-{i}0000000-aaaa-bbbb-cccc-dddddddddddd",
               "compute_capability": "8.0", "memory_total_mb": 40536} for i in range(3)]


def test_the_slurm_gpu_is_the_campaigns_slot_for_that_nvml_index(monkeypatch):
    monkeypatch.delenv("SLURM_STEP_GPUS", raising=False)
    monkeypatch.setenv("SLURM_JOB_GPUS", "2,0")
    assert task.slurm_gpu(NVML_LISTS) == runners.gpu_slots(NVML_LISTS, "2")[0]
    assert task.slurm_gpu(NVML_LISTS).uuid == NVML_LISTS[2]["uuid"]
    monkeypatch.setenv("SLURM_STEP_GPUS", "1")  # a step's own GPUs come first
    assert task.slurm_gpu(NVML_LISTS).name == "NVIDIA A100-SXM4-40GB" and task.slurm_gpu(NVML_LISTS).index == 1
    monkeypatch.setenv("SLURM_STEP_GPUS", "7")  # not one NVML lists: still that GPU, unnamed
    assert task.slurm_gpu(NVML_LISTS) == runners.GpuSlot(7)
    monkeypatch.setenv("SLURM_STEP_GPUS", "")
    monkeypatch.setenv("SLURM_JOB_GPUS", "")
    assert task.slurm_gpu(NVML_LISTS) is None
