"""The sweep figures (analysis.figures.sweep_figure): a one-axis epoch-protocol sweep is drawn as time and accuracy
against the axis, and nothing is drawn without one (an iteration-protocol thread sweep is the Shi section's)."""

from __future__ import annotations

from pathlib import Path

from analysis import figures
from analysis.runs import load_campaign
from tests.analysis.shiruns import shi_cpu_campaign
from tests.analysis.wuruns import make_wu_run

PNG = b"\x89PNG\r\n\x1a\n"


def test_a_batch_sweep_is_drawn_and_only_the_axes_swept(tmp_path: Path) -> None:
    campaign = tmp_path / "wu-cpu"
    for batch, seconds, acc in ((50, 300.0, 0.95), (500, 120.0, 0.80), (5000, 90.0, 0.40)):
        make_wu_run(campaign, "tensorflow", "wu-tf-mnist", sweep={"batch_size": batch}, training_time=seconds,
                    accuracy=acc)
    make_wu_run(campaign, "tensorflow", "wu-tf-mnist")  # the baseline: no sweep, not on the figure
    rows = load_campaign(campaign).ok_rows
    drawn = figures.sweep_figure(rows, "batch_size", tmp_path / "out" / "sweep_batch_size.png")
    assert drawn is not None and drawn.path.read_bytes()[:8] == PNG
    assert "batch_size" in drawn.caption
    assert figures.sweep_figure(rows, "learning_rate", tmp_path / "out" / "lr.png") is None
    assert not (tmp_path / "out" / "lr.png").exists()


def test_an_iteration_protocol_thread_sweep_is_not_drawn(tmp_path: Path) -> None:
    campaign = tmp_path / "shi-cpu"
    shi_cpu_campaign(campaign, {"pytorch": {1: 1.0, 2: 0.5}})
    rows = load_campaign(campaign).ok_rows
    assert figures.sweep_figure(rows, "threads", tmp_path / "threads.png") is None
