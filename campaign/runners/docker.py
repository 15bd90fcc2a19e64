"""The docker runner: each run in a fresh container of its framework's image, locked down.

A run's container: no network (network_mode none), the prepared dataset mounted read-only at
/data, the run folder mounted writable at /out, a non-root user (the host user's uid:gid when
the host user is not root, so the files are theirs; else the image's user 10001, with the run
folder lent to it for the run and given back to root after), the image's entrypoint
(`python -m bench run`) on the request.json in /out, with --data /data. The request names the
image by id and digest (the runner's prepare), so run.json records it. A GPU run gets exactly the
one GPU the campaign gave it (a GpuSlot): an NVIDIA device request for that device id (its UUID,
else its index) with the `compute` capability (the CUDA driver library) and `utility` (NVML, for
the monitor inside, which finds it by the UUID passed in DLREPRO_GPU_UUID: inside the container
NVML numbers the granted GPU 0).

Bounded as well (the request's environment.limits, which the runner's prepare put there: Limits): a
read-only root filesystem with a size-bounded tmpfs at /tmp (HOME and TMPDIR: Keras, Theano,
matplotlib and PyTorch write caches and compiled kernels there, so it allows exec), a memory limit with
no swap beyond it (a run over it is killed in its container: oom, not a slowed host), a pids limit, and
docker's init as PID 1 (reaps the orphans of data-loader workers, passes the stop signal on).
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

from bench import request as run_request
from bench import schema
from bench.errors import UsageError
from campaign import preflight
from campaign.requests import Environment
from campaign.runners import (
    TMP_BYTES,
    GpuSlot,
    Limits,
    Outcome,
    container_limits,
    echo_prefix,
    entrypoint_args,
    gpus_env,
    request_limits,
)
from images import build as images

DATA_MOUNT = Path("/data")
OUT_MOUNT = Path("/out")
IMAGE_UID = 10001  # the image's own non-root user (see images/<era>.Dockerfile)
TMPFS = {"/tmp": f"rw,exec,nosuid,nodev,size={TMP_BYTES},mode=1777"}  # exec: Theano loads what it compiles


def container_user() -> tuple[int, int]:
    """uid, gid the container runs as: the host user's, unless that is root."""
    uid, gid = os.getuid(), os.getgid()
    return (uid, gid) if uid != 0 else (IMAGE_UID, IMAGE_UID)


def container_config(request: dict, run_dir: Path, user: tuple[int, int], gpus: tuple[GpuSlot, ...] = (),
                     data_root: Path | None = None) -> dict:
    """Keyword arguments of docker's containers.create for one run (also what the tests inspect): a
    GPU run asks for exactly `gpus` by id (none: every GPU, for a run outside a campaign); the request's
    data folder under `data_root` (bench.request.data_folder) mounted; bounded by the request's limits
    (those of a request from before they were recorded: container_limits())."""
    from docker.types import DeviceRequest

    data = run_request.data_folder(request["data"], data_root)  # None: generated in the run, no folder
    limits = request_limits(request) or container_limits()
    config = {
        "image": request["environment"]["env_id"],
        "command": entrypoint_args(OUT_MOUNT, DATA_MOUNT if data is not None else None),
        "user": f"{user[0]}:{user[1]}", "network_mode": "none",
        "volumes": {str(run_dir): {"bind": str(OUT_MOUNT), "mode": "rw"}},
        # Any uid must find a writable home (Keras, Theano and matplotlib write caches there).
        "environment": {"HOME": "/tmp", "TMPDIR": "/tmp", "PYTHONUNBUFFERED": "1"},
        "labels": {"org.dlrepro.run-id": request["run_id"], "org.dlrepro.campaign": request["campaign"]},
        "detach": True, "stdin_open": False, "tty": False,
        "security_opt": ["no-new-privileges"], "cap_drop": ["ALL"],
        **bounds(limits),
    }
    if data is not None:
        config["volumes"][str(data)] = {"bind": str(DATA_MOUNT), "mode": "ro"}
    if request["device"] == "gpu":
        capabilities = [["gpu", "compute", "utility"]]
        if not gpus:
            config["device_requests"] = [DeviceRequest(count=-1, capabilities=capabilities)]
        else:  # only these in the container; rank r of a data-parallel run takes its cuda:r
            config["device_requests"] = [DeviceRequest(device_ids=[g.uuid or str(g.index) for g in gpus],
                                                       capabilities=capabilities)]
            config["environment"].update(gpus_env(gpus))
    return config


def bounds(limits: Limits) -> dict:
    """containers.create's arguments for `limits` (those not applied left out)."""
    config: dict = {"read_only": limits.read_only_root, "init": limits.init}
    if limits.read_only_root:
        config["tmpfs"] = dict(TMPFS)
    if limits.memory_bytes is not None:  # swap limit = memory limit: no swap beyond it
        config.update(mem_limit=limits.memory_bytes, memswap_limit=limits.memory_bytes)
    if limits.pids is not None:
        config["pids_limit"] = limits.pids
    return config


