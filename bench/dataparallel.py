"""Data-parallel training over N ranks (Shams et al.'s scale-up on 1-4 GPUs, Shi et al.'s Table 8).

A run whose request sweeps ``ranks`` (request["sweep"]["ranks"] > 1; campaign/study.py) starts that many
processes on this machine (bench.loopback.run_ranks). Each rank builds its trainer through its framework
module's data-parallel hook, ``make_trainer(spec, data, device, seed, parallel={rank, ranks, addr, port})``
(PyTorch: torch.distributed over the loopback address, bench/loopback.py; Gloo on CPUs, NCCL on GPUs with
cuda:<rank> each), on its own disjoint shard of the training rows (rows rank, rank + ranks, ...). Each
rank's mini-batch is the workload's batch size (Shams et al.: the batch per worker), so a step trains
ranks x batch rows; on a CPU the run's threads are split between the ranks.

Every rank runs the iteration protocol (bench/iterations.py) with a barrier before each step's clock, and
writes its own iterations.csv and a summary (ranks/rank<r>/ in the run folder). The run's iterations.csv
holds, per step, the slowest rank's time (the step is done when every rank has its averaged gradients)
and the mean of the ranks' losses (the loss of the whole ranks x batch rows); run.json's timing is of
those rows, its results carry ``ranks`` and ``images_per_ms`` (record_throughput), and rank 0 alone
evaluates the test set. Only the iteration protocol runs data-parallel.

Frameworks with the hook: those whose declaration says data_parallel (today's PyTorch); the others refuse
ranks > 1 at plan time in one line (refusal). Framework-free, standard library only, CPython 3.6-clean.
"""

import os
import time
from pathlib import Path
from typing import Dict, Optional, Sequence

from bench import frameworks, iterations, loopback, measurement, schema, threads
from bench.errors import UsageError
from bench.frameworks import NonFiniteLoss, capabilities
from bench.prepared import PreparedData

AXIS = "ranks"
# Frameworks whose module has the data-parallel hook (make_trainer's `parallel`, check_parallel), per era.
SUPPORT = capabilities.Feature(lambda framework, can: can.data_parallel,
                               "has no data-parallel hook (bench/dataparallel.py)", "data-parallel training is written",
                               "data-parallel runs")
# The ranks' own files, kept in the run folder: ranks/rank<r>/iterations.csv and ranks/rank<r>.json.
RANKS_DIR = "ranks"
DEFINITION = (
    " Data-parallel (results.ranks > 1): every rank trains its own shard of the training rows at the "
    "workload's batch size, gradients averaged over the ranks in each step; each step is timed on every rank "
    "after a barrier, and iterations.csv holds the slowest rank's time and the mean of the ranks' losses "
    "(ranks/rank<r>/iterations.csv: each rank's own); rank 0 alone evaluates. images_per_ms = ranks x batch "
    "/ (mean measured seconds x 1000). setup_time_s: loading the data and starting the ranks, plus the slowest "
    "rank's trainer build."
)


def ranks(req: dict) -> int:
    """The request's data-parallel rank count (1 without a ranks sweep)."""
    return int((req.get("sweep") or {}).get(AXIS, 1))


def refusal(framework: str, era: str) -> Optional[str]:
    """Why `framework` of `era` cannot train over several ranks (None when it can)."""
    return SUPPORT.refusal(framework, era)


def images_per_ms(images_per_step: int, mean_s: float) -> float:
    """Throughput in images (rows) per millisecond, Shams et al.'s unit: images_per_step (ranks x batch) every
    mean_s seconds."""
    return images_per_step / (mean_s * 1000.0)


def record_throughput(record: dict, batch: int, train_rows: Sequence[int]) -> None:
    """Put results.ranks and results.images_per_ms into an iteration-protocol run's record, from its timing's
    mean seconds per step; train_rows: each rank's training rows (one entry for a run on one device). A step
    trains `batch` rows on every rank, or a rank's whole shard where that is smaller
    (bench.frameworks.common.StepRing)."""
    images_per_step = sum(min(batch, rows) for rows in train_rows)
    mean = record["timing"]["iteration_time_s"]["mean"]
    record["results"].update(ranks=len(train_rows),
                             images_per_ms=images_per_ms(images_per_step, mean) if mean > 0 else None)


