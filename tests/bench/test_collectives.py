"""bench/collectives: the all-reduce workload's settings, its collective.csv and run.json (bench/schema/),
nccl-tests' bandwidths, and (slow) a real 2-rank Gloo all-reduce through `python -m bench run`."""

from __future__ import annotations

import copy

import pytest

from bench import collectives, request, schema
from bench.errors import UsageError
from tests import csvcases
from tests.collectiveruns import WORKLOAD, StandIn, make_collective_run, planned_request, stand_in_time


def _spec(**collective) -> dict:
    spec = copy.deepcopy(planned_request()["spec"])
    spec["collective"].update(collective)
    return spec


# -- the spec -------------------------------------------------------------------------------------------
def test_the_shipped_workload_times_deepbenchs_sizes_to_16_8m_floats():
    req = planned_request()
    assert collectives.settings(req["spec"]) == {
        "op": "all_reduce", "dtype": "float32", "ranks": 2,
        "sizes": [100000, 3097600, 4194304, 6553600, 16777217], "warmup": 1, "repetitions": 3}
    assert req["data"] == request.no_data()  # nothing to download, prepare or make
    assert collectives.settings(planned_request("paper")["spec"])["repetitions"] == 100


@pytest.mark.parametrize("change, message", [
    ({"op": "broadcast"}, "collective 'broadcast' of 'float32' is not one of"),
    ({"ranks": 0}, "ranks 0 is not a whole number >= 1"),
    ({"ranks": True}, "ranks True is not"),
    ({"sizes": [10, 10]}, "are not distinct positive whole numbers"),
    ({"sizes": []}, "are not distinct positive whole numbers"),
    ({"extra": 1}, "needs exactly the keys op, dtype, ranks, sizes"),
])
def test_a_bad_collective_table_is_one_line_naming_the_fix(change, message):
    with pytest.raises(UsageError, match=message) as err:
        collectives.settings(_spec(**change))
    assert "\n" not in str(err.value) and "[collective]" in err.value.fix


def test_a_collective_needs_counted_repetitions():
    spec = _spec()
    spec["measurement"] = {"protocol": "iterations", "warmup_epochs": 1, "iterations": 3}
    with pytest.raises(UsageError, match="timed in repetitions"):
        collectives.settings(spec)
    del spec["measurement"]
    with pytest.raises(UsageError, match="timed in repetitions"):
        collectives.settings(spec)


@pytest.mark.parametrize("framework, era, why, fix", [
    ("tensorflow", "current", "tensorflow has no collective module", "run it with FRAMEWORKS=pytorch and ERA=current"),
    ("pytorch", "paper", "not paper", "run it with ERA=current"),  # its own module of another era has one
])
def test_frameworks_without_a_collective_module_refuse_in_one_line(framework, era, why, fix):
    assert why in collectives.refusal(framework, era)
    with pytest.raises(UsageError, match=why) as err:
        collectives.load(framework, era)
    assert err.value.fix == fix
    assert collectives.refusal("pytorch", "current") is None


# -- bandwidth and the files ------------------------------------------------------------------------------
def test_bus_bandwidth_is_nccl_tests():
    assert schema.bus_bandwidth(4_000_000, 0.002, 2) == (2e9, 2e9)  # 2 ranks: busbw = algbw
    algbw, busbw = schema.bus_bandwidth(4_000_000, 0.002, 8)
    assert algbw == 2e9 and busbw == pytest.approx(2e9 * 14 / 8)
    assert schema.bus_bandwidth(400, 1.0, 1) == (400.0, 0.0)  # one rank moves nothing


def test_a_run_writes_every_ranks_time_and_the_slowest_ranks_statistics(tmp_path):
    folder = make_collective_run(tmp_path)
    run = schema.read_run(folder)
    table = run["results"]["collective"]
    assert (table["op"], table["backend"], table["ranks"], table["warmup"], table["repetitions"]) == \
        ("all_reduce", "standin", 2, 1, 3)
    rows = schema.read_collective(folder, 2)
    assert len(rows) == 5 * (1 + 3) * 2  # sizes x (warm-up + timed) x ranks
    for entry in table["sizes"]:
        f = entry["floats"]
        slowest = [stand_in_time(f, k, 1) for k in (1, 2, 3)]  # rank 1 is the slower: the max over ranks
        assert entry["median_s"] == pytest.approx(slowest[1]) and entry["mean_s"] == pytest.approx(sum(slowest) / 3)
        assert (entry["min_s"], entry["max_s"]) == pytest.approx((slowest[0], slowest[2]))
        assert entry["bytes"] == 4 * f and entry["checked"] is True
        assert entry["busbw_gbps"] == pytest.approx(4 * f / slowest[1] / 1e9)  # 2 ranks: = algbw
    # The file gives back the run's figures (the analysis recomputes them so), warm-up left out.
    assert schema.summarize_collective(rows, 2) == [dict(e, checked=False) for e in table["sizes"]]
    assert run["timing"]["setup_time_s"] == 0.5 and run["timing"]["definition"] == schema.COLLECTIVE_TIMING_DEFINITION
    assert run["timing"]["training_time_s"] == pytest.approx(
        sum(stand_in_time(f, k, 1) for f in [e["floats"] for e in table["sizes"]] for k in (1, 2, 3)))
    assert not (folder / collectives.SCRATCH).exists()


