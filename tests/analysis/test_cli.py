"""python -m analysis (analysis/__main__.py): the report folder stays where it belongs, and a report that cannot
be written is one line naming the path and the fix, with the reports already there kept."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from analysis.__main__ import main as cli_main
from tests.mountspace import MountSpace, digests
from tests.runfactory import make_run

REPO = Path(__file__).resolve().parents[2]
AGAIN = "then run the same command again (finished work is kept)"


def campaign(folder: Path) -> Path:
    """Two cnn-mnist runs of pytorch in folder."""
    for repeat in (1, 2):
        make_run(folder, "pytorch", "cnn-mnist", repeat)
    return folder


def analysis_env() -> dict:
    return {**os.environ, "PYTHONPATH": str(REPO), "MPLBACKEND": "Agg"}


def test_a_report_is_not_named_after_a_parent_folder(tmp_path, monkeypatch, capsys):
    # b68cc0f: --campaign results/.. wrote reports/.. (the folder holding reports/: the repository root).
    campaign(tmp_path)
    (tmp_path / "results").mkdir()
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    assert cli_main(["--campaign", "results/.."]) == 2
    assert capsys.readouterr().err == ("error: cannot name a report after the campaign folder 'results/..'; give the "
                                       "report folder with --out, or name the campaign folder itself (results/demo)\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_a_read_only_report_folder_is_one_line_and_the_report_there_is_kept(tmp_path):
    results = campaign(tmp_path / "results" / "demo")
    assert cli_main(["--campaign", str(results), "--out", str(tmp_path / "reports" / "demo")]) == 0
    with MountSpace() as mountspace:
        before = digests(tmp_path / "reports")
        make_run(tmp_path / "results" / "demo", "pytorch", "cnn-mnist", 3)  # something new to report
        mountspace.read_only(tmp_path / "reports")
        proc = mountspace.run(sys.executable, "-m", "analysis", "--campaign", "results/demo", "--out", "reports/demo",
                              cwd=tmp_path, env=analysis_env())
        assert proc.returncode == 2
        [line] = proc.stderr.splitlines()
        assert re.fullmatch(rf"error: reports/demo/\S+ is on a read-only file system; make it writable or work in a "
                            rf"writable copy, {re.escape(AGAIN)}", line), line
        assert digests(mountspace.path(tmp_path / "reports")) == before


def test_a_full_disk_under_the_reports_is_one_line_and_the_other_reports_are_kept(tmp_path):
    # A real 640 KiB file system: one report (about 470 KiB) fits, a second does not.
    with MountSpace() as mountspace:
        for name in ("one", "two"):
            campaign(tmp_path / "results" / name)
        (tmp_path / "reports").mkdir()
        mountspace.tmpfs(tmp_path / "reports", "640k")

        def analyse(name: str):
            return mountspace.run(sys.executable, "-m", "analysis", "--campaign", f"results/{name}", cwd=tmp_path,
                                  env=analysis_env())

        assert analyse("one").returncode == 0
        before = digests(mountspace.path(tmp_path / "reports" / "one"))
        proc = analyse("two")
        assert proc.returncode == 2
        [line] = proc.stderr.splitlines()
        assert re.fullmatch(rf"error: no space left on the device holding reports/two\S*; free some space there "
                            rf"\(df -h shows it\), {re.escape(AGAIN)}", line), line
        assert digests(mountspace.path(tmp_path / "reports" / "one")) == before
        assert not [p for p in mountspace.path(tmp_path / "reports").rglob("*") if p.name.endswith(".tmp")]