def shard(data: PreparedData, rank: int, ranks_: int) -> PreparedData:
    """Rank `rank`'s training rows (rank, rank + ranks, ...); the test split for rank 0, one test row for the
    others (they never evaluate: the row keeps the trainer's setup as it is)."""
    train = {role: array[rank::ranks_] for role, array in data.train.items()}
    test = data.test if rank == 0 else {role: array[:1] for role, array in data.test.items()}
    return PreparedData(meta=data.meta, train=train, test=test)


def merge(per_rank: list) -> list:
    """The run's iterations.csv rows from every rank's: per step the slowest rank's time, the mean loss. Every
    rank must have the same number of steps (a ValueError otherwise: a short rank must not shorten the run)."""
    counts = [len(steps) for steps in per_rank]
    if len(set(counts)) > 1:
        raise ValueError(f"the ranks wrote different numbers of steps ({', '.join(map(str, counts))} for ranks "
                         f"0..{len(counts) - 1}): their iterations.csv files cannot be merged step by step")
    merged = []
    for steps in zip(*per_rank):
        merged.append({"iteration": steps[0]["iteration"], "phase": steps[0]["phase"],
                       "time_s": max(s["time_s"] for s in steps), "loss": sum(s["loss"] for s in steps) / len(steps)})
    return merged


def run(req: dict, fw, data: PreparedData, out: Path, record: dict, t_setup: float) -> None:
    """Train the request over its ranks with the iteration protocol; write iterations.csv and the ranks' files
    into `out`, fill record's timing, results and device_used. `fw`: the framework module; t_setup: the
    perf_counter at which the run's setup began."""
    n = ranks(req)
    SUPPORT.require(req["framework"], req["era"], f"it cannot train over {n} ranks", "run ranks > 1")
    spec = req["spec"]
    protocol = measurement.of_spec(spec)
    if protocol["protocol"] != measurement.ITERATIONS:
        raise UsageError(f"{n} data-parallel ranks need the iteration protocol, and this spec's is {protocol}",
                         "give the experiment a measurement = { protocol = \"iterations\", ... }")
    fw.check_parallel(req["device"], n)
    batch = int(spec["training"]["batch_size"])
    shards = [shard(data, r, n) for r in range(n)]
    if len(shards[-1].y_train) < 1:
        raise UsageError(f"{len(data.y_train)} training rows cannot be shared by {n} ranks",
                         "give the run more rows (another profile) or sweep fewer ranks")
    warmup = measurement.warmup_steps(protocol, len(shards[0].y_train), batch)
    scratch = Path(out) / RANKS_DIR
    barrier = loopback.context().Barrier(n)
    settings = {"framework": req["framework"], "era": req["era"], "spec": spec, "device": req["device"],
                "seed": req["seed"], "warmup": warmup, "iterations": protocol["iterations"], "ranks": n,
                "addr": loopback.HOST, "port": loopback.free_port(), "scratch": str(scratch)}
    try:
        gathered = loopback.run_ranks(_rank, [(settings, part, barrier) for part in shards], scratch,
                                      "data-parallel", env=_thread_env(_rank_threads(req, n)))
    except loopback.RanksFailed as exc:
        _keep_finished_steps(out, _per_rank_rows(scratch, n))
        # A rank's diverged loss fails the run as a NaN, as one device's does (run.json failure.cause).
        if exc.raised(NonFiniteLoss.__name__):
            raise NonFiniteLoss(str(exc)) from None
        raise
    rows = merge(_per_rank_rows(scratch, n))
    schema.write_iterations(out, rows)
    _fill(record, gathered.results, rows, batch, [len(s.y_train) for s in shards])
    record["timing"]["setup_time_s"] = gathered.started - t_setup + max(f["setup_s"] for f in gathered.results)


