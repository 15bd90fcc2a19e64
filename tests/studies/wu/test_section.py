"""The report's Wu et al. section (studies/wu/section.py): the study's tables (studies/wu/reference/wu2019.csv) beside
hand-made runs of its workloads (tests/analysis/wuruns.py); every expected cell is worked out by hand below."""

from __future__ import annotations

from pathlib import Path

from analysis.document import render_markdown
from studies.wu import tables as wu
from studies.wu.section import wu_section
from tests.analysis.reading import read_csv, report_context
from tests.analysis.wuruns import make_wu_run
from tests.runfactory import make_run


def _md(campaign: Path, out: Path) -> str:
    return render_markdown(wu_section(report_context(campaign, out)))


def _part(md: str, heading: str) -> str:
    """The text under a '### ' heading, up to the next one."""
    return md.split(f"### {heading}", 1)[1].split("\n### ", 1)[0]


def _rows(text: str) -> list[list[str]]:
    """The cells of every table row in the text (header and rule left out)."""
    rows = [[c.strip() for c in line.strip().strip("|").split(" | ")] for line in text.splitlines()
            if line.startswith("| ")]
    return [r for r in rows if not r[0].startswith("---") and r[0] not in ("source", "batch", "learning rate",
                                                                              "threads", "asked")]


def test_no_section_without_runs_of_wus_workloads(tmp_path: Path) -> None:
    make_run(tmp_path / "c", "pytorch", "cnn-mnist", 1)
    assert wu_section(report_context(tmp_path / "c", tmp_path / "out")) == []


def test_every_workload_maps_to_one_of_the_studys_models_and_the_tables_are_mnist() -> None:
    assert {m.workload for m in wu.models() if m.workload} == {"wu-tf-mnist", "wu-tf-cifar10", "wu-theano-lenet",
                                                               "wu-theano-cifar10"}
    assert all(m.note.startswith("not in the kit") for m in wu.models() if m.workload is None)
    # MNIST's training sets: 55,000 (TensorFlow), 50,000 (Theano), 60,000 (Caffe, Torch7); 18.18 epochs of 20,000
    # mini-batches of 50 is 55,006 images (18.18 rounds 18.1818).
    for p in wu.published():
        assert 49_900 < p.iterations * p.batch / p.epochs < 60_100, p
    assert [p.table for p in wu.published_for("wu-theano-lenet", wu.BATCH_TABLES)] == [18, 18, 18]
    assert wu.published_for("wu-tf-cifar10", wu.BASELINE_TABLES) == []


def test_baseline_beside_tables_10_and_11(tmp_path: Path) -> None:
    c = tmp_path / "c"
    make_wu_run(c, "theano", "wu-theano-lenet", training_time=200.0, eval_time=6.0, cpu_split=(40.0, 20.0, 1.0),
                loaded="openblas")
    make_wu_run(c, "tensorflow", "wu-tf-cifar10", training_time=50.0)
    make_wu_run(c, "theano", "wu-theano-lenet", sweep={"batch_size": 50}, training_time=999.0)  # not the baseline
    part = _part(_md(c, tmp_path / "out"), "Baseline: Tables 10 and 11")
    rows = _rows(part)
    # Table 10, Theano with OpenBLAS: 11,555.43 s -> '11,555' (3 significant digits, none after the point), test 4.49
    # s, 99.08 %, CPU 41.16 / 44.33 / 0.00 / 85.49 -> '41.2 / 44.3 / 0 / 85.5', memory 1,621.72 / 4,062.09.
    assert ["Table 10, Server-1 (Xeon E5-1620, 4 cores)", "theano", "openblas", "11,555", "4.49", "99.08",
            "41.2 / 44.3 / 0 / 85.5", "1,622 / 4,062", "—"] in rows
    assert sum(r[0].startswith("Table 1") for r in rows) == 4  # Tables 10 and 11, OpenBLAS and MKL each
    kit = {r[1]: r for r in rows if r[0].startswith("kit")}  # one run each: theano, tensorflow
    # The kit: 200 s; one test pass 6.0 s over 3 epochs = 2.00 s; 0.98 -> 98.00 %; CPU 40 + 20 + 1 = 61 %;
    # memory the factory's 500, 600, 700 MB samples: mean 600, peak 700. The batch-sweep run is not here.
    assert kit["theano"][:8] == ["kit, cpu (current era, paper profile, real data)", "theano", "openblas", "200",
                                 "2.00", "98.00", "40.0 / 20.0 / 1.00 / 61.0", "600 / 700"]
    assert "theano-wu-theano-lenet-r1" in kit["theano"][8] and "999" not in part
    # GTDLBench: Theano's MNIST default on Server-1's GPU (560.04 s, 0.19 s, 99.05 %); TensorFlow's CIFAR-10 default
    # on its CPU (119,102.62 s, 2.69 s, 87.00 %) and GPU. The run's CPU split not recorded -> '—'.
    assert ["GTDLBench, Server-1 GPU", "theano", "—", "560", "0.190", "99.05", "—", "—", "—"] in rows
    assert ["GTDLBench, Server-1 CPU", "tensorflow", "—", "119,103", "2.69", "87.00", "—", "—", "—"] in rows
    assert "`wu-tf-cifar10` (tensorflow's default CIFAR-10 model)." in part
    assert kit["tensorflow"][2:4] == ["not recorded", "50.0"] and kit["tensorflow"][6] == "—"


