"""Studies as data: studies/<name>/study.toml declares a study's experiments, each a make target.

A study file holds a [study] table (title; `claims`: the study name its claims carry in its claims.py;
`order`: its place among the studies, read by the discovery: studies/__init__.py) and one
[experiments.<target>] table per experiment:

    device = "cpu" | "gpu"
    workloads = [...]                      # workload specs, studies/*/workloads/<name>.toml
    cpu = "<target>"                       # GPU experiments (required): the CPU experiment offered instead
    measurement = { protocol = "iterations", warmup = 100, iterations = 1000 }   # optional
    sweep = { threads = "doubling" | [1, 2, 4], batch_size = [50, 500], ranks = [1, 2],   # optional
              learning_rate = [1e-4, 1e-3], blas = ["onednn", "eigen"], rnn_kernel = ["fused", "plain"] }
    batch_sizes = { "<workload>" = 128 }   # optional: the experiment's batch size for some of its workloads
    split_batch = true                     # optional, with a ranks sweep: the batch size is the step's, split
                                           # between the ranks (Shi et al.'s Table 8), not each rank's (Shams et al.)
    aggregate = false                      # optional: left out of the study's <study>-cpu/-gpu targets (the demo)
    [experiments.<target>.profiles.quick]                                      # optional, per profile:
    measurement = { iterations = 20 }                                          # replaces those keys

With no `measurement`, runs follow the epoch protocol of their workload spec; a measurement table goes
into each run's resolved spec (bench.measurement.check validates it). A sweep runs every
workload x framework x repeat once per point of the axes' product; each point enters the run request
(request["sweep"]) and so its run id, and the report groups by it. `threads = "doubling"` is 1, 2, 4, ...
up to and past the machine's physical cores (doubling_threads). `learning_rate` sets the optimizer's lr
(training.optimizer.lr: positive numbers, the one real-valued axis). `blas` names the BLAS backend a run asks its
framework for (bench/blas_backends.py: words; campaign.plan skips a framework that cannot switch to it);
`cudnn_autotune` ("on", "off": GPU experiments only), `rnn_kernel` ("fused", "plain") and `layout`
("channels_first", "channels_last") are the performance switches of bench/switches.py; campaign.plan skips a
framework without the switch, and a workload it does not apply to.
`ranks` is the number of data-parallel workers a run trains over (bench/dataparallel.py: one GPU each, or
processes sharing the CPU's cores), each at
the workload's batch size; it needs the iteration protocol, and campaign.plan skips ranks > 1 for frameworks
without data-parallel training. `batch_sizes` sets the batch size of some of
the experiment's workloads where its study ran them at another than the workload spec's (a study's GPU
batch); it enters each run's resolved spec and so its run id, except under a profile that chose a batch size
of its own (Experiment.batch_size_for). Every GPU experiment's `cpu` names its CPU
counterpart, which `make <gpu target>` offers on a machine without a GPU; it must be a CPU experiment of the
same study. Experiment names are unique across studies: they are make targets, beside each study's
<study>-cpu/-gpu (campaign/targets.py derives them all).
"""

from __future__ import annotations

import itertools
import tomllib
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import studies
from bench import blas_backends, switches
from bench import measurement as measure
from bench.errors import UsageError
from bench.threads import physical_cores as host_physical_cores
from campaign import specs

DEVICES = ("cpu", "gpu")
DOUBLING = "doubling"
# Sweep axes and where a point's value goes: the run's thread count, or the key path of the resolved spec it sets;
# ranks (the data-parallel workers: bench/dataparallel.py) only in the request's sweep, as every axis.
SWEEP_AXES: dict[str, tuple[str, ...]] = {
    "threads": (),
    "batch_size": ("training", "batch_size"),
    "ranks": (),
    "learning_rate": ("training", "optimizer", "lr"),  # Wu et al.'s learning-rate sweep
    "blas": (),  # the BLAS backend a run asks for (bench/blas_backends.py: applied in the run, before the framework)
    # The performance switches (bench/switches.py): cuDNN autotuning (GPU experiments only), the recurrent kernel,
    # the convolution layout; applied in the run, before the framework.
    **{axis: () for axis in switches.SWITCHES},
}
# Axes whose points are positive numbers, not whole numbers (the rest are counts).
REAL_AXES = ("learning_rate",)
# Axes whose points are words, each one of these.
WORD_AXES: dict[str, tuple[str, ...]] = {blas_backends.AXIS: tuple(blas_backends.values()),
                                          **{axis: s.values for axis, s in switches.SWITCHES.items()}}
