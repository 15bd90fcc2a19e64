"""Runners: how a run's entrypoint is launched. Every runner calls `python -m bench run` on the
run's request.json (bench/request.py), written into the run folder before the launch.

A runner is a module of this folder, found there (discovered(): campaign/runners/<name>.py, not registered): it
defines the class whose `name` is the module's name, and get() gives that class's constructor those of device, era,
gpus, data_root and limits it takes. Helper modules start with '_'.

A runner prepares a framework's environment once per campaign (returning its identity: the lock's
sha256 for a virtual environment, the image id and digest for a container, the installed packages'
sha256 for the Python environment the campaign runs on) and launches single runs, each writing
into its own run folder.

A request names its data relative to the data root (bench.request.data_folder); each runner resolves it
under the data root it was given (the docker runner mounts that folder, the others pass it as --data),
so no host path is in an artifact. A container runner bounds each run (Limits: read-only root
filesystem, memory, pids, an init process), and every runner records the bounds it applies in the
request's environment.limits, which run.json carries (null: not applied).
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
import sys
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Protocol

from bench.errors import UsageError
from bench.gpu import GPU_INDEX_VAR, GPU_NAME_VAR, GPU_UUID_VAR
from bench.request import REQUEST_FILE
from campaign.requests import Environment

# Host memory a container's default limit leaves to everything else (the engine, the campaign, the desktop):
# a tenth of it, at least 1 GiB, so that a runaway run is killed in its container, never the campaign.
MEMORY_RESERVE_FRACTION, MEMORY_RESERVE_MIN = 0.1, 1 << 30
MEMORY_MIN = 256 << 20  # below this not even a framework's import fits: a typo, refused
# pids.max counts threads too: a framework's pools (intra-op, inter-op, BLAS/OpenMP: one thread per core each,
# several processes for data-parallel ranks and loader workers) reach a few hundred on a large machine. 4096,
# or 32 per core where there are more than 128 cores, is ample for those and still stops a fork bomb.
PIDS_DEFAULT, PIDS_PER_CORE, PIDS_MIN = 4096, 32, 64
# A read-only container's writable /tmp (HOME, TMPDIR): caches and compiled kernels (Keras, Theano, matplotlib,
# PyTorch) take far less; in docker a tmpfs, whose pages count against the memory limit.
TMP_BYTES = 1 << 30
_SIZE = re.compile(r"(\d+)\s*([kmgt]?)(?:i?b)?", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


@dataclass(frozen=True)
class Limits:
    """The bounds a runner puts on each run's process (the request's environment.limits, bench/request.py):
    memory in bytes (no swap beyond it) and processes/threads at once, None where not applied; whether the
    root filesystem is read-only and an init process runs as PID 1."""

    memory_bytes: int | None = None
    pids: int | None = None
    read_only_root: bool = False
    init: bool = False

    def record(self) -> dict:
        """The request's environment.limits."""
        return asdict(self)


NOT_APPLIED = Limits()  # the local and system runners: the run is an ordinary process of this machine


def host_memory_bytes() -> int:
    """This machine's physical memory."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def default_memory_bytes(total: int | None = None) -> int:
    """A container's memory limit by default: the host's memory less its reserve (MEMORY_RESERVE_*)."""
    total = host_memory_bytes() if total is None else total
    return max(MEMORY_MIN, total - max(MEMORY_RESERVE_MIN, int(total * MEMORY_RESERVE_FRACTION)))


def default_pids(cores: int | None = None) -> int:
    """A container's pids limit by default (PIDS_DEFAULT, more on a machine of many cores)."""
    return max(PIDS_DEFAULT, PIDS_PER_CORE * ((os.cpu_count() or 1) if cores is None else cores))


def memory_bytes(text: str) -> int:
    """MEMORY=16g (bytes, or k, m, g, t suffixed, binary as docker reads them) in bytes, or a UsageError."""
    found = _SIZE.fullmatch(text.strip())
    value = int(found.group(1)) * _UNITS[found.group(2).lower()] if found else 0
    if value < MEMORY_MIN:
        raise UsageError(f"MEMORY={text} is not a memory size of at least 256m",
                         "set e.g. MEMORY=16g (each container run's memory limit), or leave it unset for "
                         "the host's memory less a tenth")
    return value


