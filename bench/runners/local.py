"""The local runner: one virtual environment per framework, built from its hash-locked requirements."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
from pathlib import Path

from bench import envs, schema
from bench.runners import Launch, Outcome, tee_log

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

    def __init__(self) -> None:
        self._python: dict[str, Path] = {}

    def prepare(self, framework: str) -> str:
        """Build (first use) or reuse the framework's virtual environment; return the lock sha256."""
        env = envs.ensure_env(framework)
        self._python[framework] = env.python
        return env.lock_sha256

    def launch(self, launch: Launch, timeout_s: float | None) -> Outcome:
        """Start the entrypoint in its own process group; kill the whole group on timeout."""
        python = self._python.get(launch.framework) or envs.ensure_env(launch.framework).python
        env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"}
        launch.out_dir.mkdir(parents=True, exist_ok=True)
        proc = subprocess.Popen(
            [str(python), "-m", "bench", *launch.argv(), "--runner", self.name],
            cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            start_new_session=True, preexec_fn=_die_with_parent,
        )
        log = tee_log(proc.stdout, launch.out_dir / schema.LOG_FILE)
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
