"""Sweep series (analysis/sweeps.py): runs grouped by everything but the thread count, each point's time the
mean over its repeats, seconds per mini-batch never mixed with training times."""

from __future__ import annotations

import math

from analysis import sweeps


def _row(fw: str, threads: int | None, seconds: float | None, repeat: int = 1, **extra) -> dict:
    return {"run_id": f"{fw}-{threads}-r{repeat}", "workload": "fcn-r-mnist", "framework": fw, "device": "cpu",
            "status": "ok", "threads": threads, "sweep": f"threads={threads}", "sweep_threads": threads,
            "era": "current", "runner": "local",
            "profile": "quick", "data_source": "real", "batch_size": 1024, "iteration_time_mean_s": seconds,
            "training_time_s": 100.0, **extra}


def test_a_series_is_everything_but_the_thread_count():
    rows = [_row("pytorch", 1, 1.0), _row("pytorch", 2, 0.5), _row("pytorch", 2, 0.7, repeat=2),
            _row("mxnet", 1, 2.0),
            # another point of the other axis
            _row("pytorch", 1, 3.0, sweep="batch_size=8, threads=1", sweep_batch_size=8),
            _row("pytorch", 1, 4.0, batch_size=64),
            _row("pytorch", 4, 9.0, status="failed")]
    found = sweeps.series(rows)
    assert [(s.framework, s.context["batch_size"], s.context["sweep"]) for s in found] == [
        ("mxnet", 1024, ""), ("pytorch", 1024, ""), ("pytorch", 1024, "batch_size=8"), ("pytorch", 64, "")]
    pytorch = found[1]
    assert pytorch.seconds == {1: 1.0, 2: 0.6} and pytorch.per_minibatch
    assert [r["run_id"] for r in pytorch.rows] == ["pytorch-1-r1", "pytorch-2-r1", "pytorch-2-r2"]


def test_runs_without_seconds_per_mini_batch_form_training_time_series_only_when_asked():
    rows = [_row("pytorch", 1, 1.0), _row("pytorch", 2, float("nan")), _row("pytorch", 4, None)]
    (measured,) = sweeps.series(rows)
    assert measured.seconds == {1: 1.0}
    epochs, per_batch = sweeps.series(rows, training_time=True)  # training times sort first
    assert (per_batch.per_minibatch, epochs.per_minibatch) == (True, False)
    assert epochs.seconds == {2: 100.0, 4: 100.0}


def test_a_gpu_series_pools_its_thread_counts_in_its_mean():
    plain = {"device": "gpu", "sweep": "", "sweep_threads": None}  # no sweep: the module's own thread counts
    rows = [_row("pytorch", 2, 0.02, **plain), _row("pytorch", 4, 0.04, **plain), _row("pytorch", None, 0.03, **plain)]
    (gpu,) = sweeps.series(rows)
    assert gpu.device == "gpu" and list(gpu.seconds) == [2, 4, None]
    assert math.isclose(gpu.mean, 0.03)


def test_the_other_axes_and_what_is_measured():
    assert sweeps.other_axes({"sweep_batch_size": 8, "sweep_threads": 2}) == "batch_size=8"
    assert sweeps.other_axes({"sweep_threads": 2}) == sweeps.other_axes({}) == ""
    assert sweeps.swept({"sweep_threads": 2}) and not sweeps.swept({"sweep_threads": float("nan")})
    assert sweeps.minibatch_seconds({"iteration_time_mean_s": float("nan")}) is None
    assert sweeps.minibatch_seconds({"iteration_time_mean_s": 0.5}) == 0.5


def test_runs_planned_for_other_epochs_are_never_one_series():
    # The old series key (context and the sweep text) forgot the planned epochs: training times of 1-epoch and
    # 5-epoch runs were averaged as repeats of one point.
    rows = [_row("pytorch", 1, None, epochs_planned=1, training_time_s=10.0),
            _row("pytorch", 1, None, repeat=2, epochs_planned=5, training_time_s=50.0)]
    found = sweeps.series(rows, training_time=True)
    assert sorted(s.seconds[1] for s in found) == [10.0, 50.0]


def test_a_sweep_point_is_read_from_its_columns_not_its_text():
    # The display text may hold anything (here a value with the old parsers' separator in it); the cell and the
    # point come from the sweep columns alone.
    rows = [_row("pytorch", n, 1.0 / n, sweep=f"threads={n}, note=a, threads=9", sweep_batch_size=8)
            for n in (1, 2)]
    (found,) = sweeps.series(rows)
    assert list(found.seconds) == [1, 2] and found.context["sweep"] == "batch_size=8"
    assert sweeps.point(rows[0]) == {"batch_size": 8, "threads": 1}



def test_series_are_told_apart_and_matched_by_their_other_axes_columns():
    """A series' other axes come from the sweep columns (`others`, context_key), so series at two points of another
    axis stay two, and one framework's series matches another's on that point, whatever the display text says."""
    rows = [_row(fw, 1, s, sweep="", sweep_batch_size=b)
            for fw in ("mxnet", "pytorch") for b, s in ((8, 1.0), (16, 2.0))]
    found = sorted(sweeps.series(rows), key=lambda s: (s.framework, s.others["batch_size"]))
    assert [(s.framework, s.others, s.seconds) for s in found] == [
        ("mxnet", {"batch_size": 8}, {1: 1.0}), ("mxnet", {"batch_size": 16}, {1: 2.0}),
        ("pytorch", {"batch_size": 8}, {1: 1.0}), ("pytorch", {"batch_size": 16}, {1: 2.0})]
    assert found[0].context_key() == found[2].context_key() != found[1].context_key()
