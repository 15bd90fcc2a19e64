"""Collectives: time a framework's own collective instead of training a model (Shams et al.'s all-reduce).

A workload spec of family "collective" (bench.schema.COLLECTIVE_FAMILY) has no model to build; its
[collective] table says what to time:

    op = "all_reduce"     # the only one so far: SUM over the ranks, in place
    dtype = "float32"
    ranks = 2             # processes the run starts itself, one device each on a GPU
    sizes = [100000, ...] # message sizes in elements (floats)

and its measurement table (bench/measurement.py, protocol "iterations" with ``warmup``) gives the
warm-up and timed repetitions per size. The run starts the ranks itself, on this machine, over loopback
(127.0.0.1; containers run without a network but with loopback), with the framework's own collective
backend (for PyTorch: Gloo on CPUs, NCCL on GPUs). collective.csv gets every rank's time of every
repetition; run.json's results.collective the per-size statistics and bandwidths (bench.schema:
summarize_collective, bus_bandwidth).

Each framework with a collective declares it (Era.collective in bench/frameworks/<framework>/__init__.py,
whence SUPPORT) and has a module bench/collectives/<framework>.py (it may import its
framework, as bench/frameworks/<framework>/<era>.py does) with:

    BACKENDS: {device: backend name}
    versions() -> dict                                   # what was imported
    all_reduce(settings, device, scratch) -> (rows, setup_s)   # collective.csv rows, rank start-up seconds

which raises when a rank's result is not the sum of the ranks' values. Frameworks without one refuse
the family in one line (TensorFlow: its collective ops need a multi-worker cluster spec the kit does not
set up yet). Standard library only, CPython 3.6-clean.
"""

import importlib
import shutil
import time
from pathlib import Path
from typing import Optional

from bench import measurement, schema
from bench.errors import UsageError
from bench.frameworks import capabilities

FAMILY = schema.COLLECTIVE_FAMILY
OPS = ("all_reduce",)
DTYPES = ("float32",)
KEYS = ("op", "dtype", "ranks", "sizes")
# Frameworks with a module here, and the eras they are written for (their declarations' `collective`: today's
# torch.distributed API).
SUPPORT = capabilities.Feature(lambda framework, can: can.collective, "has no collective module (bench/collectives)",
                               "the collective modules are written", "collective runs")
# Where a run's ranks leave their times before the run gathers them into collective.csv.
SCRATCH = ".ranks"


def is_collective(spec: dict) -> bool:
    """Whether a resolved workload spec times a collective (family "collective") rather than training."""
    return spec.get("family") == FAMILY


def settings(spec: dict, where: str = "spec") -> dict:
    """The collective table of a resolved spec with its warm-up and timed repetitions, checked:
    {"op", "dtype", "ranks", "sizes", "warmup", "repetitions"} (a UsageError naming the fix)."""
    fix = ("write [collective] op = \"all_reduce\", dtype = \"float32\", ranks = N (>= 1), sizes = [positive "
           "whole numbers], and a measurement {protocol = \"iterations\", warmup = W, iterations = N}")
    table = spec.get("collective")
    if not isinstance(table, dict) or sorted(table) != sorted(KEYS):
        raise UsageError(f"{where}: a collective workload needs exactly the keys {', '.join(KEYS)} in [collective]",
                         fix)
    if table["op"] not in OPS or table["dtype"] not in DTYPES:
        raise UsageError(f"{where}: collective {table['op']!r} of {table['dtype']!r} is not one of {OPS} x {DTYPES}",
                         fix)
    ranks, sizes = table["ranks"], table["sizes"]
    if isinstance(ranks, bool) or not isinstance(ranks, int) or ranks < 1:
        raise UsageError(f"{where}: collective ranks {ranks!r} is not a whole number >= 1", fix)
    if (not isinstance(sizes, list) or not sizes or len(set(sizes)) != len(sizes)
            or any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in sizes)):
        raise UsageError(f"{where}: collective sizes {sizes!r} are not distinct positive whole numbers", fix)
    protocol = measurement.of_spec(spec)
    if protocol["protocol"] != measurement.ITERATIONS or protocol["warmup"] is None:
        raise UsageError(f"{where}: a collective is timed in repetitions, and its measurement is {protocol}", fix)
    return {"op": table["op"], "dtype": table["dtype"], "ranks": ranks, "sizes": list(sizes),
            "warmup": protocol["warmup"], "repetitions": protocol["iterations"]}


def refusal(framework: str, era: str) -> Optional[str]:
    """Why `framework` of `era` cannot run a collective workload (None when it can)."""
    return SUPPORT.refusal(framework, era)


def load(framework: str, era: str = "current"):
    """The collective module of a framework (a UsageError, one line, for a framework or era without one)."""
    SUPPORT.require(framework, era, f"it cannot run a workload of family {FAMILY!r}", "run it")
    return importlib.import_module(f"bench.collectives.{framework}")


def run(req: dict, out: Path, record: dict, module=None) -> None:
    """Time the request's collective into `out` (collective.csv) and fill record's timing and results;
    `module`: the framework's collective module (default: load(req["framework"]))."""
    cfg = settings(req["spec"], "request spec")
    module = module or load(req["framework"], req["era"])
    timing = record["timing"]
    timing["definition"] = schema.COLLECTIVE_TIMING_DEFINITION
    scratch = Path(out) / SCRATCH
    timing["train_start_unix"] = time.time()
    try:
        rows, setup_s = module.all_reduce(cfg, req["device"], scratch)
    finally:
        shutil.rmtree(str(scratch), ignore_errors=True)
    timing["train_end_unix"] = time.time()
    schema.write_collective(out, rows, cfg["ranks"])
    sizes = schema.summarize_collective(rows, cfg["ranks"])
    for entry in sizes:
        entry["checked"] = True  # the module raised otherwise: every rank's last result was the sum
    measured = {}
    for row in rows:  # a repetition's time is its slowest rank's
        if row["phase"] == "measured":
            key = (row["floats"], row["rep"])
            measured[key] = max(measured.get(key, 0.0), row["time_s"])
    timing.update(setup_time_s=setup_s, training_time_s=sum(measured.values()))
    record["results"]["collective"] = {
        "op": cfg["op"], "backend": module.BACKENDS[req["device"]], "dtype": cfg["dtype"], "ranks": cfg["ranks"],
        "warmup": cfg["warmup"], "repetitions": cfg["repetitions"], "time_basis": schema.COLLECTIVE_TIME_BASIS,
        "sizes": sizes,
    }
    for entry in sizes:
        print(f"{cfg['op']} {entry['floats']} floats x {cfg['ranks']} ranks: median {entry['median_s']:.4g} s, "
              f"busbw {entry['busbw_gbps']:.3g} GB/s", flush=True)


def describe(result: Optional[dict]) -> str:
    """One line naming a results.collective (for logs and the report): op, backend, ranks, repetitions."""
    if not result:
        return "no collective result"
    return "{op} ({backend}, {dtype}) over {ranks} ranks, {warmup} warm-up + {repetitions} timed repetitions " \
           "per size; a repetition's time is the {time_basis}".format(**result)
