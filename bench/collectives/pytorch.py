"""PyTorch's own all-reduce (torch.distributed): Gloo on CPUs, NCCL on GPUs (bench/collectives).

The run starts `ranks` processes (bench.loopback.run_ranks: spawned), which meet over TCP on the loopback
address (127.0.0.1, a port free when the run picked it) with the sockets of Gloo and NCCL pinned to the
loopback interface, so a container without a network runs it. For each size every rank fills its
buffer with rank + 1, waits at a barrier, then times one in-place all_reduce (SUM, float32) and, on a
GPU, the device synchronize after it. After the last timed repetition of a size every rank checks its
buffer holds the sum of the ranks' values, n (n + 1) / 2 (exact in float32 for any rank count that
matters). Each rank's times land in scratch/rank<r>.json; the run gathers them (rows of
bench.schema.COLLECTIVE_COLUMNS).

CPython 3.6-clean apart from its own framework (the payload core's rules, bench/collectives).
"""

import time
from pathlib import Path

import torch
import torch.distributed as dist

from bench.loopback import HOST, TIMEOUT, free_port, run_ranks

BACKENDS = {"cpu": "gloo", "gpu": "nccl"}


def versions() -> dict:
    """The packages this module imported, with the CUDA and NCCL torch was built with (None on CPU builds)."""
    nccl = None
    if torch.cuda.is_available() and dist.is_nccl_available():
        made = torch.cuda.nccl.version()  # a tuple in today's torch, an int (e.g. 2708) in older ones
        nccl = ".".join(str(v) for v in made) if isinstance(made, tuple) else str(made)
    return {"torch": torch.__version__, "cuda": torch.version.cuda, "nccl": nccl}


def all_reduce(settings: dict, device: str, scratch: Path) -> tuple:
    """Run the timed all-reduce over settings["ranks"] processes; return (collective.csv rows, the slowest
    rank's start-up seconds). Raises when a rank fails, or when a GPU run has fewer GPUs than ranks."""
    ranks = settings["ranks"]
    if device == "gpu":
        have = torch.cuda.device_count()
        if have < ranks:
            raise RuntimeError(f"{ranks} NCCL ranks need {ranks} GPUs, one each; this run sees {have} "
                               "(give it more with GPUS=..., or lower [collective] ranks)")
    port = free_port()
    found = run_ranks(_rank, [(ranks, port, device, settings)] * ranks, Path(scratch), settings["op"]).results
    rows = []
    for floats in settings["sizes"]:
        for phase, count in (("warmup", settings["warmup"]), ("measured", settings["repetitions"])):
            for rep in range(1, count + 1):
                rows += [{"floats": floats, "phase": phase, "rep": rep, "rank": r,
                          "time_s": found[r]["times"][str(floats)][phase][rep - 1]} for r in range(ranks)]
    return rows, max(f["setup_s"] for f in found)


def _rank(rank: int, ranks: int, port: int, device: str, settings: dict) -> dict:
    """One rank: join the process group, time every size, check the sums; return {"setup_s", "times": {size:
    {phase: seconds per repetition}}}."""
    t0 = time.perf_counter()
    gpu = device == "gpu"
    if gpu:
        torch.cuda.set_device(rank)
    dist.init_process_group(BACKENDS[device], init_method=f"tcp://{HOST}:{port}", rank=rank, world_size=ranks,
                            timeout=TIMEOUT)
    target = torch.device("cuda", rank) if gpu else torch.device("cpu")
    barrier_args = {"device_ids": [rank]} if gpu else {}
    sync = torch.cuda.synchronize if gpu else (lambda: None)
    expected = ranks * (ranks + 1) / 2.0
    dist.barrier(**barrier_args)
    setup_s = time.perf_counter() - t0
    times = {}
    try:
        for floats in settings["sizes"]:
            buf = torch.empty(floats, dtype=torch.float32, device=target)
            mine = times[str(floats)] = {"warmup": [], "measured": []}
            for phase, count in (("warmup", settings["warmup"]), ("measured", settings["repetitions"])):
                for _ in range(count):
                    buf.fill_(rank + 1.0)  # every repetition sums the same values (no overflow over reps)
                    sync()
                    dist.barrier(**barrier_args)  # all ranks start together: the time is the collective's
                    start = time.perf_counter()
                    dist.all_reduce(buf, op=dist.ReduceOp.SUM)
                    sync()
                    mine[phase].append(time.perf_counter() - start)
            wrong = int((buf != expected).sum().item())
            if wrong:
                raise RuntimeError(f"rank {rank}: all_reduce of {floats} floats over {ranks} ranks left {wrong} "
                                   f"values that are not the sum {expected} (min {buf.min().item()}, max "
                                   f"{buf.max().item()})")
            del buf
            if gpu:
                torch.cuda.empty_cache()
    finally:
        dist.destroy_process_group()
    return {"setup_s": setup_s, "times": times}