def _per_rank_rows(scratch: Path, n: int) -> list:
    """Every rank's own iterations.csv rows (ranks/rank<r>/), by rank."""
    return [schema.read_iterations(scratch / f"rank{r}") for r in range(n)]


def _keep_finished_steps(out: Path, per_rank: list) -> None:
    """A failed run's iterations.csv: the steps every rank finished (a failed single-device run keeps its
    steps too); none when a rank has none."""
    done = min(len(steps) for steps in per_rank)
    if done:
        schema.write_iterations(out, merge([steps[:done] for steps in per_rank]))


def _rank_threads(req: dict, n: int) -> Optional[int]:
    """Each rank's CPU threads: the run's (or the machine's) split between the ranks; None on a GPU (the
    framework's default: the ranks drive their own GPUs)."""
    if req["device"] != "cpu":
        return None
    total = req["threads"]
    if not total:
        total = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, total // n)


def _thread_env(per_rank: Optional[int]) -> Dict[str, str]:
    """The environment that pins a rank's thread count (what bench.threads.pin sets), read by its libraries
    when they load; nothing on a GPU."""
    if not per_rank:
        return {}
    return {name: str(per_rank) for name in threads.THREAD_VARS + ("DLREPRO_THREADS",)}


def _rank(rank: int, settings: dict, data: PreparedData, barrier) -> dict:
    """One rank (bench.loopback.run_ranks): build its trainer as a data-parallel rank, run the iteration
    protocol on its shard (rank 0 also evaluates) into ranks/rank<rank>/iterations.csv; return its summary
    (ranks/rank<rank>.json)."""
    summary = {"rank": rank}
    timeout = loopback.TIMEOUT.total_seconds()
    try:
        t0 = time.perf_counter()
        fw = frameworks.load(settings["framework"], settings["era"])
        parallel = {"rank": rank, "ranks": settings["ranks"], "addr": settings["addr"], "port": settings["port"]}
        trainer = fw.make_trainer(settings["spec"], data, settings["device"], settings["seed"], parallel=parallel)
        summary["setup_s"] = time.perf_counter() - t0
        record = {"timing": {}, "results": {}}
        folder = Path(settings["scratch"]) / f"rank{rank}"
        folder.mkdir(parents=True, exist_ok=True)
        try:
            iterations.run(trainer, settings["warmup"], settings["iterations"], folder, record, settings["framework"],
                           settings["era"], barrier=lambda: barrier.wait(timeout), evaluate=rank == 0)
            summary.update(timing=record["timing"], results=record["results"], params=int(trainer.param_count()),
                           param_sha256=getattr(trainer, "param_digest", lambda: None)())
            if rank == 0:
                summary["info"] = trainer.info()
        finally:
            close = getattr(trainer, "close", None)
            if callable(close):
                close()
    except BaseException:
        barrier.abort()  # the others stop waiting for this rank
        raise
    return summary


def _fill(record: dict, found: list, rows: list, batch: int, train_rows: list) -> None:
    """record's timing, results, model and device_used from the ranks' summaries (by rank), the merged rows,
    the batch size and each rank's training rows."""
    n = len(found)
    first = found[0]
    timing, results = record["timing"], record["results"]
    timing.update({k: first["timing"][k] for k in ("protocol", "definition")})
    timing["definition"] += DEFINITION
    timing.update(schema.summarize_iterations(rows))
    timing["train_start_unix"] = min(f["timing"]["train_start_unix"] for f in found)
    timing["train_end_unix"] = max(f["timing"]["train_end_unix"] for f in found)
    timing["eval_time_s"] = first["timing"].get("eval_time_s")
    results.update(test_accuracy=first["results"].get("test_accuracy"), final_loss=rows[-1]["loss"])
    record_throughput(record, batch, train_rows)
    record["model"]["trainable_params"] = first["params"]
    record["device_used"].update(first["info"])
    stats = timing["iteration_time_s"]
    print(f"{n} ranks: mean {stats['mean']:.4g} s per step (slowest rank), {results['images_per_ms']:.4g} images/ms; "
          f"test_accuracy {results['test_accuracy']:.4f}", flush=True)
