"""Runners: how a run's entrypoint is launched. Every runner calls `python -m bench run` on the
run's request.json (bench/request.py), written into the run folder before the launch.

A runner prepares a framework's environment once per campaign (returning its identity: the lock's
sha256 for a virtual environment, the image id and digest for a container) and launches single
runs, each writing into its own run folder.
"""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol

from bench.errors import UsageError
from bench.request import REQUEST_FILE
from campaign.requests import Environment

RUNNERS = ("local", "docker")


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


class Runner(Protocol):
    """The contract every runner keeps."""

    name: str

    def prepare(self, framework: str) -> Environment:
        """Make the framework's environment ready; return its identity (lock sha256 or image id)."""

    def launch(self, request: dict, run_dir: Path, timeout_s: float | None) -> Outcome:
        """Run the request (already in run_dir/request.json) to completion or timeout, its output
        going to run_dir/log.txt."""


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
    from images import build

    try:
        build.client()
    except UsageError as exc:
        return "local", f"{exc.problem}; the local runner uses virtual environments from the same locks"
    return "docker", "a Docker engine answers (RUNNER=local to use virtual environments instead)"


def get(name: str, device: str = "cpu", era: str = "current") -> Runner:
    """The runner called `name` ('auto': docker where an engine answers, else local, saying which)."""
    if name == "auto":
        name, why = choose_auto()
        print(f"runner: {name} ({why})", flush=True)
    if name == "local":
        from campaign.runners.local import LocalRunner

        return LocalRunner(era=era)
    if name == "docker":
        from campaign.runners.docker import DockerRunner

        return DockerRunner(device=device, era=era)
    raise UsageError(f"unknown runner '{name}'", f"choose from: {', '.join(RUNNERS)} (RUNNER=...)")
