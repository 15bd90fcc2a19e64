"""End to end with real training: a killed campaign resumes; the demo produces its report."""

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench import schema

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def _synthetic(root: Path, *datasets: str) -> None:
    subprocess.run([sys.executable, "-m", "data", "synthetic", "--root", str(root), "--datasets", *datasets],
                   cwd=REPO, check=True)


def _tree_digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_killed_campaign_resumes_only_missing_runs(tmp_path):
    _synthetic(tmp_path / "data", "mnist")
    results = tmp_path / "results"
    cmd = [sys.executable, "-m", "campaign", "run", "--frameworks", "pytorch", "--workloads", "cnn-mnist",
           "--profile", "smoke", "--repeats", "3", "--data", "synthetic", "--data-root", str(tmp_path / "data"),
           "--results", str(results), "--campaign", "kill", "--threads", "1"]
    proc = subprocess.Popen(cmd, cwd=REPO, start_new_session=True, stdout=subprocess.PIPE, text=True)
    cdir = results / "kill"
    deadline = time.time() + 600
    while time.time() < deadline:  # wait until one run is done and the next is under way
        done = list(schema.iter_run_dirs(cdir))
        if done and list(cdir.glob("*.partial/monitor.csv")):
            break
        assert proc.poll() is None, "campaign ended before it could be killed"
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    finished = {d.name: _tree_digest(d) for d in schema.iter_run_dirs(cdir)}
    assert 1 <= len(finished) < 3
    assert list(cdir.glob("*.partial")), "the interrupted run must stay unpublished"

    out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=900, check=True).stdout
    assert out.count("done earlier (ok), skipped") == len(finished)
    assert out.count(": running") == 3 - len(finished)
    runs = list(schema.iter_run_dirs(cdir))
    assert len(runs) == 3 and not list(cdir.glob("*.partial"))
    for name, digest in finished.items():
        assert _tree_digest(cdir / name) == digest, f"completed run {name} was altered"
    for run in runs:
        rec = schema.read_run(run)
        assert rec["status"] == "ok", rec["failure"]
        assert len(schema.read_metrics(run)) == rec["spec"]["training"]["epochs"]
        assert list(schema.read_monitor(run)), "no monitor samples"


def test_demo_writes_the_report():
    # The local runner: the docker one (RUNNER=auto picks it where an engine answers) has its own tests.
    subprocess.run(["make", "--no-print-directory", "demo", "RUNNER=local"], cwd=REPO, check=True, timeout=3000)
    runs = [schema.read_run(d) for d in schema.iter_run_dirs(REPO / "results" / "demo")]
    cells = {(r["config"]["framework"], r["config"]["workload"], r["config"]["repeat"]) for r in runs}
    assert cells >= {(f, w, k) for f in ("pytorch", "keras") for w in ("cnn-mnist", "lstm-imdb") for k in (1, 2)}
    assert all(r["status"] == "ok" for r in runs), [r["failure"] for r in runs]
    html = (REPO / "reports" / "demo" / "report.html").read_text()
    assert "data:image/png;base64," in html and "SYNTHETIC" in html.upper()
    # Artifacts meant to be shared name no folder of this machine: the data relative to the data root, the
    # environment's own libraries relative to it (a checkout in a home folder would name its user).
    for run_dir in schema.iter_run_dirs(REPO / "results" / "demo"):
        for name in ("request.json", "run.json"):
            assert str(REPO) not in (run_dir / name).read_text(), (run_dir, name)
