"""The artifact schema is enforced on write and on read."""

import json

import pytest

from bench import schema
from tests.runrecord import minimal_run


def test_run_roundtrip(tmp_path):
    rec = minimal_run()
    schema.write_run(tmp_path, rec)
    assert schema.read_run(tmp_path) == rec


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda r: r.pop("timing"), "missing field 'timing'"),
        (lambda r: r.update(status="done"), "status 'done'"),
        (lambda r: r["results"].update(test_accuracy=float("nan")), "write null"),
        (lambda r: r["config"].update(repeat=True), "has type bool"),
        (lambda r: r.update(status="failed"), "failure.cause"),
        (lambda r: r.update(schema_version=99), "schema_version 99"),
    ],
)
def test_invalid_run_is_refused_on_write(tmp_path, mutate, message):
    rec = minimal_run()
    mutate(rec)
    with pytest.raises(schema.SchemaError, match=message.replace("(", r"\(")):
        schema.write_run(tmp_path, rec)
    assert not (tmp_path / schema.RUN_FILE).exists()


def test_invalid_run_is_refused_on_read(tmp_path):
    rec = minimal_run()
    rec["status"] = "weird"
    (tmp_path / schema.RUN_FILE).write_text(json.dumps(rec))
    with pytest.raises(schema.SchemaError, match="status"):
        schema.read_run(tmp_path)


def test_metrics_and_monitor_roundtrip(tmp_path):
    w = schema.MetricsWriter(tmp_path)
    w.write({"epoch": 1, "loss": 0.5, "train_accuracy": None, "test_accuracy": 0.9,
             "epoch_time_s": 1.0, "eval_time_s": 0.1, "end_unix": 1.0})
    w.close()
    assert schema.read_metrics(tmp_path)[0]["test_accuracy"] == 0.9
    with pytest.raises(schema.SchemaError, match="epoch"):
        schema.MetricsWriter(tmp_path).write({"loss": 1.0})

    path = tmp_path / schema.MONITOR_FILE
    path.write_text(schema.monitor_header()
                    + schema.format_monitor_row({"time_unix": 10.0, "cpu_util_pct": 50.0})
                    + "10.5,0.5,3")  # a line cut off by a kill
    rows = list(schema.read_monitor(tmp_path))
    assert len(rows) == 1 and rows[0]["cpu_util_pct"] == 50.0 and rows[0]["gpu_util_pct"] is None
    with pytest.raises(schema.SchemaError, match="unknown columns"):
        schema.format_monitor_row({"bogus": 1})


def test_iter_run_dirs_skips_partial_and_hidden(tmp_path):
    for name in ("a", "b.partial", ".retried-c"):
        (tmp_path / name).mkdir()
        schema.write_run(tmp_path / name, minimal_run())
    assert [p.name for p in schema.iter_run_dirs(tmp_path)] == ["a"]
