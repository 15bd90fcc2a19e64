"""Can a Python run the host stages as it is (RUNNER=system)? One line when it cannot."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _check(python: str) -> subprocess.CompletedProcess:
    return subprocess.run([python, "-m", "campaign.hostcheck"], cwd=REPO, capture_output=True, text=True, timeout=120)


def test_the_host_tools_python_can(tmp_path):
    proc = _check(sys.executable)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""  # it has nvidia-ml-py too: no note


def test_a_bare_python_is_told_what_it_lacks(tmp_path):
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "bare")], check=True)
    python = str(tmp_path / "bare" / "bin" / "python")
    proc = _check(python)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        f"error: RUNNER=system runs the host stages on {python}, which lacks numpy, scipy, matplotlib, psutil, pandas; "
        "pip install numpy scipy matplotlib psutil pandas into it, point PYTHON at another Python, or use RUNNER=local"]
