"""Why a run failed when its process ended without writing run.json: the cause and message the host
records (campaign/execute.py) and a Kubernetes pod records (the pod's script runs this inside the
image), one mapping for both so they never drift apart.

Standard library only, CPython 3.6-clean (it runs inside paper-era images too).
"""

from pathlib import Path

from bench.schema import LOG_FILE

MESSAGE_LIMIT = 2000  # run.json's failure messages are kept short
# What most often sends SIGKILL, and where to see it, by where the run ran.
OOM_HINT_HOST = "the kernel's out-of-memory killer (see dmesg)"
OOM_HINT_POD = "the out-of-memory killer (see the pod's events)"


def failure(timed_out: bool, returncode: int, log_tail: str, oom_hint: str = OOM_HINT_HOST) -> dict:
    """run.json's failure {cause, message} for a process that ended without writing run.json:
    `timed_out` (stopped at its time limit), else `returncode` as Popen reports it (-N: killed by
    signal N), `log_tail` the end of its log (quoted for a crash), `oom_hint` what most likely sent
    a SIGKILL and where that shows (OOM_HINT_HOST, OOM_HINT_POD)."""
    if timed_out:
        cause, msg = "timeout", "the run exceeded its time limit and was stopped"
    elif returncode == -9:
        cause, msg = "killed", "killed by SIGKILL: often " + oom_hint
    elif returncode < 0:
        cause, msg = "killed", f"killed by signal {-returncode}"
    else:
        cause, msg = "crash", f"exit code {returncode} without a run.json; log ends: {log_tail}"
    return {"cause": cause, "message": msg[:MESSAGE_LIMIT]}


def returncode_of_status(status: int) -> int:
    """A shell's or a container's exit status as Popen's returncode: 128 + N (killed by signal N)
    becomes -N; any other status is kept."""
    return -(status - 128) if status > 128 else status


def log_tail(run_dir: Path, chars: int = 400) -> str:
    """The last `chars` characters of the run's log.txt on one line ('' when there is none)."""
    try:
        return (Path(run_dir) / LOG_FILE).read_text(errors="replace")[-chars:].replace("\n", " | ")
    except OSError:
        return ""
