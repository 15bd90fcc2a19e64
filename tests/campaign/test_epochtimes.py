"""The side-by-side seconds-per-epoch table of `make bench-lstm`, on hand-made campaign folders."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from campaign import epochtimes, specs
from tests.runfactory import make_run

REPO = Path(__file__).resolve().parents[2]


def test_frameworks_side_by_side_fastest_first(tmp_path, capsys):
    make_run(tmp_path, "keras", "lstm-imdb", 1, profile="quick", curve=(0.6, 0.7), epoch_times=(9.0, 5.0))
    make_run(tmp_path, "pytorch", "lstm-imdb", 1, profile="quick", curve=(0.6, 0.8), accuracy=0.8,
             epoch_times=(4.0, 3.0))
    make_run(tmp_path, "theano", "lstm-imdb", 1, profile="quick", status="failed", cause="nan", curve=(0.5,))
    make_run(tmp_path, "pytorch", "cnn-mnist", 1, profile="quick", curve=(0.9, 0.95), epoch_times=(1.0, 1.0))
    assert epochtimes.main(["--campaign", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    body, after = _table(lines)
    assert [line.split()[0] for line in body] == ["pytorch", "keras", "theano"]  # steady 3.0 < 5.0, failed last
    assert body[0].split()[1:6] == ["4.00", "3.00", "3.00", "fastest", "0.8000"]
    assert body[1].split()[1:5] == ["9.00", "5.00", "5.00", "1.67"]  # one steady epoch each: no interval
    assert "failed" in body[2]
    assert "quick profile" in lines[0] and "cnn-mnist" not in "\n".join(body)
    # One steady epoch a side has no spread: the ranking is not decided, and the line says so.
    assert after[1].startswith("  keras / pytorch: 1.6667, 1 + 1 steady epochs: undecided (no interval)")
    assert "theano" not in "\n".join(after)


def _table(lines: list[str]) -> tuple[list[str], list[str]]:
    """The table's body (after its header, up to the blank line) and the lines after it."""
    start = lines.index(next(line for line in lines if line.startswith("framework"))) + 1
    end = lines.index("", start) if "" in lines[start:] else len(lines)
    return lines[start:end], lines[end + 1:]


def test_slower_only_when_the_whole_interval_is_above_one(tmp_path, capsys):
    # keras: steady epochs 5 ± 0.1 against pytorch's 3 ± 0.05: clearly slower. chainer: 3.1 ± 0.3,
    # its interval straddles 1: undecided, with the noise and the epochs needed.
    make_run(tmp_path, "pytorch", "lstm-imdb", 1, profile="quick", curve=(0.6,) * 5,
             epoch_times=(8.0, 3.0, 3.05, 2.95, 3.0))
    make_run(tmp_path, "keras", "lstm-imdb", 1, profile="quick", curve=(0.6,) * 5,
             epoch_times=(12.0, 5.0, 5.1, 4.9, 5.0))
    make_run(tmp_path, "chainer", "lstm-imdb", 1, profile="quick", curve=(0.6,) * 5,
             epoch_times=(9.0, 3.4, 2.8, 3.3, 2.9))
    assert epochtimes.main(["--campaign", str(tmp_path)]) == 0
    body, after = _table(capsys.readouterr().out.splitlines())
    assert [line.split()[0] for line in body] == ["pytorch", "chainer", "keras"]
    assert body[2].split()[7:9] == ["1.67", "[1.62-1.71]"]  # after 5 epochs and the steady mean
    verdicts = {line.split(":")[0].strip(): line for line in after[1:]}
    assert verdicts["keras / pytorch"].endswith(": slower")
    chainer = verdicts["chainer / pytorch"]
    assert ": undecided (noise ±" in chainer and "more steady epochs each needed at the observed spread" in chainer


def test_steady_state_is_the_mean_after_the_first_epoch():
    row = epochtimes.EpochTimes("pytorch", "ok", [10.0, 2.0, 4.0], 0.5, "2", "r1")
    assert row.steady == 3.0
    assert epochtimes.EpochTimes("pytorch", "ok", [7.0], 0.5, "2", "r1").steady == 7.0


def test_a_campaign_without_the_workload_is_a_usage_error(tmp_path, capsys):
    make_run(tmp_path, "pytorch", "cnn-mnist", 1)
    assert epochtimes.main(["--campaign", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: no lstm-imdb runs in") and "make bench-lstm" in err


def _bench_profile() -> str:
    """The profile `make bench-lstm` runs, read from the command make would run."""
    out = subprocess.run(["make", "-n", "--no-print-directory", "bench-lstm", "DATA=synthetic"], cwd=REPO,
                         capture_output=True, text=True, check=True).stdout
    return re.search(r'-m campaign run .*--profile "([a-z]+)"', out).group(1)


def test_make_bench_lstm_as_shipped_trains_enough_epochs_for_a_verdict(tmp_path, capsys):
    # Epoch times as a quiet 2-core machine gives them (a few per cent of epoch-to-epoch noise, a
    # fixed pattern): keras 1.3x pytorch must come out "slower", not "undecided (no interval)" as two
    # epochs (one steady epoch) left it.
    epochs = specs.load("lstm-imdb", _bench_profile())["training"]["epochs"]
    noise = [1.0, 1.03, 0.97, 1.02, 0.98, 1.01, 0.99, 1.04, 0.96][:epochs - 1]
    for framework, steady in (("pytorch", 3.0), ("keras", 3.9)):
        make_run(tmp_path, framework, "lstm-imdb", 1, profile="bench", curve=(0.6,) * epochs,
                 epoch_times=(2 * steady, *(steady * k for k in noise)))
    assert epochtimes.main(["--campaign", str(tmp_path)]) == 0
    _, after = _table(capsys.readouterr().out.splitlines())
    assert after[1].startswith("  keras / pytorch: ") and after[1].endswith(": slower"), after[1]
