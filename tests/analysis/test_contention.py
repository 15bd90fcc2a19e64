"""Contention: runs whose training absorbed other load are marked in the report, with the verdicts they touch.

The fast tests read hand-made campaigns (tests/runfactory.py: the figures are chosen, so the expected
cells are computed by hand); the slow one puts a real CPU load beside a real PyTorch run through the kit.
"""

from __future__ import annotations

import copy
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from analysis import analyze
from analysis.contention import (
    CONTENDED_CPU_MEAN_PCT,
    CONTENDED_CPU_SHARE_PCT,
    NOT_RECORDED,
    assess,
    contended_runs,
)
from analysis.document import render_markdown
from analysis.sections.contention import contention_section
from analysis.stats import format_number
from bench import prepared, schema
from bench import request as run_request
from campaign import specs
from tests.analysis.reading import read_csv, report_context
from tests.campaign.scriptrunner import prepared_mnist
from tests.runfactory import make_run

REPO = Path(__file__).resolve().parents[2]


def _section_md(campaign: Path, out: Path) -> str:
    return render_markdown(contention_section(report_context(campaign, out)))


def _table_rows(md: str) -> dict[str, list[str]]:
    """The contention table's rows by their run id (the first cell's link text)."""
    rows = {}
    for line in md.splitlines():
        if line.startswith("| [") and "contended" in line:
            cells = [c.strip() for c in line.strip("|").split(" | ")]
            rows[cells[0][1:cells[0].index("]")]] = cells
    return rows


def test_a_run_above_the_cpu_threshold_is_marked_with_its_figures_and_the_verdicts_it_touches(tmp_path):
    campaign = tmp_path / "results" / "c"
    # Two frameworks on one workload, so the time and resource claims (4, 5) have a group to judge.
    busy = make_run(campaign, "pytorch", "cnn-mnist", 1, training_time=203.0, other=(60.0, 70.0, 80.0))
    make_run(campaign, "pytorch", "cnn-mnist", 2, training_time=10.0, other=(2.0, 4.0, 0.0))
    make_run(campaign, "tensorflow", "cnn-mnist", 1, training_time=12.0, other=(1.0, 1.0, 1.0))
    make_run(campaign, "tensorflow", "cnn-mnist", 2, training_time=11.0)  # an older kit: no column
    md = _section_md(campaign, tmp_path / "report")

    rows = _table_rows(md)
    assert list(rows) == [busy.name]
    # 60+70+80 % of a core over three 1 s samples = 2.1 CPU s; on 2 cores that is 2.1 / 6 = 35 %,
    # a mean of 70 % of one core.
    run, framework, workload, device, train_s, other_s, share, mean, gpu, why = rows[busy.name]
    assert (framework, workload, device, train_s) == ("pytorch", "cnn-mnist", "cpu", "203")
    assert (other_s, share, mean, gpu) == ("2.10", "35.0", "70.0", "—")
    assert f"35.0 % of the machine > {CONTENDED_CPU_SHARE_PCT:g} %" in why
    assert "3 of 4 runs recorded it; 1 is contended" in md
    assert f"Contention {NOT_RECORDED} for 1 run " in md and "tensorflow-cnn-mnist-cpu-r2" in md

    verdicts = [line for line in md.splitlines() if line.startswith("- claim ")]
    touched = {line.split()[2] for line in verdicts}
    # Claims 4 and 5 compare training times (and CPU use) across the two frameworks with this run in them; claim 8
    # fits its epoch times; claim 18 ranks the CNNs' CPU use. Claim 1 (accuracy) used it too, but reads no timing;
    # Shi-3 (fastest everywhere) needs two groups, and an insufficient-data verdict rests on no figure. Wu-1 fits
    # epoch times too, but only of Wu's workloads (studies/wu/study.toml scopes Wu et al.'s claims:
    # analysis.sections.claims.claim_scopes), and cnn-mnist is DLBench's (its spec's study).
    assert touched == {"4", "5", "8", "18"}, verdicts
    assert all(busy.name in line for line in verdicts)


def test_runs_below_the_thresholds_or_not_recorded_are_not_marked(tmp_path):
    campaign = tmp_path / "results" / "c"
    make_run(campaign, "pytorch", "cnn-mnist", 1, other=(19.0, 20.0, 21.0))  # 10.0 %: not above
    make_run(campaign, "pytorch", "cnn-mnist", 2)
    md = _section_md(campaign, tmp_path / "report")
    assert _table_rows(md) == {} and "0 are contended" in md
    assert "1 of 2 runs recorded it" in md and "rest on contended runs" not in md


def test_another_process_on_a_gpu_runs_gpu_marks_it_but_not_a_cpu_run(tmp_path):
    campaign = tmp_path / "results" / "c"
    gpu_run = make_run(campaign, "pytorch", "cnn-mnist", 1, device="gpu", gpu=(90.0, 95.0, 97.0),
                       other=(1.0, 1.0, 1.0), gpu_others=(0, 2, 1))
    make_run(campaign, "pytorch", "cnn-mnist", 2, other=(1.0, 1.0, 1.0), gpu_others=(1, 1, 1))
    rows = _table_rows(_section_md(campaign, tmp_path / "report"))
    assert list(rows) == [gpu_run.name]
    assert rows[gpu_run.name][8] == "2" and "2 other processes on its GPU" in rows[gpu_run.name][9]


