"""Runs in a system environment (RUNNER=system) are labelled as such and never averaged with runs in
the kit's images or locked environments."""

from __future__ import annotations

from pathlib import Path

from analysis import analyze
from analysis.runs import load_campaign
from analysis.summary import summarize
from bench.schema import read_run, write_run
from tests.analysis.reading import read_csv
from tests.runfactory import SYSTEM_SHA256, make_run

LABEL = ("system environment (not a kit image or lock): Python 3.11.7 (/usr/bin/python3), packages sha256 "
         f"{SYSTEM_SHA256[:12]} (pip freeze), pytorch 1.0 (no CUDA)")


def _campaign(root: Path) -> Path:
    """pytorch cnn-mnist twice in a locked environment (100 s, 110 s) and twice in the system one (50 s, 60 s)."""
    campaign = root / "results" / "mixed"
    for repeat, (local, system) in enumerate(((100.0, 50.0), (110.0, 60.0)), 1):
        make_run(campaign, "pytorch", "cnn-mnist", repeat, training_time=local, run_id=f"local-r{repeat}")
        make_run(campaign, "pytorch", "cnn-mnist", repeat, training_time=system, runner="system",
                 run_id=f"system-r{repeat}")
    return campaign


def test_system_runs_are_a_cell_of_their_own(tmp_path):
    cells = summarize(load_campaign(_campaign(tmp_path)).table)
    means = {c.key["runner"]: c.estimates["training_time_s"].mean for c in cells}
    assert means == {"local": 105.0, "system": 55.0}  # never the 80 s of all four pooled


def test_the_report_labels_system_runs(tmp_path):
    result = analyze(_campaign(tmp_path), tmp_path / "out")
    md = result.report_md.read_text(encoding="utf-8")
    header, environment = md.split("\n## ")[0], md.split("\n## Environment")[1].split("\n## ")[0]
    assert "not in a kit image or a locked environment" in header and f"{LABEL} (2 runs):" in header
    rows = [line for line in environment.splitlines() if line.startswith("| pytorch |")]
    assert len(rows) == 2
    assert any("| system |" in r and LABEL in r for r in rows)
    assert any("| local |" in r and "cd" * 32 in r and "system environment" not in r for r in rows)
    (summary,) = [p for p in result.tables if p.name == "summary.csv"]
    assert sorted(r["runner"] for r in read_csv(summary)) == ["local", "system"]


def test_a_campaign_mixing_system_environments_says_so(tmp_path):
    campaign = _campaign(tmp_path)
    other = campaign / "system-r2"
    run = read_run(other)
    run["environment"]["env_id"] = run["environment"]["system"]["packages_sha256"] = "6b" * 32  # a pip install later
    write_run(other, run)
    md = analyze(campaign, tmp_path / "out").report_md.read_text(encoding="utf-8")
    header = md.split("\n## ")[0]
    assert f"{LABEL} (1 runs):" in header and "packages sha256 6b6b6b6b6b6b (pip freeze)" in header
    assert "pytorch: runs of more than one system environment (the packages differ) share summary cells" in header
    assert "more than one system environment" not in analyze(_campaign(tmp_path / "one"), tmp_path / "o2") \
        .report_md.read_text(encoding="utf-8")