def pids_count(text: str) -> int:
    """PIDS=4096 as a number, or a UsageError."""
    if not text.strip().isdigit() or int(text) < PIDS_MIN:
        raise UsageError(f"PIDS={text} is not a whole number of at least {PIDS_MIN}",
                         f"set e.g. PIDS={PIDS_DEFAULT} (processes and threads per container run), or leave it unset")
    return int(text)


def container_limits(memory: str = "", pids: str = "") -> Limits:
    """What a container runner applies: MEMORY and PIDS when given (checked), else the host's defaults; a
    read-only root filesystem and an init process always."""
    return Limits(memory_bytes(memory) if memory else default_memory_bytes(),
                  pids_count(pids) if pids else default_pids(), read_only_root=True, init=True)


def request_limits(request: dict) -> Limits | None:
    """The Limits a planned request records (None for a request from before they were recorded)."""
    limits = request["environment"].get("limits")
    return None if limits is None else Limits(**limits)


def entrypoint_args(run_dir: Path, data_dir: Path | None = None) -> list[str]:
    """Arguments after `python -m bench`: run the request.json in run_dir into run_dir (the data
    at data_dir when it is mounted somewhere other than the request's own path)."""
    args = ["run", "--request", str(Path(run_dir) / REQUEST_FILE), "--out", str(run_dir)]
    return args + (["--data", str(data_dir)] if data_dir is not None else [])


@dataclass(frozen=True)
class Outcome:
    """How the launched process ended."""

    returncode: int
    timed_out: bool = False


@dataclass(frozen=True)
class GpuSlot:
    """One host GPU given to one run: its NVML index on the host, UUID and name. A launch argument,
    never part of the request: a run is the same run whichever GPU it ran on."""

    index: int
    uuid: str | None = None
    name: str | None = None

    def label(self) -> str:
        """'GPU 2 (NVIDIA H100 80GB HBM3)'."""
        return f"GPU {self.index}" + (f" ({self.name})" if self.name else "")


def gpus_env(gpus: tuple[GpuSlot, ...]) -> dict[str, str]:
    """What tells the entrypoint which GPUs it was given, in rank order (bench.gpu.assigned_gpus reads it);
    nothing for a run given none."""
    if not gpus:
        return {}
    return {GPU_INDEX_VAR: ",".join(str(g.index) for g in gpus), GPU_UUID_VAR: ",".join(g.uuid or "" for g in gpus),
            GPU_NAME_VAR: ",".join(g.name or "" for g in gpus)}


def gpus_label(gpus: tuple[GpuSlot, ...]) -> str:
    """'GPU 2 (NVIDIA H100 80GB HBM3)', or 'GPUs 2, 3 (NVIDIA H100 80GB HBM3)' for a run given several."""
    if len(gpus) == 1:
        return gpus[0].label()
    names = sorted({g.name for g in gpus if g.name})
    return f"GPUs {', '.join(str(g.index) for g in gpus)}" + (f" ({', '.join(names)})" if names else "")


def slots_by_index(devices: list[dict]) -> dict[int, GpuSlot]:
    """A GpuSlot for every GPU NVML listed (`devices`: bench.gpu.probe().devices), by NVML index."""
    return {int(d["index"]): GpuSlot(int(d["index"]), d.get("uuid"), d.get("name")) for d in devices}


def gpu_slots(devices: list[dict], wanted: str = "all") -> list[GpuSlot]:
    """The GPUs a campaign may use: every GPU NVML listed (`devices`: bench.gpu.probe().devices) for
    'all', else those of the comma-separated NVML indices in `wanted` (GPUS=0,2), in that order."""
    found = slots_by_index(devices)
    text = (wanted or "all").strip()
    if text == "all":
        return [found[i] for i in sorted(found)]
    have = ", ".join(str(i) for i in sorted(found)) or "none"
    picked: list[GpuSlot] = []
    for part in (p.strip() for p in text.split(",")):
        if not part.isdigit() or int(part) not in found:
            raise UsageError(f"GPUS={text} names '{part}', which is not a GPU of this machine (NVML indices: {have})",
                             "set GPUS=all or a comma-separated list of those indices, e.g. GPUS=0,2")
        if found[int(part)] not in picked:
            picked.append(found[int(part)])
    return picked


