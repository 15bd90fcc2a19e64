"""NVIDIA GPU discovery and counters through NVML (nvidia-ml-py), with a plain 'no GPU' answer.

Inside a container NVML reports host PIDs, so nothing here attributes use per process: a run owns
its device and the device's counters are the run's; GpuSampler.other_processes counts the processes
beside the run on it (count_others states the rule), which marks a run contended. CPython
3.6-clean (standard library and nvidia-ml-py): the monitor and the entrypoint use it inside images
of every era.
"""

import ctypes
import os
from typing import List, Optional, Union


class GpuStatus:
    """Whether NVML answered, why not if it did not, and what it found."""

    def __init__(self, available: bool, reason: str = "", driver: Optional[str] = None,
                 cuda_driver_version: Optional[str] = None, devices: Optional[List[dict]] = None) -> None:
        self.available = available
        self.reason = reason
        self.driver = driver
        self.cuda_driver_version = cuda_driver_version
        self.devices = devices or []

    def summary(self) -> Union[str, dict]:
        """What run.json records: a dict of the GPUs, or a plain 'no GPU: <why>' line."""
        if not self.available:
            return f"no GPU: {self.reason}"
        return {"driver": self.driver, "cuda_driver_version": self.cuda_driver_version, "devices": self.devices}


def _nvml():
    try:
        import pynvml
    except ImportError:
        # Without the bindings, still tell "no driver" apart from "driver but no bindings".
        try:
            ctypes.CDLL("libnvidia-ml.so.1")
        except OSError:
            return None, "no NVIDIA driver: libnvidia-ml.so.1 not found"
        return None, "NVML bindings (nvidia-ml-py) are not installed in this environment"
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:  # NVMLError_LibraryNotFound on machines without a driver
        return None, f"NVML did not initialise ({exc}); no NVIDIA driver on this machine"
    return pynvml, ""


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _asked(call, *args) -> Optional[int]:
    """An NVML query's whole-number answer, None where NVML (or these bindings) cannot give it."""
    if call is None:
        return None
    try:
        return int(call(*args))
    except Exception:  # NVMLError_NotSupported on PCIe-only boards, and what older bindings raise
        return None


def links(nvml, handle) -> dict:
    """How the GPU is joined to the others: its active NVLink links (0 on a board without NVLink; None where
    NVML cannot tell) and its current PCIe generation and width. Data-parallel scaling depends on them
    (Shams et al.: NVLink vs PCIe)."""
    state = getattr(nvml, "nvmlDeviceGetNvLinkState", None)
    active = None
    if state is not None:
        answers = [_asked(state, handle, link) for link in range(int(getattr(nvml, "NVML_NVLINK_MAX_LINKS", 18)))]
        known = [a for a in answers if a is not None]
        # A board without NVLink answers NotSupported for every link: that is 0 links, not "unknown".
        active = sum(1 for a in known if a == int(getattr(nvml, "NVML_FEATURE_ENABLED", 1)))
    return {"nvlink_active_links": active,
            "pcie_generation": _asked(getattr(nvml, "nvmlDeviceGetCurrPcieLinkGeneration", None), handle),
            "pcie_width": _asked(getattr(nvml, "nvmlDeviceGetCurrPcieLinkWidth", None), handle)}


def probe() -> GpuStatus:
    """Find the NVIDIA GPUs this process can see. Never raises."""
    nvml, reason = _nvml()
    if nvml is None:
        return GpuStatus(False, reason)
    try:
        count = nvml.nvmlDeviceGetCount()
        if count == 0:
            return GpuStatus(False, "NVML found no GPU devices")
        devices = []
        for i in range(count):
            h = nvml.nvmlDeviceGetHandleByIndex(i)
            mem = nvml.nvmlDeviceGetMemoryInfo(h)
            try:
                cc = ".".join(map(str, nvml.nvmlDeviceGetCudaComputeCapability(h)))
            except nvml.NVMLError:
                cc = None
            device = {
                "index": i,
                "name": _text(nvml.nvmlDeviceGetName(h)),
                "uuid": _text(nvml.nvmlDeviceGetUUID(h)),
                "memory_total_mb": round(mem.total / 2**20),
                "compute_capability": cc,
            }
            device.update(links(nvml, h))
            devices.append(device)
        cuda = nvml.nvmlSystemGetCudaDriverVersion()
        return GpuStatus(
            True,
            driver=_text(nvml.nvmlSystemGetDriverVersion()),
            cuda_driver_version=f"{cuda // 1000}.{(cuda % 1000) // 10}",
            devices=devices,
        )
    except nvml.NVMLError as exc:
        return GpuStatus(False, f"NVML error: {exc}")


# The host GPUs a campaign gave this run (campaign/runners GpuSlot): their NVML indices on the host, their
# UUIDs and names, comma-separated in rank order (one for most runs; one per rank of a data-parallel or
# collective GPU run). Set by every runner for GPU runs; the entrypoint records them, the monitor reads the
# first (rank 0's). Inside a container NVML numbers only the granted GPUs (from 0), so the UUID, the same
# everywhere, is what finds one; locally CUDA_VISIBLE_DEVICES holds the host indices.
GPU_INDEX_VAR = "DLREPRO_GPU_INDEX"
GPU_UUID_VAR = "DLREPRO_GPU_UUID"
GPU_NAME_VAR = "DLREPRO_GPU_NAME"


