"""Campaigns: frameworks x workloads x repeats on one device (x the sweep points of a study's
experiment, campaign/study.py), planned into run requests.

Every run is resolved into its request (campaign/requests.py) before anything runs; its id is a
hash of the request's identity (framework, environment, resolved workload spec, dataset hash,
device, seed, repeat: bench/request.py), so a reordered framework list or a resumed campaign finds
the same ids. Running them is campaign/execute.py.

A campaign folder holds runs of one profile, data source and thread count (campaign.json records
them on first use): resuming it with others would mix them in one report as if they were repeats.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from bench import (
    atomic,
    blas_backends,
    collectives,
    dataparallel,
    frameworks,
    generated,
    inference,
    iterations,
    measurement,
    modelplan,
    prepared,
    request,
    switches,
)
from bench.detection import detector, support
from bench.errors import UsageError
from bench.frameworks import capabilities
from campaign import requests, specs
from campaign.runners import Runner
from campaign.study import Experiment, apply_point
from images.external import ArchiveUnreachable

SETTINGS_FILE = "campaign.json"
# campaign.json key -> the make variable that sets it (for the error that names the fix).
SETTING_VARS = {"profile": "PROFILE", "data": "DATA", "threads": "THREADS"}
DEVICES = ("cpu", "gpu")
# The measurement protocols that need a Trainer hook beside train_epoch(), and who has it (the declarations).
PROTOCOL_HOOKS = {measurement.ITERATIONS: iterations.SUPPORT, measurement.INFERENCE: inference.SUPPORT}


@dataclass(frozen=True)
class Matrix:
    """What the user asked for, validated."""

    frameworks: tuple[str, ...]
    workloads: tuple[str, ...]
    device: str
    profile: str
    repeats: int
    data_source: str
    seed: int = 0
    era: str = "current"
    # The study experiment (make target) the matrix runs: its measurement protocol and sweep.
    experiment: Experiment | None = None

    @cached_property
    def points(self) -> list[dict]:
        """The sweep points every workload x framework x repeat runs at ([{}]: no sweep); resolved once
        (a "doubling" sweep reads the host's cores)."""
        return self.experiment.points() if self.experiment is not None else [{}]


@dataclass(frozen=True)
class PlannedRun:
    """One run of the matrix: its request and a label for progress lines."""

    request: dict
    label: str

    @property
    def run_id(self) -> str:
        """The run's content-derived id (its folder's name)."""
        return self.request["run_id"]

    @property
    def gpus(self) -> int:
        """The GPUs the run needs at once: 0 on a CPU, else one per rank (gpus_of)."""
        return gpus_of(self.request)


def gpus_of(req: dict) -> int:
    """The GPUs a run request needs at once: 0 for a CPU run; for a GPU run one per rank of its collective
    (bench/collectives) or of its data-parallel training (the sweep's `ranks`), else one."""
    if req["device"] != "gpu":
        return 0
    if collectives.is_collective(req["spec"]):
        return int(req["spec"]["collective"]["ranks"])
    return dataparallel.ranks(req)


def parse_repeats(text: str) -> int:
    """REPEATS as a positive integer, or a UsageError."""
    try:
        value = int(str(text).strip())
    except ValueError:
        value = 0
    if value < 1:
        raise UsageError(f"REPEATS must be a positive whole number, got '{text}'", "set e.g. REPEATS=5")
    return value


def build_matrix(
    framework_names: list[str], workload_names: list[str], device: str, profile: str,
    repeats: str | int, data_source: str, seed: int = 0, era: str = "current",
    experiment: Experiment | None = None,
) -> Matrix:
    """Validate every input before anything runs; order-independent (names are sorted, deduplicated)."""
    if not framework_names:
        have = ", ".join(frameworks.known_frameworks(era)) or "none"
        raise UsageError("no framework given", f"set FRAMEWORKS to some of: {have}")
    if not workload_names:
        raise UsageError("no workload given", f"set WORKLOADS to some of: {', '.join(specs.known_workloads())}")
    for name in framework_names:
        frameworks.check_name(name, era)
    for name in workload_names:
        specs.load(name, profile)  # raises for an unknown workload or profile
    if device not in DEVICES:
        raise UsageError(f"unknown device '{device}'", "choose cpu or gpu (DEVICE=...)")
    prepared.check_source(data_source)
    return Matrix(
        tuple(sorted(set(framework_names))), tuple(sorted(set(workload_names))), device, profile,
        parse_repeats(repeats), data_source, seed, era, experiment,
    )


def datasets_needed(workload_names: list[str]) -> list[str]:
    """The prepared datasets a list of workloads reads (none for data generated in the run or for a workload
    that reads none: nothing to download or prepare for those)."""
    return sorted({spec["dataset"] for spec in map(specs.load, workload_names)
                   if not generated.is_generated(spec) and not request.reads_no_data(spec)})


def check_settings(campaign_dir: Path, wanted: dict) -> None:
    """Stop when the campaign folder's recorded settings (campaign.json) differ from `wanted`: its
    runs would be reported beside the earlier ones as repeats of one thing. No record: nothing to check."""
    path = campaign_dir / SETTINGS_FILE
    if not path.exists():
        return
    try:
        have = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path} is unreadable ({exc})", "restore it, or choose another CAMPAIGN name") from None
    differ = [key for key in SETTING_VARS if have.get(key) != wanted[key]]
    if differ:
        was = " ".join(f"{SETTING_VARS[k]}={have.get(k)}" for k in differ)
        now = " ".join(f"{SETTING_VARS[k]}={wanted[k]}" for k in differ)
        raise UsageError(f"campaign folder {campaign_dir} holds runs made with {was}, not {now}",
                         f"resume it with {was}, or choose another CAMPAIGN name")