def test_batch_sweep_beside_tables_15_and_22_as_ratios(tmp_path: Path) -> None:
    c = tmp_path / "c"
    for batch, seconds, acc in ((50, 100.0, 0.99), (500, 80.0, 0.985), (5000, 60.0, 0.95)):
        make_wu_run(c, "tensorflow", "wu-tf-mnist", sweep={"batch_size": batch}, training_time=seconds, accuracy=acc)
    rows = {r[0]: r for r in _rows(_part(_md(c, tmp_path / "out"), "Batch size"))}
    assert list(rows) == ["50", "500", "5000", "50000"]
    # Table 15 (base: batch 50, TensorFlow's default, 1,114.34 s): 986.52 / 1,114.34 = 0.885; 937.37 / 1,114.34 =
    # 0.841; 1,179.68 / 1,114.34 = 1.059. Table 22 at 500: CPU 80.30 / 6.30 / 0.01 / 86.61, memory 764.61 / 6,204.89.
    # The kit (base: its batch-50 time, 100 s): 80 / 100 = 0.80, 60 / 100 = 0.60.
    assert rows["50"][1:4] == ["18.18", "1,114 (1.00)", "99.28"] and rows["50"][6:8] == ["100 (1.00)", "99.00"]
    assert rows["500"][1:8] == ["18.18", "987 (0.89)", "98.65", "80.3 / 6.30 / 0.0100 / 86.6", "765 / 6,205",
                                "80.0 (0.80)", "98.50"]
    assert rows["5000"][2:4] == ["937 (0.84)", "95.89"] and rows["5000"][6:8] == ["60.0 (0.60)", "95.00"]
    assert rows["50000"][2] == "1,180 (1.06)" and rows["50000"][6] == "not run"


def test_learning_rate_sweep_beside_table_21s_matching_rows(tmp_path: Path) -> None:
    c = tmp_path / "c"
    make_wu_run(c, "tensorflow", "wu-tf-mnist", sweep={"learning_rate": 1e-4}, training_time=100.0, accuracy=0.99)
    make_wu_run(c, "tensorflow", "wu-tf-mnist", sweep={"learning_rate": 1e-3}, training_time=110.0, accuracy=0.97)
    make_wu_run(c, "tensorflow", "wu-tf-mnist", sweep={"learning_rate": 1e-2}, training_time=105.0, accuracy=0.11)
    rows = {r[0]: r for r in _rows(_part(_md(c, tmp_path / "out"), "Learning rate"))}
    # Table 21 at batch 50 and Table 10's 20,000 iterations: 1e-4 68.51 s, 99.22 %; 1e-3 107.91 s (107.91 / 68.51 =
    # 1.575), 99.26 %; no 1e-2 row there (its 1e-2 row is at batch 5,000). The kit: 110 / 100, 105 / 100.
    assert rows["0.0001"][1:5] == ["68.5 (1.00)", "99.22", "100 (1.00)", "99.00"]
    assert rows["0.001"][1:5] == ["108 (1.58)", "99.26", "110 (1.10)", "97.00"]
    assert rows["0.01"][1:5] == ["—", "—", "105 (1.05)", "11.00"]


