"""A make ilkarman-cpu campaign in the report: ilkarman's section with the article's K80 and P100 times beside the
kit's, each as a ratio to the base framework, and the order agreement; nothing for a campaign without its runs."""

from __future__ import annotations

from pathlib import Path

from analysis.document import render_markdown
from analysis.report import sections
from bench import switches
from bench.schema import read_run, write_run
from campaign.study import load_study
from studies.ilkarman.section import ilkarman_section
from tests.analysis.ilkarmanruns import FEATURES, make_ilkarman_run
from tests.analysis.reading import report_context
from tests.analysis.sections.test_claims import _demo_like

CIFAR = "cnn-cifar10-ilkarman"


def _table_row(md: str, *cells: str) -> str:
    (line,) = [line for line in md.splitlines() if line.startswith("| " + " | ".join(cells) + " |")]
    return line


def _md(campaign: Path, tmp_path: Path) -> str:
    return render_markdown(ilkarman_section(report_context(campaign, tmp_path / "out")))


def test_cifar_table_sets_the_articles_ratios_beside_the_kits(tmp_path: Path) -> None:
    campaign = tmp_path / "results" / "ilkarman-cpu"
    for fw, seconds in {"tensorflow": 120.0, "pytorch": 110.0, "mxnet": 80.0}.items():
        make_ilkarman_run(campaign, fw, CIFAR, seconds)
    make_ilkarman_run(campaign, "mxnet", CIFAR, 90.0, repeat=2)  # repeats are averaged: 85 s
    make_ilkarman_run(campaign, "pytorch", FEATURES, 40.0)
    make_ilkarman_run(campaign, "chainer", FEATURES, 30.0)
    md = _md(campaign, tmp_path)
    assert md.startswith(f"## {load_study('ilkarman').title}: the article's times beside the kit's")
    assert "Gluon -> mxnet (the kit's MXNet module is written with Gluon)" in md
    assert "; Caffe2: not in the kit;" in md
    cifar = md.split("### CIFAR-10 CNN: training time")[1].split("###")[0]
    assert "divide by mxnet's time on the same hardware" in cifar
    assert "| article's framework | kit framework | K80: s (÷ base) | P100: s (÷ base) | kit: s (÷ base) | runs |" \
        in cifar
    # mxnet's published time is Gluon's (152 s on the K80, 62 on the P100): PyTorch 169 / 152 = 1.11, 51 / 62 = 0.82;
    # the kit: 110 / 85 = 1.29.
    assert _table_row(cifar, "PyTorch", "pytorch").startswith(
        "| PyTorch | pytorch | 169 (1.1) | 51.0 (0.82) | 110 (1.3) | [pytorch-cnn-cifar10-ilkarman-cpu-r1]")
    assert _table_row(cifar, "Gluon", "mxnet").startswith("| Gluon | mxnet | 152 (1.0) | 62.0 (1.0) | 85.0 (1.0) |")
    assert "mxnet-cnn-cifar10-ilkarman-cpu-r2" in _table_row(cifar, "Gluon", "mxnet")
    assert _table_row(cifar, "Caffe2", "—") == "| Caffe2 | — | 148 (0.97) | 54.0 (0.87) | Caffe2: not in the kit | — |"
    assert _table_row(cifar, "Chainer", "chainer").endswith("| no runs in this context | — |")
    # P100: pytorch 51 < tensorflow 57 < mxnet 62; the kit: mxnet < pytorch < tensorflow: one pair of three agrees.
    assert "on the P100 (Kendall's tau): tau=-0.33" in cifar
    features = md.split("### ResNet-50 features: seconds per 1,000 images")[1].split("###")[0]
    # Chainer is the fastest here, so the base: its 9.3 s on the K80, 2.7 on the P100.
    assert _table_row(features, "PyTorch", "pytorch").startswith(
        "| PyTorch | pytorch | 7.70 (0.83) | 1.90 (0.70) | 40.0 (1.3) |")
    assert "n=2 with both values; needs at least 3" in features
    assert "### IMDB GRU: training time\n\nNot measured: no ok run of `gru-imdb` in this campaign." in md


def test_a_campaign_without_ilkarmans_runs_has_no_section(tmp_path: Path) -> None:
    campaign = tmp_path / "results" / "demo"
    _demo_like(campaign)
    assert ilkarman_section(report_context(campaign, tmp_path / "out")) == []
    assert ilkarman_section in sections()


def _switch_run(campaign: Path, fw: str, workload: str, axis: str, value: str, seconds: float, kernel: str) -> None:
    run_dir = make_ilkarman_run(campaign, fw, workload, seconds, sweep={axis: value},
                                run_id=f"{fw}-{workload}-{axis}-{value}")
    run = read_run(run_dir)
    run["device_used"]["kernels"] = {switches.SWITCHES[axis].acts_on: kernel}
    write_run(run_dir, run)


def test_each_switch_sweep_shows_its_times_against_the_default_and_the_kernel_each_run_recorded(tmp_path: Path) -> None:
    campaign = tmp_path / "results" / "ilkarman-cpu"
    _switch_run(campaign, "pytorch", "gru-imdb", "rnn_kernel", "plain", 150.0, "torch.nn.GRUCell stepped (plain)")
    _switch_run(campaign, "pytorch", "gru-imdb", "rnn_kernel", "fused", 100.0, "torch.nn.GRU (CPU, fused)")
    _switch_run(campaign, "pytorch", CIFAR, "layout", "channels_last", 45.0, "torch.nn.Conv2d (CPU, oneDNN, "
                                                                              "channels_last)")
    md = _md(campaign, tmp_path)
    switches_md = md.split("### Performance switches")[1]
    # The default (fused) first, whatever order the runs were made in; plain 150 / 100 = 1.5.
    assert _table_row(switches_md, "rnn_kernel", "gru-imdb", "pytorch", "cpu", "fused").startswith(
        "| rnn_kernel | gru-imdb | pytorch | cpu | fused | 100 (1.0) | torch.nn.GRU (CPU, fused) |")
    assert _table_row(switches_md, "rnn_kernel", "gru-imdb", "pytorch", "cpu", "plain").startswith(
        "| rnn_kernel | gru-imdb | pytorch | cpu | plain | 150 (1.5) | torch.nn.GRUCell stepped (plain) | "
        "[pytorch-gru-imdb-rnn_kernel-plain]")
    assert switches_md.index("| fused |") < switches_md.index("| plain |")
    # No channels_first run to divide by: the time alone.
    assert "| layout | cnn-cifar10-ilkarman | pytorch | cpu | channels_last | 45.0 | torch.nn.Conv2d (CPU, oneDNN, " \
           "channels_last) |" in switches_md
    # The switch runs are not the training benchmark's: the benchmark tables have no run of their own here.
    assert "Not measured: no ok run of `gru-imdb` in this campaign." in md
