"""A make shi-cpu campaign (threads 1, 2, 4 on a 2-core host, iterations protocol) in the report: Shi et al.'s
section with the published and measured seconds per mini-batch and their ratios to 1 thread, the header naming the
study, Shi-1 and Shi-3 decided and DLBench's claims not read from Shi's networks; a DLBench campaign unchanged."""

from __future__ import annotations

from pathlib import Path

from analysis.document import render_markdown
from analysis.sections.claims import claims_section
from analysis.sections.overview import header_section
from campaign.study import load_study
from studies.shi import tables as shi
from studies.shi.section import shi_section
from tests.analysis.reading import report_context
from tests.analysis.sections.test_claims import _demo_like
from tests.analysis.shiruns import make_shi_run, shi_cpu_campaign

# Seconds per mini-batch: mxnet is fastest at 1 and 2 threads, pytorch at 4 (past the host's 2 cores).
TIMES = {"pytorch": {1: 1.0, 2: 0.5, 4: 0.4}, "mxnet": {1: 0.8, 2: 0.4, 4: 0.48}}


def _campaign(tmp_path: Path, **kwargs) -> Path:
    campaign = tmp_path / "results" / "shi-cpu"
    shi_cpu_campaign(campaign, TIMES, **kwargs)
    return campaign


def _md(section, campaign: Path, tmp_path: Path) -> str:
    return render_markdown(section(report_context(campaign, tmp_path / "out")))


def _table_row(md: str, *cells: str) -> str:
    """The one table row starting with these cells."""
    (line,) = [line for line in md.splitlines() if line.startswith("| " + " | ".join(cells) + " |")]
    return line


def test_cpu_table_puts_both_machines_published_ratios_beside_the_measured(tmp_path: Path) -> None:
    campaign = _campaign(tmp_path)
    make_shi_run(campaign, "pytorch", 0.44, threads=4, repeat=2)  # repeats are averaged: (0.40 + 0.44) / 2
    md = _md(shi_section, campaign, tmp_path)
    assert md.startswith(f"## {load_study('shi').title}: seconds per mini-batch")
    assert "desktop Intel Core i7-3820 (4 cores): s (÷ 1 thread)" in md
    assert "server 2x Intel Xeon E5-2630 v3 (16 cores): s (÷ 1 thread)" in md
    assert "the kit's host: 2 physical cores (run.json host.cpu_physical_cores)" in md
    assert "Torch -> pytorch (the study ran Torch 7 (Lua); PyTorch is the kit's nearest framework" in md
    # Table 7, FCN-R, Torch at 4 threads: 0.565 s of 1.670 on the desktop, 0.662 of 1.379 on the server; the kit:
    # 0.42 s of 1.0.
    assert _table_row(md, "Torch", "pytorch", "4").startswith(
        "| Torch | pytorch | 4 | 0.5650 (0.34) | 0.6620 (0.48) | 0.4200 (0.42) | [pytorch-fcn-r-mnist-cpu-t4-r1]")
    assert "pytorch-fcn-r-mnist-cpu-t4-r2" in _table_row(md, "Torch", "pytorch", "4")
    assert _table_row(md, "MXNet", "mxnet", "2").startswith("| MXNet | mxnet | 2 | 1.072 (0.56) | 1.065 (0.66) | "
                                                            "0.4000 (0.50) |")
    # Past the published thread counts of the desktop, and past the kit's sweep: '—'.
    assert _table_row(md, "Torch", "pytorch", "32") == "| Torch | pytorch | 32 | — | 0.3660 (0.27) | — | — |"
    assert _table_row(md, "TF", "tensorflow", "1") == \
        "| TF | tensorflow | 1 | 2.647 (1.0) | 3.410 (1.0) | no runs in this campaign | — |"
    assert _table_row(md, "Caffe", "—", "8") == "| Caffe | — | 8 | — | 1.211 (0.53) | Caffe: not in the kit | — |"
    # Every other network says plainly that it has no measured time here.
    for network in shi.networks():
        assert (f"- {network}: " in md) == (network != "FCN-R"), network
    assert "- ResNet-50: no CPU runs of resnet50-synthetic in this campaign" in md
    assert "### GPU: seconds per mini-batch\n\nNot measured: this campaign holds no GPU run" in md


def test_gpu_runs_stand_beside_table_7_gpus_and_table_8(tmp_path: Path) -> None:
    campaign = _campaign(tmp_path)
    make_shi_run(campaign, "pytorch", 0.03, device="gpu")
    md = _md(shi_section, campaign, tmp_path)
    gpu = md.split("### GPU: seconds per mini-batch")[1]
    assert "GTX 980: s | NVIDIA GTX 1080: s | NVIDIA Tesla K80 (one GK210): s | Table 8, 1 GPU: s | " \
           "Table 8, 2 GPUs: s | Table 8, 4 GPUs: s | kit, 1 GPU: s | runs |" in gpu
    # Table 8, FCN-R, Torch: 0.165 s on 1 GPU, 0.110 on 2 (0.110 / 0.165 = 0.67), 0.112 on 4 (0.68).
    assert _table_row(gpu, "Torch", "pytorch").startswith(
        "| Torch | pytorch | 0.02500 | 0.01600 | 0.05100 | 0.1650 | 0.1100 (0.67) | 0.1120 (0.68) | "
        "0.03000 on Fake GPU 16GB | [pytorch-fcn-r-mnist-gpu-r1]")
    assert _table_row(gpu, "MXNet", "mxnet").endswith("| no runs in this campaign | — |")
    assert "the study's GPU mini-batch 1024, Table 8's 4096)" in gpu
    assert "No GPU runs here of: FCN-S, AlexNet-S, ResNet-50, AlexNet-R, ResNet-56, LSTM." in gpu