def test_threads_and_blas_sweeps(tmp_path: Path) -> None:
    c = tmp_path / "c"
    for n, seconds in ((1, 100.0), (2, 60.0), (4, 80.0)):
        make_wu_run(c, "theano", "wu-theano-lenet", sweep={"threads": n}, training_time=seconds, loaded="openblas")
    make_wu_run(c, "tensorflow", "wu-tf-mnist", sweep={"blas": "eigen"}, training_time=100.0, loaded="eigen")
    make_wu_run(c, "tensorflow", "wu-tf-mnist", sweep={"blas": "onednn"}, training_time=500.0, loaded="onednn")
    md = _md(c, tmp_path / "out")
    threads = {r[0]: r for r in _rows(_part(md, "Threads"))}
    # Divided by the 1-thread 100 s: 0.60 and 0.80.
    assert [threads[n][1] for n in ("1", "2", "4")] == ["100 (1.00)", "60.0 (0.60)", "80.0 (0.80)"]
    assert threads["2"][3] == "openblas" and "physical cores: 2." in _part(md, "Threads")
    blas = {r[0]: r for r in _rows(_part(md, "BLAS library"))}
    # The study's MKL / Eigen: 6,100.86 / 1,114.34 = 5.47 (Table 10), 3,364.51 / 662.03 = 5.08 (Table 11); the kit's
    # oneDNN / Eigen 500 / 100 = 5.00.
    assert blas["eigen"][1:4] == ["eigen", "Table 10: 1,114 (1.00); Table 11: 662 (1.00)", "100 (1.00)"]
    assert blas["onednn"][1:4] == ["onednn", "Table 10: 6,101 (5.47); Table 11: 3,365 (5.08)", "500 (5.00)"]



def test_blas_sweep_keeps_the_studys_library_the_kit_did_not_run(tmp_path: Path) -> None:
    c = tmp_path / "c"
    make_wu_run(c, "theano", "wu-theano-lenet", sweep={"blas": "openblas"}, training_time=100.0, loaded="openblas")
    # Asked for the reference BLAS, the record says OpenBLAS did the work: shown as loaded, not as asked.
    make_wu_run(c, "theano", "wu-theano-lenet", sweep={"blas": "reference"}, training_time=300.0, loaded="openblas")
    rows = {r[0]: r for r in _rows(_part(_md(c, tmp_path / "out"), "BLAS library"))}
    assert list(rows) == ["openblas", "reference", "mkl"]
    assert rows["reference"][1:4] == ["openblas", "—", "300 (3.00)"]
    # Theano's MKL / OpenBLAS: 7,137.35 / 11,555.43 = 0.618 (Table 10), 691.75 / 17,279.42 = 0.0400 (Table 11).
    assert rows["mkl"][1:4] == ["—", "Table 10: 7,137 (0.62); Table 11: 692 (0.04)", "not run"]


def test_what_is_not_reproduced_is_said(tmp_path: Path) -> None:
    make_wu_run(tmp_path / "c", "theano", "wu-theano-lenet")
    md = _md(tmp_path / "c", tmp_path / "out")
    part = _part(md, "Not reproduced")
    assert "Early stopping" in part and "Table 19" in part and "Caffe's and Torch7's" in part
    assert "No batch-size sweep here (`make wu-cpu-batch`)." in md


def test_the_report_carries_the_section(tmp_path: Path) -> None:
    from analysis import analyze

    make_wu_run(tmp_path / "c", "theano", "wu-theano-lenet", cpu_split=(40.0, 20.0, 1.0))
    analyze(tmp_path / "c", tmp_path / "out")
    md = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "## Wu et al. (IEEE TSC 2019): its tables beside the kit's runs" in md
    # The CPU split reaches tables/runs.csv: 40 % user in every sample of the training window.
    (run,) = read_csv(tmp_path / "out" / "tables" / "runs.csv")
    assert (float(run["cpu_user_mean_pct"]), float(run["cpu_system_mean_pct"]), float(run["cpu_iowait_mean_pct"])) \
        == (40.0, 20.0, 1.0)
