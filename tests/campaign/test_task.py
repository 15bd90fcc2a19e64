"""A scheduler task: which GPUs Slurm gave it, named as the campaign names GPUs (one GpuSlot builder)."""

from campaign import runners, task

# What NVML lists on a node with three GPUs (bench.gpu.probe().devices): there is no GPU here.
NVML_LISTS = [{"index": i, "name": "NVIDIA A100-SXM4-40GB", "uuid": f"GPU-{i}0000000-aaaa-bbbb-cccc-dddddddddddd",
               "compute_capability": "8.0", "memory_total_mb": 40536} for i in range(3)]


def test_the_slurm_gpus_are_the_campaigns_slots_for_those_nvml_indices(monkeypatch):
    monkeypatch.delenv("SLURM_STEP_GPUS", raising=False)
    monkeypatch.setenv("SLURM_JOB_GPUS", "2,0")  # a task given two GPUs (--gres=gpu:2), in Slurm's order
    assert task.slurm_gpus(NVML_LISTS) == tuple(runners.gpu_slots(NVML_LISTS, "2,0"))
    assert [g.uuid for g in task.slurm_gpus(NVML_LISTS)] == [NVML_LISTS[2]["uuid"], NVML_LISTS[0]["uuid"]]
    monkeypatch.setenv("SLURM_STEP_GPUS", "1")  # a step's own GPUs come first
    assert task.slurm_gpus(NVML_LISTS) == (runners.GpuSlot(1, NVML_LISTS[1]["uuid"], "NVIDIA A100-SXM4-40GB"),)
    monkeypatch.setenv("SLURM_STEP_GPUS", "7")  # not one NVML lists: still that GPU, unnamed
    assert task.slurm_gpus(NVML_LISTS) == (runners.GpuSlot(7),)
    monkeypatch.setenv("SLURM_STEP_GPUS", "")
    monkeypatch.setenv("SLURM_JOB_GPUS", "")
    assert task.slurm_gpus(NVML_LISTS) == ()