def _listed(environ, var: str, n: int) -> list:
    """The comma-separated values of `var`, padded with None to n (an empty value is None)."""
    values = [v.strip() or None for v in environ.get(var, "").split(",")]
    return (values + [None] * n)[:n] if len(values) <= n else [None] * n


def assigned_gpus(environ=None) -> list:
    """[{"index", "uuid", "name"}, ...] of the GPUs the campaign gave this run, in rank order ([]: none)."""
    environ = os.environ if environ is None else environ
    indices = [i.strip() for i in environ.get(GPU_INDEX_VAR, "").split(",")]
    if not all(i.isdigit() for i in indices):
        return []
    uuids, names = _listed(environ, GPU_UUID_VAR, len(indices)), _listed(environ, GPU_NAME_VAR, len(indices))
    return [{"index": int(i), "uuid": u, "name": n} for i, u, n in zip(indices, uuids, names)]


def run_device_index() -> int:
    """The NVML index of the GPU the run owns: the first of CUDA_VISIBLE_DEVICES, else 0."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    return int(visible) if visible.isdigit() else 0


def run_device_uuid() -> Optional[str]:
    """The UUID of the (first) GPU the run owns: DLREPRO_GPU_UUID, else a UUID in CUDA_VISIBLE_DEVICES."""
    given = os.environ.get(GPU_UUID_VAR, "").split(",")[0].strip()
    if given:
        return given
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    return visible if visible.startswith(("GPU-", "MIG-")) else None


def device_handle(nvml, uuid: Optional[str], index: int):
    """NVML handle of the run's GPU: by UUID when one is given and NVML knows it, else by index."""
    if uuid:
        try:
            try:
                return nvml.nvmlDeviceGetHandleByUUID(uuid)
            except TypeError:  # older bindings take bytes only
                return nvml.nvmlDeviceGetHandleByUUID(uuid.encode())
        except nvml.NVMLError:
            pass  # a UUID this NVML does not list: fall back to the index
    return nvml.nvmlDeviceGetHandleByIndex(index)


class GpuSampler:
    """Reads one GPU's counters each call; absent counters come back as None.

    The GPU is the run's own: by UUID (`uuid`, else DLREPRO_GPU_UUID), else by NVML index (`index`,
    else the first of CUDA_VISIBLE_DEVICES, else 0). `nvml` replaces the bindings (tests)."""

    def __init__(self, index: Optional[int] = None, uuid: Optional[str] = None, nvml=None) -> None:
        self.nvml, self.reason = (nvml, "") if nvml is not None else _nvml()
        self.handle = None
        if self.nvml is not None:
            try:
                self.handle = device_handle(self.nvml, uuid or run_device_uuid(),
                                            run_device_index() if index is None else index)
            except self.nvml.NVMLError as exc:
                self.reason = f"NVML error: {exc}"

    def _try(self, fn, *args):
        try:
            return fn(self.handle, *args)
        except self.nvml.NVMLError:
            return None  # counter not supported on this GPU

    def sample(self) -> dict:
        """One reading of utilization, memory, power, energy, clock, temperature and throttling."""
        if self.handle is None:
            return {}
        n = self.nvml
        util = self._try(n.nvmlDeviceGetUtilizationRates)
        mem = self._try(n.nvmlDeviceGetMemoryInfo)
        power = self._try(n.nvmlDeviceGetPowerUsage)
        energy = self._try(n.nvmlDeviceGetTotalEnergyConsumption)
        throttle = self._try(n.nvmlDeviceGetCurrentClocksEventReasons) if hasattr(
            n, "nvmlDeviceGetCurrentClocksEventReasons"
        ) else self._try(n.nvmlDeviceGetCurrentClocksThrottleReasons)
        return {
            "gpu_util_pct": None if util is None else float(util.gpu),
            "gpu_mem_used_mb": None if mem is None else mem.used / 2**20,
            "gpu_power_w": None if power is None else power / 1000.0,
            "gpu_energy_j": None if energy is None else energy / 1000.0,
            "gpu_sm_clock_mhz": self._try(n.nvmlDeviceGetClockInfo, n.NVML_CLOCK_SM),
            "gpu_temp_c": self._try(n.nvmlDeviceGetTemperature, n.NVML_TEMPERATURE_GPU),
            "gpu_throttle_reasons": None if throttle is None else f"0x{throttle:x}",
        }

    def other_processes(self, own_pids) -> Optional[int]:
        """How many processes on this GPU are not the run (count_others' rule), None when NVML
        cannot list them. `own_pids` are the PIDs of the run's process tree."""
        if self.handle is None:
            return None
        listed = None
        for name in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses"):
            fn = getattr(self.nvml, name, None)
            procs = self._try(fn) if fn is not None else None
            if procs is not None:
                listed = (listed or set()) | {p.pid for p in procs}
        return None if listed is None else count_others(listed, own_pids)


def count_others(gpu_pids, own_pids) -> int:
    """Processes on a GPU that are not the run. When a listed PID is one of the run's, PIDs compare and
    the answer is the PIDs outside the run; when none is (inside a container NVML gives the host's PIDs),
    it is the processes listed minus one, the run's own context (exact while a GPU run trains)."""
    gpu_pids, own_pids = set(gpu_pids), set(own_pids)
    if gpu_pids & own_pids:
        return len(gpu_pids - own_pids)
    return max(len(gpu_pids) - 1, 0)