# Axes that only mean something on a GPU.
GPU_AXES = tuple(axis for axis, s in switches.SWITCHES.items() if s.gpu_only)
_STUDY_KEYS = {"title", "claims", "order"}
_EXPERIMENT_KEYS = {"device", "workloads", "cpu", "measurement", "sweep", "profiles", "batch_sizes", "split_batch",
                    "aggregate"}


@dataclass(frozen=True)
class Experiment:
    """One experiment of a study: the runs one make target plans."""

    name: str
    study: str
    device: str
    workloads: tuple[str, ...]
    measurement: dict[str, Any] | None = None
    sweep: dict[str, Any] = field(default_factory=dict)
    # {profile: measurement keys that replace the experiment's for runs of that profile (quick: fewer steps)}
    profile_measurement: dict[str, dict[str, Any]] = field(default_factory=dict)
    # A GPU experiment's CPU counterpart in the same study (the make target offered without a GPU); None on a CPU one.
    cpu: str | None = None
    # {workload: the batch size the study ran it at in this experiment, where not the workload spec's}
    batch_sizes: dict[str, int] = field(default_factory=dict)
    # With a ranks sweep: the batch size is one step's over all ranks, each rank training batch / ranks rows
    # (Shi et al.'s Table 8); False: each rank trains the batch size (Shams et al.: the batch per worker).
    split_batch: bool = False
    # Whether the study's aggregate targets (<study>-cpu, <study>-gpu: campaign/targets.py) run it; the demo's not.
    aggregate: bool = True

    def measurement_for(self, profile: str) -> dict[str, Any] | None:
        """The measurement table of this experiment's runs of `profile` (None: the epoch protocol)."""
        if self.measurement is None:
            return None
        return {**self.measurement, **self.profile_measurement.get(profile, {})}

    def batch_size_for(self, workload: str, profile: str) -> int | None:
        """The batch size of this experiment's runs of `workload` under `profile` where it is not the resolved
        spec's (None: the spec's own)."""
        size = self.batch_sizes.get(workload)
        if size is None:
            return None
        # A profile with a batch size of its own chose what a short run can afford (smoke: a few rows in
        # seconds), whatever the device: it keeps it. The paper profile, and a profile that keeps the spec's
        # batch size and shortens the run otherwise (quick: fewer rows), run at the study's.
        own = specs.load(workload, profile)["training"].get("batch_size")
        return None if own != specs.load(workload)["training"].get("batch_size") else size

    def points(self, physical_cores: int | None = None) -> list[dict[str, Any]]:
        """The sweep's points, each {axis: value} (one empty point without a sweep); threads 'doubling'
        resolved for this machine's physical cores."""
        axes = {axis: doubling_threads(physical_cores) if values == DOUBLING else list(values)
                for axis, values in sorted(self.sweep.items())}
        return [dict(zip(axes, combo, strict=True)) for combo in itertools.product(*axes.values())]


@dataclass(frozen=True)
class Study:
    """A study file: its title, the study name of its claims, its published tables (the files its
    reference/SOURCES.md table names) and experiments."""

    name: str
    title: str
    claims: str
    reference: tuple[str, ...]
    experiments: dict[str, Experiment]


def known_studies() -> list[str]:
    """Every study folder's name, in study order (studies/__init__.py)."""
    return studies.names()


@cache
def load_study(name: str) -> Study:
    """Read and check studies/<name>/study.toml (a UsageError naming the file and the fix)."""
    folder = studies.folder(name)
    with open(folder.study_file, "rb") as fh:
        raw = tomllib.load(fh)
    where = folder.where(studies.STUDY_FILE)
    head = raw.get("study") or {}
    _no_unknown(head, _STUDY_KEYS, f"[study] of {where}")
    for key in ("title", "claims"):
        if not isinstance(head.get(key), str) or not head[key]:
            raise UsageError(f"{where} has no [study] {key}", f"write {key} = \"...\" under [study]")
    experiments = {target: _experiment(target, name, table, where) for target, table in
                   (raw.get("experiments") or {}).items()}
    if not experiments:
        raise UsageError(f"{where} declares no experiment", "add an [experiments.<target>] table")
    _check_counterparts(experiments, where)
    return Study(name, head["title"], head["claims"], tuple(s.file for s in studies.sources(folder)), experiments)


