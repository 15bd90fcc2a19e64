"""The side-by-side seconds-per-epoch table of `make bench-lstm`, on hand-made campaign folders."""

from __future__ import annotations

from campaign import epochtimes
from tests.runfactory import make_run


def test_frameworks_side_by_side_fastest_first(tmp_path, capsys):
    make_run(tmp_path, "keras", "lstm-imdb", 1, profile="quick", curve=(0.6, 0.7), epoch_times=(9.0, 5.0))
    make_run(tmp_path, "pytorch", "lstm-imdb", 1, profile="quick", curve=(0.6, 0.8), accuracy=0.8,
             epoch_times=(4.0, 3.0))
    make_run(tmp_path, "theano", "lstm-imdb", 1, profile="quick", status="failed", cause="nan", curve=(0.5,))
    make_run(tmp_path, "pytorch", "cnn-mnist", 1, profile="quick", curve=(0.9, 0.95), epoch_times=(1.0, 1.0))
    assert epochtimes.main(["--campaign", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    body = lines[lines.index(next(line for line in lines if line.startswith("framework"))) + 1:]
    assert [line.split()[0] for line in body] == ["pytorch", "keras", "theano"]  # steady 3.0 < 5.0, failed last
    assert body[0].split()[1:5] == ["4.00", "3.00", "3.00", "0.8000"]
    assert body[1].split()[1:4] == ["9.00", "5.00", "5.00"]
    assert "failed" in body[2]
    assert "quick profile" in lines[0] and "cnn-mnist" not in "\n".join(body)


def test_steady_state_is_the_mean_after_the_first_epoch():
    row = epochtimes.EpochTimes("pytorch", "ok", [10.0, 2.0, 4.0], 0.5, "2", "r1")
    assert row.steady == 3.0
    assert epochtimes.EpochTimes("pytorch", "ok", [7.0], 0.5, "2", "r1").steady == 7.0


def test_a_campaign_without_the_workload_is_a_usage_error(tmp_path, capsys):
    make_run(tmp_path, "pytorch", "cnn-mnist", 1)
    assert epochtimes.main(["--campaign", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: no lstm-imdb runs in") and "make bench-lstm" in err
