"""The report's seconds-per-mini-batch table: every iteration-protocol cell's mean, median and spread of the
measured mini-batches, with the warm-up shown apart and left out of them; nothing for epoch-protocol runs."""

from __future__ import annotations

from pathlib import Path

from analysis.document import render_markdown
from analysis.sections.minibatches import HEADING, minibatches_section
from tests.analysis.reading import report_context
from tests.analysis.sections.test_claims import _demo_like
from tests.analysis.shiruns import make_shi_run


def _md(campaign: Path, tmp_path: Path) -> str:
    return render_markdown(minibatches_section(report_context(campaign, tmp_path / "out")))


def test_the_warm_up_is_shown_apart_and_left_out_of_the_figures(tmp_path: Path) -> None:
    campaign = tmp_path / "results" / "shi-cpu"
    # Each run's warm-up mini-batches take twice its measured ones (tests/analysis/shiruns.py).
    for repeat, seconds in ((1, 0.5), (2, 0.7)):
        make_shi_run(campaign, "pytorch", seconds, threads=1, repeat=repeat)
    make_shi_run(campaign, "mxnet", 0.25, threads=2)
    md = _md(campaign, tmp_path)
    assert md.startswith(f"## {HEADING}")
    rows = {line.split(" | ")[1]: line for line in md.splitlines() if line.startswith("| fcn-r-mnist |")}
    # sweep, runs, measured per run, mean, median, std, p5 - p95, warm-up s per mini-batch
    cells = {fw: line.split(" | ")[3:11] for fw, line in rows.items()}
    assert cells["pytorch"][:4] == ["threads=1", "2", "3", "0.6000"]
    assert cells["mxnet"][:4] == ["threads=2", "1", "3", "0.2500"]
    assert cells["pytorch"][4] == "0.6000" and cells["pytorch"][6:] == ["0.5000 – 0.7000", "1.200"]
    assert cells["mxnet"][6:] == ["0.2500 – 0.2500", "0.5000"]
    assert all(float(c[5]) < 1e-9 for c in cells.values())  # every measured mini-batch of a run takes the same


def test_epoch_protocol_campaigns_have_no_such_table(tmp_path: Path) -> None:
    _demo_like(tmp_path / "results" / "demo")
    assert _md(tmp_path / "results" / "demo", tmp_path).strip() == ""