def _no_unknown(table: dict, allowed: set[str], where: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise UsageError(f"{where} sets unknown key '{unknown[0]}'", f"use only {', '.join(sorted(allowed))}")


def _experiment(target: str, study: str, table: dict, study_file: str) -> Experiment:
    """One experiment table of a study file, checked: device, known workloads, a measurement table, sweep axes."""
    where = f"[experiments.{target}] of {study_file}"
    _no_unknown(table, _EXPERIMENT_KEYS, where)
    if table.get("device") not in DEVICES:
        raise UsageError(f"{where} has device {table.get('device')!r}", f"set device = \"cpu\" or \"gpu\" in {where}")
    workloads = table.get("workloads") or []
    unknown = sorted(set(workloads) - set(specs.known_workloads()))
    if not workloads or unknown:
        raise UsageError(f"{where} names {'unknown workload ' + repr(unknown[0]) if unknown else 'no workload'}",
                         f"choose from: {', '.join(specs.known_workloads())}")
    measurement = table.get("measurement")
    if measurement is not None:
        measure.check(measurement, where)
    by_profile = {}
    for profile, override in (table.get("profiles") or {}).items():
        here = f"[experiments.{target}.profiles.{profile}] of {study_file}"
        _no_unknown(override, {"measurement"}, here)
        if measurement is None:
            raise UsageError(f"{here} sets a measurement but the experiment has none",
                             f"give [experiments.{target}] a measurement table first")
        by_profile[profile] = dict(override.get("measurement") or {})
        measure.check({**measurement, **by_profile[profile]}, here)
    sweep = table.get("sweep") or {}
    for axis, values in sweep.items():
        if axis not in SWEEP_AXES:
            raise UsageError(f"{where} sweeps unknown axis '{axis}'", f"sweep only {', '.join(SWEEP_AXES)}")
        if axis in WORD_AXES:
            _check_words(axis, values, where)
            continue
        kinds = (int, float) if axis in REAL_AXES else (int,)
        good = values == DOUBLING if axis == "threads" and isinstance(values, str) else (
            isinstance(values, list) and values and all(type(v) in kinds and v > 0 for v in values))
        if not good:
            also = ' or "doubling"' if axis == "threads" else ""
            what = "positive numbers" if axis in REAL_AXES else "positive whole numbers"
            raise UsageError(f"{where} sweeps {axis} over {values!r}", f"give a list of {what}{also}")
    gpu_only = sorted(set(sweep) & set(GPU_AXES))
    if gpu_only and table["device"] != "gpu":
        raise UsageError(f"{where} sweeps {gpu_only[0]} on the CPU, where no cuDNN runs",
                         f"sweep {gpu_only[0]} in a GPU experiment (device = \"gpu\")")
    if "ranks" in sweep and (measurement or {}).get("protocol") != measure.ITERATIONS:
        raise UsageError(f"{where} sweeps ranks without the iteration protocol (data-parallel runs time mini-batches)",
                         "add measurement = { protocol = \"iterations\", warmup = W, iterations = N }")
    cpu = table.get("cpu")
    if cpu is not None and (table["device"] != "gpu" or not isinstance(cpu, str) or not cpu):
        raise UsageError(f"{where} sets cpu = {cpu!r}" + (" but runs on the CPU" if table["device"] != "gpu" else ""),
                         "only a GPU experiment names its CPU counterpart: cpu = \"<a CPU experiment of this study>\"")
    batch_sizes = _batch_sizes(table.get("batch_sizes", {}), workloads, sweep, where)
    split = table.get("split_batch", False)
    if not isinstance(split, bool) or (split and "ranks" not in sweep):
        raise UsageError(f"{where} sets split_batch = {split!r}" + (" without a ranks sweep" if split is True else ""),
                         "write split_batch = true only beside sweep = { ranks = [...] }, or leave it out")
    aggregate = table.get("aggregate", True)
    if not isinstance(aggregate, bool):
        raise UsageError(f"{where} sets aggregate = {aggregate!r}", "write aggregate = false, or leave it out")
    return Experiment(target, study, table["device"], tuple(workloads), measurement, dict(sweep), by_profile, cpu,
                      batch_sizes, split, aggregate)


def _check_words(axis: str, values: Any, where: str) -> None:
    """A word axis's points: a list of distinct words, each one it knows."""
    known = WORD_AXES[axis]
    if not (isinstance(values, list) and values and all(v in known for v in values)
            and len(set(values)) == len(values)):
        raise UsageError(f"{where} sweeps {axis} over {values!r}", f"give a list of distinct words from: "
                         f"{', '.join(known)}")


def _batch_sizes(table: Any, workloads: list[str], sweep: dict, where: str) -> dict[str, int]:
    """An experiment's batch_sizes table, checked: a positive whole number per workload of the experiment, and
    no batch-size sweep beside it (whose points would replace it)."""
    if not isinstance(table, dict):
        raise UsageError(f"{where} sets batch_sizes = {table!r}", 'write batch_sizes = { "<workload>" = 128 }')
    for workload, size in table.items():
        if workload not in workloads:
            raise UsageError(f"{where} sets a batch size for '{workload}', which it does not run",
                             f"name one of its workloads: {', '.join(workloads)}")
        if type(size) is not int or size < 1:
            raise UsageError(f"{where} sets {workload}'s batch size to {size!r}", "give a positive whole number")
    if table and "batch_size" in sweep:
        raise UsageError(f"{where} sets batch_sizes and sweeps batch_size", "drop one of them")
    return dict(table)


def _check_counterparts(experiments: dict[str, Experiment], where: str) -> None:
    """Each GPU experiment's `cpu` names a CPU experiment of the same study file."""
    cpus = [name for name, e in experiments.items() if e.device == "cpu"]
    choices = f"choose from: {', '.join(cpus)}" if cpus else "add a CPU experiment to the study first"
    for name, e in experiments.items():
        if e.device == "gpu" and e.cpu is None:
            raise UsageError(f"[experiments.{name}] of {where} names no CPU counterpart (what `make {name}` offers "
                             f"without a GPU)", f"write cpu = \"<target>\" under it; {choices}")
        if e.cpu is not None and e.cpu not in cpus:
            raise UsageError(f"[experiments.{name}] of {where} sets cpu = {e.cpu!r}, which is not a CPU experiment "
                             f"of this study", choices)


def experiments() -> dict[str, Experiment]:
    """Every study's experiments by make target (a UsageError when two studies use one name)."""
    found: dict[str, Experiment] = {}
    for name in known_studies():
        for target, experiment in load_study(name).experiments.items():
            if target in found:
                raise UsageError(f"experiment '{target}' is declared by studies {found[target].study} and {name}",
                                 f"rename one in {studies.folder(name).where(studies.STUDY_FILE)}")
            found[target] = experiment
    return found


def experiment(target: str) -> Experiment:
    """The experiment a make target runs (a UsageError naming the choices)."""
    found = experiments()
    if target not in found:
        raise UsageError(f"unknown campaign target '{target}'", f"choose from: {', '.join(sorted(found))}")
    return found[target]


def doubling_threads(physical_cores: int | None = None) -> list[int]:
    """1, 2, 4, ... up to the first power of two past the physical cores (Shi et al.: up to and past them)."""
    cores = physical_cores or host_physical_cores()
    counts = [1]
    while counts[-1] <= cores:
        counts.append(counts[-1] * 2)
    return counts


def _set_path(table: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    """A copy of `table` with the value at `path` (e.g. training, optimizer, lr) replaced, each table on the way
    copied, so the spec it came from is left alone."""
    head, *rest = path
    return {**table, head: _set_path(dict(table.get(head) or {}), tuple(rest), value) if rest else value}


def apply_point(spec: dict[str, Any], point: dict[str, Any], measurement: dict[str, Any] | None,
                batch_size: int | None = None, split_batch: bool = False) -> dict[str, Any]:
    """A workload's resolved spec with an experiment's measurement table, its batch size for the workload
    (Experiment.batch_size_for; None: the spec's) and a sweep point's spec values (threads is the run's, not the
    spec's: campaign.plan sets it); split_batch: each of the point's ranks trains batch size / ranks rows (a
    UsageError where that is not a whole number)."""
    out = {**spec, "training": dict(spec["training"])}
    if batch_size is not None:
        out["training"]["batch_size"] = batch_size
    # The epoch protocol is every spec's default: written out, it would only change the run ids.
    if measurement is not None and measurement.get("protocol") != measure.EPOCHS:
        out["measurement"] = dict(measurement)
    for axis, value in point.items():
        if SWEEP_AXES[axis]:
            out = _set_path(out, SWEEP_AXES[axis], value)
    ranks = point.get("ranks", 1)
    if split_batch and ranks > 1:
        batch = out["training"]["batch_size"]
        if batch % ranks:
            raise UsageError(f"{spec.get('name', 'the workload')}'s batch size {batch} does not split between "
                             f"{ranks} ranks", "sweep rank counts that divide it, or use a profile whose batch they do")
        out["training"]["batch_size"] = batch // ranks
    return out

