"""Why a run failed when it wrote no run.json: one mapping for the host and a Kubernetes pod."""

import pytest

from bench import failures
from campaign.execute import failure_of
from campaign.runners import Outcome

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
