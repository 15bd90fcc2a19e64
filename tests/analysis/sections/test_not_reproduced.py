"""Every row of every published file (each study's reference/SOURCES.md names them) is either compared somewhere or
listed as published, not comparable because ...; and the report's 'not reproduced' section says which."""

from __future__ import annotations

from pathlib import Path

import studies
from analysis.document import render_markdown
from analysis.published import BY_CLAIMS
from analysis.sections.not_reproduced import REFERENCE_TABLE, not_reproduced_section, reading, row_rules
from tests.analysis.reading import report_context
from tests.analysis.shiruns import make_shi_run
from tests.runfactory import make_run


def test_every_published_row_is_compared_or_given_a_reason() -> None:
    readings = reading(studies.sources())
    assert {r.file for r in readings} == {s.file for s in studies.sources()}
    silent = [f"{r.file} line {r.line}: {r.row}" for r in readings if not (r.compared_by or r.reason)]
    assert not silent, ("add a ROW_RULES entry to the study's published.py (where it is compared, or why not) for:\n"
                        + "\n".join(silent))
    assert all(bool(rule.compared_by) != bool(rule.reason) for rule in row_rules())  # exactly one of the two


def test_dlbench_rows_name_their_reader_or_reason() -> None:
    by_metric: dict[tuple[str, str], set[str]] = {}
    for r in reading(studies.sources(studies.folder("dlbench"))):
        key = (r.file, "frcnn" if r.row.get("arch") == "frcnn" else r.row.get("metric", ""))
        by_metric.setdefault(key, set()).add(r.compared_by or r.reason)
    # The 42 voc2012 rows: frcnn-voc2012's, read as every other workload's (by the table or the claims).
    assert REFERENCE_TABLE in by_metric[("dlbench.csv", "frcnn")]
    assert all(text == REFERENCE_TABLE or text.startswith(BY_CLAIMS) for text in by_metric[("dlbench.csv", "frcnn")])
    assert by_metric[("dlbench.csv", "test_accuracy")] == {REFERENCE_TABLE}
    for metric in ("peak_accuracy_epoch", "peak_accuracy", "gpu_speedup_over_cpu"):
        assert all(text.startswith(BY_CLAIMS) for text in by_metric[("dlbench.csv", metric)]), metric
    # from_original_repos.csv: the authors' DLBench logs are compared; its notes and other studies' rows say why not.
    assert by_metric[("from_original_repos.csv", "test_acc|wall")] == {REFERENCE_TABLE}
    assert "notes do not say which epochs" in by_metric[("dlbench.csv", "pearson_epochs_accuracy")].pop()
    assert {("status", "truncated"), ("warning", "logs"), ("test_acc", "ilkarman-5"),
            ("minutes", "DenseNet-121")} <= {(m, word) for (f, m), texts in by_metric.items() for text in texts
                                             for word in ("truncated", "logs", "ilkarman-5", "DenseNet-121")
                                             if f == "from_original_repos.csv" and word in text}
    gtdlbench = [r for r in reading(studies.sources(studies.folder("dlbench"))) if r.row.get("study") == "Wu/Liu"]
    assert len(gtdlbench) == 2 and all(r.compared_by.startswith(BY_CLAIMS) for r in gtdlbench)


def _section(campaign: Path, tmp_path: Path) -> str:
    return render_markdown(not_reproduced_section(report_context(campaign, tmp_path / "out")))


def test_the_section_names_why_a_dlbench_number_is_not_compared(tmp_path: Path) -> None:
    campaign = tmp_path / "results" / "demo"
    make_run(campaign, "pytorch", "cnn-mnist", 1)
    md = _section(campaign, tmp_path)
    assert "metric not computed by this analysis yet" not in md
    # CPU MNIST's peak epoch (Sec 5.4) is read by the claims, not the reference table.
    assert any("peak_accuracy_epoch" in line and BY_CLAIMS in line for line in md.splitlines())
    # Not run in this campaign; frcnn-voc2012 exists, so no rule says the kit has no such workload.
    (voc,) = [line for line in md.splitlines() if line.startswith("- gpu frcnn/voc2012:")]
    assert voc.endswith(")")
    assert "| from_original_repos.csv | line 40 | — | a status note" in md


def test_a_shi_campaign_lists_no_dlbench_number(tmp_path: Path) -> None:
    campaign = tmp_path / "results" / "shi-cpu"
    make_shi_run(campaign, "pytorch", 0.5, threads=1)
    md = _section(campaign, tmp_path)
    assert "dlbench.csv" not in md and "voc2012" not in md and "peak_accuracy" not in md
