"""The local runner: one virtual environment per framework, built from its hash-locked requirements
(images/envs.py), running the in-image payload (bench/) from this checkout."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
from pathlib import Path

from bench import schema
from campaign.requests import Environment
from campaign.runners import Outcome, entrypoint_args, tee_log
from images import envs

REPO = Path(__file__).resolve().parents[2]
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    # If the campaign process is killed (even with SIGKILL), its run must not live on as an
    # orphan that keeps writing into a folder the resumed campaign is about to redo.
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass


class LocalRunner:
    """Runs the entrypoint with the framework environment's Python, on this machine."""

    name = "local"

    def __init__(self, era: str = "current") -> None:
        self.era = era
        self._python: dict[str, Path] = {}

    def prepare(self, framework: str) -> Environment:
        """Build (first use) or reuse the framework's virtual environment; its identity is the lock sha256."""
        env = envs.ensure_env(framework, self.era)
        self._python[framework] = env.python
        return Environment(env.lock_sha256)

    def launch(self, request: dict, run_dir: Path, timeout_s: float | None) -> Outcome:
        """Start the entrypoint in its own process group; kill the whole group on timeout."""
        framework = request["framework"]
        python = self._python.get(framework) or envs.ensure_env(framework, self.era).python
        env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"}
        proc = subprocess.Popen(
            [str(python), "-m", "bench", *entrypoint_args(run_dir)],
            cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            start_new_session=True, preexec_fn=_die_with_parent,
        )
        log = tee_log(proc.stdout, run_dir / schema.LOG_FILE)
        try:
            return Outcome(proc.wait(timeout=timeout_s))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            return Outcome(proc.wait(), timed_out=True)
        except BaseException:
            # Ctrl-C or an error in the campaign: take the run down with us, then re-raise.
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
        finally:
            log.join(timeout=10)
            proc.stdout.close()
