"""Runners: how a run's entrypoint is launched. Both call `python -m bench run` with the same arguments.

A runner prepares a framework's environment once per campaign (returning its identity: the lock's
sha256 for a virtual environment, the image digest for a container) and launches single runs.
"""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol

from bench.errors import UsageError

RUNNERS = ("local", "docker")


@dataclass(frozen=True)
class Launch:
    """Everything a runner needs to start one run; argv() is the entrypoint's command line."""

    framework: str
    workload: str
    profile: str
    device: str
    seed: int
    repeat: int
    campaign: str
    run_id: str
    data_dir: Path
    out_dir: Path
    env_id: str
    threads: int | None = None

    def argv(self, data_dir: Path | None = None, out_dir: Path | None = None) -> list[str]:
        """Arguments after `python -m bench run`; paths may be remapped (e.g. container mounts)."""
        args = [
            "run", "--framework", self.framework, "--workload", self.workload,
            "--profile", self.profile, "--device", self.device, "--seed", str(self.seed),
            "--repeat", str(self.repeat), "--campaign", self.campaign, "--run-id", self.run_id,
            "--data", str(data_dir or self.data_dir), "--out", str(out_dir or self.out_dir),
            "--env-id", self.env_id,
        ]
        if self.threads:
            args += ["--threads", str(self.threads)]
        return args


@dataclass(frozen=True)
class Outcome:
    """How the launched process ended."""

    returncode: int
    timed_out: bool = False


class Runner(Protocol):
    """The contract every runner keeps."""

    name: str

    def prepare(self, framework: str) -> str:
        """Make the framework's environment ready; return its identity (lock sha256 or digest)."""

    def launch(self, launch: Launch, timeout_s: float | None) -> Outcome:
        """Run one entrypoint to completion (or timeout), its output going to out_dir/log.txt."""


def tee_log(stream: IO[bytes], log_path: Path) -> threading.Thread:
    """Copy a run's output into its log.txt, echoing epoch lines so long runs show progress."""

    def pump() -> None:
        with open(log_path, "ab") as log:
            for line in iter(stream.readline, b""):
                log.write(line)
                log.flush()
                if line.startswith(b"epoch "):
                    sys.stdout.write("    " + line.decode(errors="replace"))
                    sys.stdout.flush()

    thread = threading.Thread(target=pump, daemon=True)
    thread.start()
    return thread


def choose_auto() -> tuple[str, str]:
    """RUNNER=auto: ('docker', why) where a Docker engine answers, else ('local', why)."""
    from bench import images

    try:
        images.client()
    except UsageError as exc:
        return "local", f"{exc.problem}; the local runner uses virtual environments from the same locks"
    return "docker", "a Docker engine answers (RUNNER=local to use virtual environments instead)"


def get(name: str, device: str = "cpu") -> Runner:
    """The runner called `name` ('auto': docker where an engine answers, else local, saying which)."""
    if name == "auto":
        name, why = choose_auto()
        print(f"runner: {name} ({why})", flush=True)
    if name == "local":
        from bench.runners.local import LocalRunner

        return LocalRunner()
    if name == "docker":
        from bench.runners.docker import DockerRunner

        return DockerRunner(device=device)
    raise UsageError(f"unknown runner '{name}'", f"choose from: {', '.join(RUNNERS)} (RUNNER=...)")