def test_thresholds_on_the_share_of_the_machine_and_on_cores_taken():
    row = {"run_id": "r", "device": "cpu", "other_cpu_share_pct": 5.0, "other_cpu_mean_pct": 80.0}
    # 80 % of a core is 5 % of a 16-core machine: below the share threshold, above the per-core one.
    assert assess(row).reasons == (f"other CPU 80 % of a core > {CONTENDED_CPU_MEAN_PCT:g} %",)
    assert not assess(dict(row, other_cpu_mean_pct=CONTENDED_CPU_MEAN_PCT)).contended
    assert assess(dict(row, other_cpu_share_pct=None)) is None  # not recorded: neither quiet nor contended
    assert [c.row["run_id"] for c in contended_runs([row, dict(row, run_id="q", other_cpu_mean_pct=3.0)])] == ["r"]


# --- A real load beside a real run ---------------------------------------------------------

# A busy loop pinned to core 0 that appends "<unix time> <its own CPU seconds>" ten times a second,
# so the test knows how much CPU the load took over any window.
BUSY = ("import os, sys, time\nos.sched_setaffinity(0, {0})\nout = open(sys.argv[1], 'w', buffering=1)\n"
        "while True:\n    t = time.time()\n    while time.time() - t < 0.1: pass\n"
        "    out.write(f'{time.time()} {time.process_time()}\\n')\n")
EPOCHS = 6  # cnn-mnist on 600 examples, one thread: ~1 s an epoch on a quiet machine, several samples


def _cpu_between(log: Path, t0: float, t1: float) -> float:
    """CPU seconds the busy loop used between t0 and t1, from its own log."""
    points = [tuple(map(float, line.split())) for line in log.read_text().splitlines() if line.count(" ") == 1]
    inside = [cpu for t, cpu in points if t0 <= t <= t1]
    return inside[-1] - inside[0] if len(inside) > 1 else 0.0


def _run(campaign: Path, data: Path, python: Path, repeat: int) -> Path:
    """One real PyTorch cnn-mnist run (one thread) through `python -m bench run`; its run folder."""
    spec = copy.deepcopy(specs.load("cnn-mnist", "smoke"))
    spec["training"]["epochs"] = EPOCHS
    req = run_request.make(
        framework="pytorch", era="current", workload="cnn-mnist", profile="smoke", spec=spec,
        data={"dataset": "mnist", "source": "synthetic", "arrays_sha256": prepared.read_meta(data)["arrays_sha256"],
              "path": str(data),
              "train_indices": None, "test_indices": None},
        device="cpu", threads=1, seed=repeat, repeat=repeat, campaign=campaign.name, runner="local",
        env_id="test-env")
    out = campaign / req["run_id"]
    run_request.write(out, req)
    proc = subprocess.run([str(python), "-m", "bench", "run", "--request", str(out / run_request.REQUEST_FILE),
                           "--out", str(out)], cwd=REPO, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    return out


def _quiet(seconds: float = 2.0) -> float:
    """The machine's busy share (percent of all cores) over the next seconds, measured outside the kit."""
    return psutil.cpu_percent(interval=seconds)


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="pins the load to a core (Linux)")
def test_a_cpu_load_beside_a_real_run_marks_it_contended_in_the_report(tmp_path):
    from images import envs

    python = envs.ensure_env("pytorch").python
    prepared_mnist(tmp_path / "data")
    campaign = tmp_path / "results" / "contention"
    log = tmp_path / "busy.log"
    busy = subprocess.Popen([sys.executable, "-c", BUSY, str(log)])
    try:
        time.sleep(0.5)
        loaded = _run(campaign, tmp_path / "data" / "prepared" / "mnist", python, 1)
    finally:
        busy.kill()
        busy.wait()
    background = _quiet()
    control = _run(campaign, tmp_path / "data" / "prepared" / "mnist", python, 2)

    record = schema.read_run(loaded)
    monitor, timing = record["monitor"], record["timing"]
    load_s = _cpu_between(log, timing["train_start_unix"], timing["train_end_unix"])
    assert load_s > 1.0, f"the load hardly ran ({load_s:.2f} CPU s in the training window)"
    # Whatever else the machine ran, the load's own CPU is part of what ran outside the run's tree
    # (less up to one sample's worth at each edge of the window).
    assert monitor["other_cpu_s"] >= 0.8 * load_s - 1.0, (monitor, load_s)

    out = tmp_path / "report"
    analyze(campaign, out)
    runs = {r["run_id"]: r for r in read_csv(out / "tables" / "runs.csv")}
    assert float(runs[loaded.name]["other_cpu_share_pct"]) == pytest.approx(monitor["other_cpu_share_pct"])
    rows = _table_rows((out / "report.md").read_text(encoding="utf-8"))
    assert loaded.name in rows
    assert rows[loaded.name][6] == format_number(monitor["other_cpu_share_pct"])  # as run.json has it
    control_share = schema.read_run(control)["monitor"]["other_cpu_share_pct"]
    # The report's mark follows the figure; and on a quiet machine the run without the load is not
    # contended (a machine busy before it started, as under a parallel CI job, cannot show that).
    assert (control.name in rows) == (control_share > CONTENDED_CPU_SHARE_PCT), (control_share, rows)
    if background < CONTENDED_CPU_SHARE_PCT / 2:
        assert control.name not in rows, (control_share, background)
