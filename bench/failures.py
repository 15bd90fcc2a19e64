"""Why a run failed: the cause the entrypoint records for an exception (setup_cause()), and the cause and
message the host (campaign/execute.py) and a Kubernetes pod (the pod's script runs this inside the image)
record for a process that ended without writing run.json (failure()), one mapping for all of them so they
never drift apart.

The causes are of two kinds (bench/schema/runfields.py: RESULT_CAUSES, SETUP_CAUSES). A failure of the framework under
test is a result. A failure of the setup is not, and the next run of the campaign redoes it: the rule is
that the kit refusing the run (a UsageError raised in the entrypoint, which `python -m bench` ends with exit
status USAGE_EXIT and one line `error: ...`), a library the machine lacks, and anything that stops the run
before its data is loaded are setup failures; everything after, a result.

Standard library only besides bench.schema, CPython 3.6-clean (it runs inside paper-era images too).
"""

from pathlib import Path
from typing import Optional

from bench import blas_backends
from bench.errors import UsageError
from bench.schema import LOG_FILE

MESSAGE_LIMIT = 2000  # run.json's failure messages are kept short
# What most often sends SIGKILL, and where to see it, by where the run ran.
OOM_HINT_HOST = "the kernel's out-of-memory killer (see dmesg)"
OOM_HINT_POD = "the out-of-memory killer (see the pod's events)"


# bench.errors.run_cli's exit status for a UsageError, whose one line `error: <problem>; <fix>` ends the log.
USAGE_EXIT = 2
USAGE_MARK = "error: "
MISSING_LIBRARY, BAD_DATA, INVALID_SETTING = "missing-library", "bad-data", "invalid-setting"
# Where the entrypoint was when the run stopped (setup_cause()): loading the data, loading the framework,
# or training (the framework under test at work).
DATA, FRAMEWORK, TRAINING = "data", "framework", "training"
# The checks that stop a run for a library it lacks (a UsageError raised inside one is a missing library).
LIBRARY_CHECKS = (blas_backends.require_library,)
# How the dynamic loader says a shared library is absent (an OSError or ImportError loading a framework).
NO_SHARED_OBJECT = "cannot open shared object file"


def setup_cause(exc: BaseException, stage: str) -> Optional[str]:
    """The setup cause (schema.SETUP_CAUSES) of an exception that stopped a run at `stage` (DATA, FRAMEWORK,
    TRAINING), or None when it is the framework's own failure (a result)."""
    if _raised_in(exc, LIBRARY_CHECKS) or (isinstance(exc, (OSError, ImportError)) and NO_SHARED_OBJECT in str(exc)):
        return MISSING_LIBRARY
    if stage == DATA and not isinstance(exc, MemoryError):
        return BAD_DATA  # the framework has not run: the data could not be read or is not the planned data
    if isinstance(exc, UsageError):
        return INVALID_SETTING
    if stage == FRAMEWORK and isinstance(exc, ImportError):
        return MISSING_LIBRARY  # the environment cannot import its framework
    return None


def _raised_in(exc: BaseException, functions: tuple) -> bool:
    """Whether `exc` passed through one of `functions` (its traceback holds a frame of their code)."""
    codes = {f.__code__ for f in functions}
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code in codes:
            return True
        tb = tb.tb_next
    return False


def failure(timed_out: bool, returncode: int, log_tail: str, oom_hint: str = OOM_HINT_HOST) -> dict:
    """run.json's failure {cause, message} for a process that ended without writing run.json:
    `timed_out` (stopped at its time limit), else `returncode` as Popen reports it (-N: killed by
    signal N), `log_tail` the end of its log (quoted for a crash), `oom_hint` what most likely sent
    a SIGKILL and where that shows (OOM_HINT_HOST, OOM_HINT_POD). A process that exited USAGE_EXIT
    with its log ending in the one line of a UsageError was refused by the kit: a setup failure
    (invalid-setting), its message that line."""
    refusal = usage_line(log_tail) if returncode == USAGE_EXIT and not timed_out else None
    if timed_out:
        cause, msg = "timeout", "the run exceeded its time limit and was stopped"
    elif refusal is not None:
        cause, msg = INVALID_SETTING, refusal
    elif returncode == -9:
        cause, msg = "killed", "killed by SIGKILL: often " + oom_hint
    elif returncode < 0:
        cause, msg = "killed", f"killed by signal {-returncode}"
    else:
        cause, msg = "crash", f"exit code {returncode} without a run.json; log ends: {log_tail}"
    return {"cause": cause, "message": msg[:MESSAGE_LIMIT]}


def usage_line(log_tail: str) -> Optional[str]:
    """The `error: <problem>; <fix>` line a log (as log_tail() gives it) ends with, without its mark; None
    when its last line is not one."""
    lines = [line.strip() for line in log_tail.split(" | ") if line.strip()]
    if not lines or not lines[-1].startswith(USAGE_MARK):
        return None
    return lines[-1][len(USAGE_MARK):]


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