def _lend(path: Path, user: tuple[int, int]) -> None:
    # Only a root host runs containers as another uid than its own: give that uid the run folder.
    if os.getuid() == 0 and user[0] != 0:
        os.chown(path, *user)


def _reclaim(path: Path) -> None:
    if os.getuid() != 0:
        return
    for root, dirs, files in os.walk(path):
        for name in [*dirs, *files]:
            os.lchown(os.path.join(root, name), 0, 0)
    os.chown(path, 0, 0)


def _kill(container) -> None:
    from docker.errors import APIError

    try:
        container.kill()
    except APIError:
        pass  # it ended on its own meanwhile


def _pump_logs(container, log_path: Path, prefix: str = "    ") -> threading.Thread:
    """Copy the container's output into log.txt, echoing epoch lines like the local runner."""

    def pump() -> None:
        pending = b""
        with open(log_path, "ab") as log:
            for chunk in container.logs(stream=True, follow=True, stdout=True, stderr=True):
                log.write(chunk)
                log.flush()
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    if line.startswith(b"epoch "):
                        sys.stdout.write(prefix + line.decode(errors="replace") + "\n")
                        sys.stdout.flush()

    thread = threading.Thread(target=pump, daemon=True)
    thread.start()
    return thread


def _cuda_of(image) -> str | None:
    return (image.labels or {}).get(f"{images.LABEL_PREFIX}cuda") or None


def host_gpu(docker_client, gpus: tuple[GpuSlot, ...] = ()) -> preflight.HostGpu:
    """What the engine and the host's driver offer, for the GPU pre-flight: the GPUs in `gpus`
    (those the campaign uses; all when empty)."""
    info = docker_client.info()
    runtime = "nvidia" in (info.get("Runtimes") or {}) or bool(info.get("CDISpecDirs"))
    return preflight.host_gpu(runtime, gpus)


class DockerRunner:
    """Builds or reuses each framework's image, and runs each run in its own container."""

    name = "docker"

    def __init__(self, device: str = "cpu", era: str = "current", docker_client=None,
                 gpus: tuple[GpuSlot, ...] = (), data_root: Path | None = None, limits: Limits | None = None) -> None:
        self.device, self.era, self.gpus = device, era, tuple(gpus)
        self.data_root, self.limits = data_root, limits or container_limits()
        self.client = docker_client or images.client()
        self._images: dict[str, object] = {}
        self._running: set = set()  # containers in flight, for abort()
        self._lock = threading.Lock()

    def prepare(self, framework: str) -> Environment:
        """Build (first use) or reuse the image; for GPU campaigns run the pre-flight; return its id and digest,
        and the bounds its runs get."""
        spec = images.ImageSpec(framework, self.era, "gpu" if self.device == "gpu" else "cpu")
        image = images.build(self.client, spec, images.base_image(self.client, self.era))
        if self.device == "gpu":
            preflight.check(host_gpu(self.client, self.gpus), _cuda_of(image), f"image {images.tag(spec, None)}",
                            preflight.gpu_build(framework, self.era))
        self._images[framework] = image
        return Environment(image.id, images.digest(image), limits=self.limits.record())

    def abort(self) -> None:
        """Kill every container this runner has in flight (the campaign was stopped)."""
        with self._lock:
            running = list(self._running)
        for container in running:
            _kill(container)

    def launch(self, request: dict, run_dir: Path, timeout_s: float | None,
               gpus: tuple[GpuSlot, ...] = ()) -> Outcome:
        """Run one container to completion, given exactly `gpus` for a GPU run; kill it on timeout or
        when the campaign is stopped."""
        if request["framework"] not in self._images:
            raise UsageError(f"no image prepared for {request['framework']}", "call prepare() before launch()")
        user = container_user()
        _lend(run_dir, user)
        container = self.client.containers.create(**container_config(request, run_dir, user, gpus, self.data_root))
        with self._lock:
            self._running.add(container)
        log = None
        try:
            container.start()
            log = _pump_logs(container, run_dir / schema.LOG_FILE, echo_prefix(gpus))
            try:
                status = container.wait(timeout=timeout_s)["StatusCode"]
            except Exception as exc:  # requests' ReadTimeout: the run outlived its limit
                if "timed out" not in str(exc).lower() and "timeout" not in type(exc).__name__.lower():
                    raise
                _kill(container)
                container.wait()
                return Outcome(-9, timed_out=True)
            # A process killed by a signal exits 128 + signal in a container; the local runner sees -signal.
            return Outcome(-(status - 128) if status > 128 else status)
        except BaseException:
            _kill(container)  # Ctrl-C or an error in the campaign: take the run down with us
            raise
        finally:
            with self._lock:
                self._running.discard(container)
            if log is not None:
                log.join(timeout=10)
            container.remove(force=True)
            _reclaim(run_dir)