def test_multigpu_runs_stand_beside_table_8_with_their_ratio_to_one_gpu(tmp_path: Path) -> None:
    campaign = _campaign(tmp_path)
    make_shi_run(campaign, "pytorch", 0.03, device="gpu")  # shi-gpu's 1-GPU run and shi-multigpu's average
    make_shi_run(campaign, "pytorch", 0.05, device="gpu", ranks=1)
    make_shi_run(campaign, "pytorch", 0.03, device="gpu", ranks=4)
    gpu = _md(shi_section, campaign, tmp_path).split("### GPU: seconds per mini-batch")[1]
    assert "| Table 8, 4 GPUs: s | kit, 1 GPU: s | kit, 4 GPUs: s | runs |" in gpu
    # 1 GPU: (0.03 + 0.05) / 2 = 0.04 s; 4 GPUs: 0.03 s, 0.75 of it.
    row = _table_row(gpu, "Torch", "pytorch")
    assert "| 0.1120 (0.68) | 0.04000 on Fake GPU 16GB | 0.03000 (0.75) | " in row
    assert all(f"pytorch-fcn-r-mnist-gpu{n}-r1" in row for n in ("", "-n1", "-n4"))
    assert _table_row(gpu, "MXNet", "mxnet").endswith("| no runs in this campaign | — | — |")


def test_header_names_the_study_of_a_shi_campaign(tmp_path: Path) -> None:
    md = _md(header_section, _campaign(tmp_path), tmp_path)
    title = load_study("shi").title
    assert md.startswith(f"# Reproduction report: shi-cpu — {title}\n")
    assert f"Compared against {title}, its published tables in studies/shi/reference (shi2016_table7.csv, " \
           "shi2016_table8.csv)." in md
    assert "Elshawi" not in md


def test_a_dlbench_campaign_keeps_its_header_and_has_no_shi_section(tmp_path: Path) -> None:
    campaign = tmp_path / "results" / "demo"
    _demo_like(campaign)
    md = _md(header_section, campaign, tmp_path)
    assert md.startswith("# Reproduction report: demo\n")
    assert "Compared against DLBench (Elshawi, Wahab, Barnawi, Sakr; Cluster Computing 2021) and the numbers in " \
           "its authors' logs." in md
    assert _md(shi_section, campaign, tmp_path).strip() == ""


def test_shi_1_and_shi_3_decided_and_dlbench_claims_not_read_from_shi_networks(tmp_path: Path) -> None:
    # Training times the other way round: were Shi-3 to compare them, pytorch would be fastest everywhere.
    campaign = tmp_path / "results" / "shi-cpu"
    for fw, by_n in TIMES.items():
        for n, seconds in by_n.items():
            make_shi_run(campaign, fw, seconds, threads=n, training_time=1.0 if fw == "pytorch" else 100.0)
    md = _md(claims_section, campaign, tmp_path)
    decided = {line.split(" | ")[0].removeprefix("| "): line for line in md.splitlines()
               if line.startswith("| ") and not line.startswith("| claim |") and not line.startswith("|---")}
    assert list(decided) == ["Shi-1", "Shi-3"]
    assert "| **reproduced** (on quick profile" in decided["Shi-3"]
    assert ("fcn-r-mnist/cpu at 1 thread, s per mini-batch: best mxnet (0.8000 s) of 2; fcn-r-mnist/cpu at 2 "
            "threads, s per mini-batch: best mxnet (0.4000 s) of 2; fcn-r-mnist/cpu at 4 threads, s per mini-batch: "
            "best pytorch (0.4000 s) of 2; no framework best everywhere") in decided["Shi-3"]
    # pytorch gains 25 % past the 2 cores (0.5 s at 2 threads, 0.4 s at 4), mxnet loses (0.4 s, 0.48 s): the median
    # gain, 1.04×, is below 1.1×, and pytorch's sweep is named as gaining.
    assert "| **reproduced** (on quick profile" in decided["Shi-1"]
    assert "gaining 1.1× or more: pytorch fcn-r-mnist (2 cores): best 0.5000 s at 2 threads, 0.4000 s at 4 (1.25×)" \
        in decided["Shi-1"]
    undecided = {line.split("**")[1]: line for line in md.splitlines() if line.startswith("- **")}
    for claim in ("1", "4", "5"):  # iteration runs record accuracy, training time and CPU use: not DLBench's
        assert undecided[claim].endswith("runs of fcn-r-mnist (study shi) are not DLBench's workloads: they do "
                                         "not count for its claims)."), undecided[claim]
    assert "this campaign's runs are of shi: fcn-r-mnist), so this campaign cannot decide the claims of DLBench" in md