@pytest.mark.parametrize("edit, message", [
    (lambda rows: rows.insert(0, rows.pop(1)), "rep 1 rank 1, expected rep 1 rank 0"),
    (lambda rows: rows.pop(1), "the repetition before lacks ranks 1..1"),
    (lambda rows: rows.pop(), "the last repetition lacks ranks 1..1"),
    (lambda rows: rows.extend(dict(r, phase="warmup") for r in rows[-4:-2]), "a warm-up repetition after a measured"),
    (lambda rows: rows[0].update(time_s=float("nan")), "not a finite non-negative number"),
    (lambda rows: rows.extend(copy.deepcopy(rows[:2])), "size 1000 again"),
])
def test_a_bad_collective_file_is_refused(edit, message):
    rows = StandIn.all_reduce({"sizes": [1000, 2000], "ranks": 2, "warmup": 1, "repetitions": 2}, "cpu", None)[0]
    edit(rows)
    with pytest.raises(schema.SchemaError, match=message):
        schema.validate_collective(rows, 2)


@pytest.mark.parametrize("text, message",
                         csvcases.parse_errors(schema.COLLECTIVE_COLUMNS, ("1000", "measured", "1", "0", "0.1")))
def test_a_collective_file_that_does_not_parse_names_its_line(tmp_path, text, message):
    (tmp_path / schema.COLLECTIVE_FILE).write_text(text)
    with pytest.raises(schema.SchemaError, match=message):
        schema.read_collective(tmp_path, 1)


def test_run_json_has_results_collective_exactly_when_it_times_one(tmp_path):
    run = schema.read_run(make_collective_run(tmp_path))
    missing = copy.deepcopy(run)
    del missing["results"]["collective"]
    with pytest.raises(schema.SchemaError, match="an ok collective run needs results.collective"):
        schema.validate_run(missing)
    schema.validate_run(dict(missing, status="failed", failure={"cause": "crash", "message": "x"}))
    other = copy.deepcopy(run)
    other["spec"]["family"] = "cnn"
    with pytest.raises(schema.SchemaError, match="only for workloads of family 'collective'"):
        schema.validate_run(other)
    unchecked = copy.deepcopy(run)
    del unchecked["results"]["collective"]["sizes"][0]["checked"]
    with pytest.raises(schema.SchemaError, match=r"sizes\[0\] needs checked"):
        schema.validate_run(unchecked)


# -- the real thing --------------------------------------------------------------------------------------
@pytest.mark.slow
def test_the_entrypoint_all_reduces_over_two_gloo_ranks(tmp_path):
    """The planned all-reduce request on two small sizes, run by `python -m bench run` in the pytorch
    environment: two Gloo ranks over loopback, every rank's time in collective.csv, the sums checked."""
    import os
    import subprocess
    from pathlib import Path

    from bench import request
    from images import envs

    repo = Path(__file__).resolve().parents[2]
    req = planned_request(sizes=[1000, 262144])
    folder = tmp_path / req["run_id"]
    request.write(folder, req)
    proc = subprocess.run([str(envs.ensure_env("pytorch").python), "-m", "bench", "run", "--request",
                           str(folder / request.REQUEST_FILE), "--out", str(folder)], cwd=repo, timeout=120,
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(repo)})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    run = schema.read_run(folder)
    assert run["status"] == "ok" and run["config"]["workload"] == WORKLOAD
    table = run["results"]["collective"]
    assert (table["backend"], table["ranks"]) == ("gloo", 2)
    assert [e["floats"] for e in table["sizes"]] == [1000, 262144] and all(e["checked"] for e in table["sizes"])
    rows = schema.read_collective(folder, 2)
    assert {r["rank"] for r in rows} == {0, 1} and len(rows) == 2 * (1 + 3) * 2
    assert schema.summarize_collective(rows, 2) == [dict(e, checked=False) for e in table["sizes"]]
    assert all(0 < e["median_s"] < 10 and e["busbw_gbps"] > 0 for e in table["sizes"])
    assert run["environment"]["framework_version"] == run["environment"]["packages"]["torch"]
    assert "all_reduce 262144 floats x 2 ranks" in proc.stdout
