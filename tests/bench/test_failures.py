"""Why a run failed when it wrote no run.json: one mapping for the host and a Kubernetes pod."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench import blas_backends, failures, request, schema
from bench.errors import UsageError
from campaign import plan
from campaign.execute import failure_of
from campaign.runners import Outcome
from tests.campaign.scriptrunner import ScriptRunner

REPO = Path(__file__).resolve().parents[2]

HOST_SIGKILL = "killed by SIGKILL: often the kernel's out-of-memory killer (see dmesg)"
POD_SIGKILL = "killed by SIGKILL: often the out-of-memory killer (see the pod's events)"


@pytest.mark.parametrize("timed_out, returncode, cause, message", [
    (True, -9, "timeout", "the run exceeded its time limit and was stopped"),
    (False, -9, "killed", HOST_SIGKILL),
    (False, -15, "killed", "killed by signal 15"),
    (False, 3, "crash", "exit code 3 without a run.json; log ends: boom | "),
])
def test_each_way_a_process_ends_has_its_cause_and_message(timed_out, returncode, cause, message):
    assert failures.failure(timed_out, returncode, "boom | ") == {"cause": cause, "message": message}
    # The host's adapter gives exactly the same.
    assert failure_of(Outcome(returncode, timed_out), "boom | ") == {"cause": cause, "message": message}


def test_a_pod_names_its_own_place_to_look_and_reads_shell_statuses():
    assert failures.failure(False, failures.returncode_of_status(137), "", failures.OOM_HINT_POD) == \
        {"cause": "killed", "message": POD_SIGKILL}
    assert [failures.returncode_of_status(s) for s in (0, 3, 124, 128, 130, 143)] == [0, 3, 124, 128, -2, -15]


def test_messages_are_kept_short_and_the_log_tail_is_one_line(tmp_path):
    assert len(failures.failure(False, 1, "x" * 5000)["message"]) == failures.MESSAGE_LIMIT
    assert failures.log_tail(tmp_path) == ""  # no log.txt
    (tmp_path / "log.txt").write_text("start\n" + "y" * 500 + "\nTraceback: boom\n")
    tail = failures.log_tail(tmp_path)
    # The last 400 characters of the log, its two line breaks among them shown as " | ".
    assert len(tail) == 400 + 2 * 2 and tail.endswith("y | Traceback: boom | ") and "start" not in tail


# --- The taxonomy: failures of the framework are results, failures of the setup are not -----------------

def test_a_process_the_kit_refused_is_a_setup_failure_with_its_one_line():
    line = "the request asks for BLAS backend 'mkl' but this environment lacks it; plan the run again"
    refused = failures.failure(False, 2, f"starting | error: {line} | ")
    assert refused == {"cause": "invalid-setting", "message": line}
    assert schema.failure_kind(refused) == schema.SETUP
    # Exit status 2 without the line is a crash, as is any other status; the time limit is a result.
    assert failures.failure(False, 2, "Traceback | boom | ")["cause"] == "crash"
    assert schema.failure_kind(failures.failure(True, -9, f"error: {line} | ")) == schema.RESULT
    assert [schema.failure_kind({"cause": c}) for c in ("nan", "oom", "timeout", "crash", "killed")] == ["result"] * 5
    assert schema.failure_kind(None) is None


def _raise(function, *args) -> BaseException:
    try:
        function(*args)
    except BaseException as exc:  # the real exception, its traceback included
        return exc
    raise AssertionError(f"{function.__name__} raised nothing")


def _fail(exc: BaseException):
    raise exc


def test_the_entrypoint_tells_the_setup_from_the_framework_by_where_the_run_stopped():
    from bench.entrypoint import classify_failure
    from bench.frameworks import NonFiniteLoss

    # The kit's own check of a library (here MKL's runtime, which this environment lacks).
    lacking = _raise(blas_backends.require_library, "theano", "mkl")
    assert classify_failure(lacking, failures.TRAINING) == "missing-library"
    gone = OSError("libquadmath.so.0: cannot open shared object file: No such file or directory")
    assert classify_failure(gone, failures.FRAMEWORK) == "missing-library"
    assert classify_failure(_raise(_fail, ImportError("No module named 'mxnet'")), failures.FRAMEWORK) == \
        "missing-library"
    # Anything before the data is loaded: the framework has not run.
    assert classify_failure(_raise(_fail, ValueError("cannot reshape array")), failures.DATA) == "bad-data"
    assert classify_failure(_raise(_fail, UsageError("x.npz has sha256 1", "prepare it again")), failures.DATA) == \
        "bad-data"
    assert classify_failure(_raise(_fail, UsageError("no such switch", "plan again")), failures.TRAINING) == \
        "invalid-setting"
    # The framework at work: results.
    assert classify_failure(_raise(_fail, RuntimeError("segfault-ish")), failures.TRAINING) == "crash"
    assert classify_failure(_raise(_fail, MemoryError()), failures.DATA) == "oom"
    assert classify_failure(_raise(_fail, NonFiniteLoss("loss is nan")), failures.TRAINING) == "nan"


def test_corrupt_prepared_data_is_a_setup_failure_not_a_crash_of_the_framework(tmp_path):
    subprocess.run([sys.executable, "-m", "data", "synthetic", "--root", str(tmp_path / "data"), "--datasets", "mnist"],
                   cwd=REPO, check=True, capture_output=True)
    runner = ScriptRunner("ok")
    runs = plan.plan(plan.Matrix(("pytorch",), ("cnn-mnist",), "cpu", "smoke", 1, "synthetic"), runner, "t",
                     tmp_path / "results" / "t", tmp_path / "data", threads=1)
    arrays = next((tmp_path / "data").rglob("arrays.npz"))
    arrays.write_bytes(arrays.read_bytes()[:1000])  # truncated
    out = tmp_path / "run"
    out.mkdir()
    request.write(out, runs[0].request)
    proc = subprocess.run([sys.executable, "-m", "bench", "run", "--request", str(out / request.REQUEST_FILE),
                           "--out", str(out), "--data", str(arrays.parent)], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=300)
    assert proc.returncode == 1, proc.stderr[-2000:]
    failure = schema.read_run(out)["failure"]
    assert failure["cause"] == "bad-data" and schema.failure_kind(failure) == schema.SETUP
    # bench/prepared.py's one line, naming the file (as the request names it) and the fix
    assert "arrays.npz has sha256 " in failure["message"] and "; prepare it again: " in failure["message"], failure
    # The run's log says it in that one line too, not with a traceback.
    assert "Traceback" not in proc.stderr and f"error: {failure['message']}" in proc.stderr.splitlines()
