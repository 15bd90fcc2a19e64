"""Shi et al.'s published tables and their mapping onto the kit (studies/shi/tables.py): the mapping is data that must
name real things, and the measured series read only iterations-protocol runs."""

from __future__ import annotations

from bench.frameworks import known_frameworks
from campaign import specs
from studies.shi import tables as shi


def test_every_shi_workload_maps_to_a_network_of_table_7() -> None:
    shi_workloads = {w for w in specs.known_workloads() if specs.load(w).get("study") == shi.STUDY}
    assert "fcn-r-mnist" in shi_workloads
    mapped = {w for w in shi.networks().values() if w}
    # A Shi workload spec without a row in shi2016_networks.csv would never reach the report's Shi section.
    assert shi_workloads <= mapped, sorted(shi_workloads - mapped)
    assert list(shi.networks()) == list(dict.fromkeys(p.network for p in shi.table7()))
    assert shi.network_of("fcn-r-mnist") == "FCN-R" and shi.network_of("cnn-mnist") is None


def test_tools_map_onto_kit_frameworks_or_say_not_in_the_kit() -> None:
    tools = {t.tool: t for t in shi.tools()}
    assert set(tools) == {p.tool for p in shi.table7()} == {p.tool for p in shi.table8()}
    assert {t: tools[t].framework for t in tools} == {"TF": "tensorflow", "MXNet": "mxnet", "Torch": "pytorch",
                                                      "Caffe": None, "CNTK": None}
    assert {t.framework for t in shi.tools() if t.framework} <= set(known_frameworks("current"))
    assert "nearest" in tools["Torch"].note  # PyTorch stands in for Lua Torch, and the report says so


def test_both_cpu_machines_and_their_physical_cores() -> None:
    assert shi.cpu_hardware() == ["cpu_i7-3820", "cpu_2xE5-2630v3"]
    assert {hw: shi.machines()[hw].physical_cores for hw in shi.cpu_hardware()} == \
        {"cpu_i7-3820": 4, "cpu_2xE5-2630v3": 16}
    assert shi.gpu_hardware() == ["gpu_GTX980", "gpu_GTX1080", "gpu_K80-GK210"]
    assert set(shi.gpu_hardware()) <= set(shi.machines())


def test_published_times_and_ratios_to_one_thread() -> None:
    torch = shi.published_cpu("FCN-R", "Torch", "cpu_i7-3820")
    assert torch == {1: 1.670, 2: 0.926, 4: 0.565, 8: 0.611}
    ratios = shi.ratio_to_one_thread(torch)
    assert ratios[1] == 1.0 and abs(ratios[4] - 0.565 / 1.670) < 1e-12
    # The paper prints no 8-thread number for Caffe on the desktop: no time, no ratio.
    assert shi.published_cpu("FCN-R", "Caffe", "cpu_i7-3820")[8] is None
    assert shi.ratio_to_one_thread({1: None, 2: 0.5}) == {1: None, 2: None}
    assert shi.published_minibatch("LSTM") == 256 and shi.published_minibatch("LSTM", gpu=True) == 128


def _row(fw: str, threads: int, seconds: float | None, **extra) -> dict:
    return {"run_id": f"{fw}-{threads}", "workload": "fcn-r-mnist", "framework": fw, "device": "cpu",
            "status": "ok", "threads": threads, "sweep": f"threads={threads}", "sweep_threads": threads,
            "era": "current", "runner": "local",
            "profile": "quick", "data_source": "real", "batch_size": 1024, "iteration_time_mean_s": seconds,
            **extra}


def test_measured_series_average_repeats_and_skip_the_epoch_protocol() -> None:
    rows = [_row("pytorch", 1, 1.0), _row("pytorch", 2, 0.5), _row("pytorch", 2, 0.7, run_id="again"),
            _row("pytorch", 4, None),  # the epoch protocol: no seconds per mini-batch
            _row("mxnet", 1, 0.9, status="failed"), _row("keras", 1, 2.0, workload="cnn-mnist")]
    (series,) = shi.measured_series(rows)
    assert (series.workload, series.framework, series.device) == ("fcn-r-mnist", "pytorch", "cpu")
    assert series.seconds == {1: 1.0, 2: 0.6}
    assert shi.ratio_to_one_thread(series.seconds) == {1: 1.0, 2: 0.6}
    # Another profile is another series, never averaged with this one.
    assert len(shi.measured_series([*rows, _row("pytorch", 1, 3.0, profile="paper")])) == 2