class Runner(Protocol):
    """The contract every runner keeps.

    A runner may also offer abort(): kill every run it has in flight, for a campaign stopped while
    it ran several at once (campaign/execute.py calls it when present)."""

    name: str

    def prepare(self, framework: str) -> Environment:
        """Make the framework's environment ready; return its identity (lock sha256 or image id)."""

    def launch(self, request: dict, run_dir: Path, timeout_s: float | None,
               gpus: tuple[GpuSlot, ...] = ()) -> Outcome:
        """Run the request (already in run_dir/request.json) to completion or timeout, its output
        going to run_dir/log.txt; a GPU run is given exactly `gpus`, rank 0's first (none: the runner's
        default)."""


def tee_log(stream: IO[bytes], log_path: Path, prefix: str = "    ") -> threading.Thread:
    """Copy a run's output into its log.txt, echoing epoch lines (after `prefix`, which tells runs
    in flight at once apart) so long runs show progress."""

    def pump() -> None:
        with open(log_path, "ab") as log:
            for line in iter(stream.readline, b""):
                log.write(line)
                log.flush()
                if line.startswith(b"epoch "):
                    sys.stdout.write(prefix + line.decode(errors="replace"))
                    sys.stdout.flush()

    thread = threading.Thread(target=pump, daemon=True)
    thread.start()
    return thread


def choose_auto() -> tuple[str, str]:
    """RUNNER=auto: ('docker', why) where a Docker engine answers, else ('local', why)."""
    from images import build

    try:
        build.client()
    except UsageError as exc:
        return "local", f"{exc.problem}; the local runner uses virtual environments from the same locks"
    return "docker", "a Docker engine answers (RUNNER=local to use virtual environments instead)"


def echo_prefix(gpus: tuple[GpuSlot, ...]) -> str:
    """How a run's echoed epoch lines start: indented, with its GPUs when it has some."""
    return f"    [GPU {','.join(str(g.index) for g in gpus)}] " if gpus else "    "


def get(name: str, device: str = "cpu", era: str = "current", gpus: tuple[GpuSlot, ...] = (),
        data_root: Path | None = None, limits: Limits | None = None) -> Runner:
    """The runner called `name` ('auto': docker where an engine answers, else local, saying which);
    `gpus`, the GPUs a GPU campaign uses, are what the docker and local runners' pre-flight checks;
    `data_root` is where requests' data paths are resolved (default: bench.request.data_folder's);
    `limits`, the docker runner's bounds on each run (default: container_limits()). Each runner's constructor
    is given those of these it takes."""
    if check_name(name) == "auto":
        name, why = choose_auto()
        print(f"runner: {name} ({why})", flush=True)
    given = {"device": device, "era": era, "gpus": gpus, "data_root": data_root, "limits": limits}
    cls = runner_class(name)
    return cls(**{k: v for k, v in given.items() if k in inspect.signature(cls).parameters})


def discovered() -> tuple[str, ...]:
    """Every runner: the modules of this package's folders (campaign/runners/<name>.py), sorted; '_' marks a
    helper module."""
    return tuple(sorted({p.stem for folder in __path__ for p in Path(folder).glob("*.py")
                         if not p.stem.startswith("_")}))


def runner_class(name: str) -> type:
    """The class runner module `name` defines whose `name` is the module's name (the runner's contract)."""
    module = importlib.import_module(f"{__name__}.{name}")
    found = [c for c in vars(module).values()
             if inspect.isclass(c) and c.__module__ == module.__name__ and getattr(c, "name", None) == name]
    if len(found) != 1:
        raise AssertionError(f"{module.__file__} defines {len(found)} classes named '{name}', not one")
    return found[0]


def check_name(name: str, auto: bool = True) -> str:
    """Return a runner name RUNNER may give (one of discovered(), or 'auto' where `auto`), else the one-line
    UsageError."""
    if not (auto and name == "auto") and name not in discovered():
        raise UsageError(f"unknown runner '{name}'", f"choose from: {', '.join(discovered())} (RUNNER=...)")
    return name
