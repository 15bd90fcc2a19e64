"""The report's claims section (analysis.sections.claims): the claims a campaign decides in one table, grouped
by study; one line per claim it cannot decide, naming the make target(s) whose campaigns would decide it
(Claim.decided_by); each claim's exact test in its own section after the detail tables."""

from __future__ import annotations

from pathlib import Path

import studies
from analysis.claims import NOT_IN_CAMPAIGN, NOT_RUNNABLE, Claim, ResultsTable, insufficient
from analysis.document import render_html, render_markdown
from analysis.sections.claims import claim_tests_section, claims_section
from campaign.study import experiments
from tests.analysis.reading import report_context
from tests.runfactory import make_run


def _claim(decided_by: tuple[str, ...]) -> Claim:
    return Claim("x", "S", "A claim.", lambda t: insufficient("why"), decided_by=decided_by)


def test_every_claim_names_make_targets_that_exist_or_is_not_runnable_yet() -> None:
    targets = experiments()
    for claim in studies.claims():
        assert set(claim.decided_by) <= set(targets), (claim.id, claim.decided_by)
        assert "demo" not in claim.decided_by  # the demo's synthetic data decides nothing about a paper
    # A claim without a target is one whose experiment no campaign of the kit holds: on any table its check
    # says so.
    empty = ResultsTable([])
    for claim in studies.claims():
        if not claim.decided_by:
            assert claim.check(empty).evidence.startswith(NOT_IN_CAMPAIGN), claim.id
    assert all(c.decided_by for c in studies.claims() if c.study == "DLBench")


def test_decided_by_text() -> None:
    assert _claim(("cpu-cnn",)).decided_by_text == "`make cpu-cnn`"
    assert _claim(("cpu-cnn", "gpu-cnn")).decided_by_text == "`make cpu-cnn` and `make gpu-cnn`, analysed together"
    assert _claim(()).decided_by_text == NOT_RUNNABLE


def _demo_like(campaign: Path) -> None:
    """keras and pytorch on cnn-mnist and lstm-imdb, 2 repeats, 2 epochs (as the demo's quick profile)."""
    for fw, seconds, acc in (("keras", 18.0, 0.90), ("pytorch", 12.0, 0.80)):
        for wl in ("cnn-mnist", "lstm-imdb"):
            for repeat in (1, 2):
                make_run(campaign, fw, wl, repeat, training_time=seconds + repeat, accuracy=acc,
                         curve=(acc - 0.05, acc))


def test_decided_claims_in_the_table_the_others_one_line_each(tmp_path: Path) -> None:
    campaign = tmp_path / "results" / "demo"
    _demo_like(campaign)
    blocks = claims_section(report_context(campaign, tmp_path / "out"))
    md = render_markdown(blocks)
    rows = [line.split(" | ")[0].removeprefix("| ") for line in md.splitlines()
            if line.startswith("| ") and not line.startswith("| claim |")]
    bullets = [line for line in md.splitlines() if line.startswith("- **")]
    undecided = [line.split("**")[1] for line in bullets]
    # Every claim is in exactly one of the two places, in claim order (so grouped by study).
    assert sorted(rows + undecided) == sorted(c.id for c in studies.claims())
    order = [c.id for c in studies.claims()]
    assert rows == sorted(rows, key=order.index) and undecided == sorted(undecided, key=order.index)
    # Two workloads with two frameworks each on CPU decide claims 1, 4, 5 and DLBench's CPU MNIST/IMDB findings 10, 13,
    # 16, 18; 2 epochs do not decide 8. Shi et al.'s
    # claims read only runs of its workloads (the spec's study), so DLBench's cnn-mnist and lstm-imdb decide no Shi-3.
    assert rows == ["1", "4", "5", "10", "13", "16", "18"]
    assert "insufficient data" not in md.split("### Claims this campaign cannot decide")[0].split("| claim |")[1]
    line = {b.split("**")[1]: b for b in bullets}
    assert line["2"] == ("- **2** DLBench: GPU shortens training time by about an order of magnitude on most "
                         "workloads. — decided by `make cpu-cnn` and `make gpu-cnn`, analysed together (this "
                         "campaign: no workload and framework with successful runs on both CPU and GPU).")
    assert "decided by `make cpu-cnn` (this campaign: no successful run with >= 3 epochs)." in line["8"]
    # Wu et al.'s claims read only runs of Wu's workloads: the line names the BLAS sweep and the runs left out.
    assert line["Wu-4"].endswith("— decided by `make wu-cpu-blas` (this campaign: needs TensorFlow CPU runs of one "
                                 "workload at blas=eigen and blas=onednn; runs of cnn-mnist, lstm-imdb (study "
                                 "dlbench) are not Wu et al.'s workloads: they do not count for its claims).")
    assert NOT_IN_CAMPAIGN not in md.split("### Claims this campaign cannot decide")[1]
    assert line["Shi-3"].endswith("— decided by `make shi-cpu` (this campaign: 0 (workload, device, threads) "
                                  "group(s) with >= 2 frameworks' time; needs >= 2; runs of cnn-mnist, lstm-imdb "
                                  "(study dlbench) are not Shi et al.'s workloads: they do not count for its claims).")
    assert f"This campaign decides 7 of the {len(studies.claims())} claim verdicts" in md
    assert "this campaign's runs are of dlbench: cnn-mnist, lstm-imdb), so this campaign cannot decide the claims " \
           "of " in md
    assert "## How each claim is tested" not in md  # its own section, after the detail tables
    assert render_html(blocks, "t").count('<span class="tag claim">') == len(studies.claims()) - 7


def test_a_claim_decided_in_one_era_only_is_listed_for_the_other(tmp_path: Path) -> None:
    campaign = tmp_path / "results" / "eras"
    _demo_like(campaign)
    make_run(campaign, "pytorch", "cnn-mnist", 1, era="paper", accuracy=0.9, training_time=20.0)
    md = render_markdown(claims_section(report_context(campaign, tmp_path / "out")))
    assert "| claim | study | era | statement |" in md
    claim1 = [line for line in md.splitlines() if line.startswith("| 1 | DLBench |")]
    assert len(claim1) == 1 and "| current |" in claim1[0]
    assert any(line.startswith("- **1** DLBench, paper era: ") for line in md.splitlines())
    # Undecided in both eras: one line, no era named.
    assert any(line.startswith("- **2** DLBench: GPU shortens") for line in md.splitlines())


def test_claim_tests_section_lists_every_test() -> None:
    md = render_markdown(claim_tests_section(None))  # type: ignore[arg-type]  # reads no context
    assert md.startswith("## How each claim is tested")
    for c in studies.claims():
        assert f"- {c.id} ({c.study}): {c.test}".replace("<", "\\<") in md, c.id  # Markdown escapes '<'