def refusal(framework: str, era: str, spec: dict, point: dict) -> str | None:
    """Why `framework` of `era` cannot run the resolved spec at the sweep point, naming what can, or None: all read
    off its declaration (bench/frameworks/<framework>/__init__.py): a BLAS backend it cannot switch to (the blas
    axis: bench/blas_backends.py), a performance switch it has not or that changes nothing in this model
    (bench/switches.py), a layer type of the model its module does not translate, a collective it has none of
    (bench/collectives), a detector it has no module for (bench/detection/support.py), data-parallel ranks it cannot
    train over (bench/dataparallel.py), or a measurement protocol its trainer has no hook for (step():
    bench/iterations.py; infer(): bench/inference.py). Its other runs go ahead."""
    if blas_backends.AXIS in point:
        why = blas_backends.refusal(framework, era, point[blas_backends.AXIS])
        if why:
            return why
    for axis in sorted(set(point) & set(switches.SWITCHES)):
        why = (switches.refusal(axis, framework, era, point[axis])
               or switches.inapplicable(axis, {layer.type for layer in modelplan.plan(spec).flat_layers}))
        if why:
            return why
    if collectives.is_collective(spec):  # no model and no trainer: only its collective module counts
        return collectives.SUPPORT.plan_refusal(framework, era)
    why = capabilities.layer_refusal(framework, era, spec)
    if why:
        return why
    if detector.is_detector(spec):  # a framework module of its own (bench/detection/support.py)
        why = support.refusal(framework, era)
        if why:
            return why
    parallel = dataparallel.SUPPORT if point.get(dataparallel.AXIS, 1) > 1 else None
    protocol = PROTOCOL_HOOKS.get(measurement.of_spec(spec)["protocol"])  # epochs: every trainer has train_epoch()
    for feature in filter(None, (parallel, protocol)):
        why = feature.plan_refusal(framework, era)
        if why:
            return why
    return None


def _say_refusals(workload: str, refused: dict[tuple[str, str], list[str]]) -> None:
    """One line per framework and reason: the workload's sweep points it leaves out, and why."""
    for (fw, why), points in sorted(refused.items()):
        at = f" at {', '.join(point.strip() for point in points)}" if any(points) else ""
        print(f"skipping {workload} for {fw}{at}: {why}", flush=True)


def plan(matrix: Matrix, runner: Runner, campaign: str, campaign_dir: Path, data_root: Path,
         threads: int | None) -> list[PlannedRun]:
    """Check the settings and the data, prepare the environment of every framework with a run to plan, and
    resolve every run's request, in a stable order."""
    settings = {"profile": matrix.profile, "data": matrix.data_source, "threads": threads}
    check_settings(campaign_dir, settings)
    data = {name: requests.find_dataset(data_root, name, matrix.data_source)
            for name in datasets_needed(list(matrix.workloads))}
    environments: dict = {}

    def environment(fw: str):
        """The framework's environment, prepared on its first planned run: one it has none of is never built.
        None when a file it needs cannot be had (PyTorch 0.4.1's archive) and other frameworks are in the
        campaign: its runs are left out in one line, the way `make images` skips its image."""
        if fw not in environments:
            print(f"environment for {fw} ({runner.name} runner) ...", flush=True)
            try:
                environments[fw] = runner.prepare(fw)
            except ArchiveUnreachable as exc:
                if len(matrix.frameworks) == 1:
                    raise
                environments[fw] = None
                print(f"skipping {fw}: its environment cannot be made: {exc.problem}; {exc.fix}, then run it with "
                      f"FRAMEWORKS={fw}", flush=True)
        return environments[fw]

    runs = []
    timing = matrix.experiment.measurement_for(matrix.profile) if matrix.experiment is not None else None
    for wl_name in matrix.workloads:
        workload_spec = specs.load(wl_name, matrix.profile)
        batch_size = matrix.experiment.batch_size_for(wl_name, matrix.profile) if matrix.experiment else None
        split = matrix.experiment.split_batch if matrix.experiment else False
        refused: dict[tuple[str, str], list[str]] = {}
        for point in matrix.points:
            spec = apply_point(workload_spec, point, timing, batch_size, split)
            at = "".join(f" {axis} {value}" for axis, value in point.items())
            for fw in matrix.frameworks:
                why = refusal(fw, matrix.era, spec, point)
                if why:
                    refused.setdefault((fw, why), []).append(at)
                    continue
                if environment(fw) is None:
                    continue
                for repeat in range(1, matrix.repeats + 1):
                    req = requests.resolve(
                        framework=fw, era=matrix.era, workload=wl_name, profile=matrix.profile, spec=spec,
                        dataset=data.get(spec["dataset"]), device=matrix.device, threads=point.get("threads", threads),
                        seed=matrix.seed + repeat - 1, repeat=repeat, campaign=campaign, runner=runner.name,
                        environment=environment(fw), sweep=point)
                    runs.append(PlannedRun(req, f"{fw} {wl_name} {matrix.device}{at} repeat {repeat}"))
        _say_refusals(wl_name, refused)
    if not (campaign_dir / SETTINGS_FILE).exists():
        atomic.write_text(campaign_dir / SETTINGS_FILE, json.dumps(settings, sort_keys=True) + "\n")
    return runs
