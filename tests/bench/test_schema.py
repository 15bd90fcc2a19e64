"""The artifact schema is enforced on write and on read."""

import ast
import importlib
import json
import pkgutil
from pathlib import Path

import pytest

from bench import schema
from tests.runrecord import minimal_request, minimal_run


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
        (lambda r: r["dataset"].update(test_majority_rate="0.05"), "dataset: field 'test_majority_rate'"),
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


def test_one_constructor_makes_every_record_from_its_request():
    req = minimal_request()
    started = schema.run_record(req, host={"hostname": "h"})
    assert started["status"] == "failed" and started["failure"]["message"] == "did not finish"
    assert started["run_id"] == req["run_id"] and started["spec"] == req["spec"]
    assert started["config"] == {k: req[k] for k in schema.RUN_CONFIG_FIELDS}
    assert started["dataset"]["sha256"] == req["data"]["arrays_sha256"]
    ok = schema.finish(schema.run_record(req), None)
    assert ok["status"] == "ok" and ok["failure"] is None and ok["finished_at"]
    died = schema.finish(schema.run_record(req), {"cause": "killed", "message": "SIGKILL"})
    for record in (started, ok, died):
        schema.validate_run(record)


def test_version_1_runs_are_read_as_the_current_era(tmp_path):
    rec = minimal_run()
    rec["schema_version"] = 1
    for key in ("era", "threads"):
        rec["config"].pop(key)
    (tmp_path / schema.RUN_FILE).write_text(json.dumps(rec))
    read = schema.read_run(tmp_path)
    assert read["schema_version"] == schema.SCHEMA_VERSION
    assert read["config"]["era"] == "current" and read["config"]["threads"] is None
    rec["schema_version"] = 3
    (tmp_path / schema.RUN_FILE).write_text(json.dumps(rec))
    with pytest.raises(schema.SchemaError, match="schema_version 3 is not supported"):
        schema.read_run(tmp_path)


def test_raw_files_go_from_the_request_into_run_json_and_are_checked(tmp_path):
    raw = {"spa-eng.zip": {"sha256": "ef" * 32, "verified": "sha256 recorded on first download, size verified"}}
    req = minimal_request(data=dict(minimal_request()["data"], raw_files=raw))
    record = schema.finish(schema.run_record(req), None)
    assert record["dataset"]["raw_files"] == raw
    schema.write_run(tmp_path, record)
    assert schema.read_run(tmp_path)["dataset"]["raw_files"] == raw
    assert "raw_files" not in schema.run_record(minimal_request())["dataset"]  # optional: older requests lack it
    record["dataset"]["raw_files"] = {"spa-eng.zip": {"sha256": "ef" * 32}}
    with pytest.raises(schema.SchemaError, match="dataset.raw_files.spa-eng.zip: missing field 'verified'"):
        schema.write_run(tmp_path, record)


def test_a_system_run_records_its_environment_in_run_json(tmp_path):
    system = {"python": "3.11.7", "executable": "/usr/bin/python3", "packages_sha256": "5a" * 32,
              "packages_source": "importlib.metadata", "frameworks": {"torch": "2.5.1"}, "framework_package": "torch",
              "cuda": None}
    req = minimal_request(runner="system", env_id="5a" * 32, system=system)
    record = schema.finish(schema.run_record(req), None)
    assert record["environment"]["system"] == system and record["environment"]["env_id"] == "5a" * 32
    schema.write_run(tmp_path, record)
    assert schema.read_run(tmp_path)["environment"]["system"] == system
    assert "system" not in schema.run_record(minimal_request())["environment"]  # optional: older runs lack it
    del record["environment"]["system"]
    with pytest.raises(schema.SchemaError, match="a system run needs environment.system"):
        schema.write_run(tmp_path, record)
    record["environment"]["system"] = dict(system, packages_sha256="cd" * 32)
    with pytest.raises(schema.SchemaError, match="env_id of a system run must be its"):
        schema.write_run(tmp_path, record)


def test_the_gpu_a_run_was_given_is_optional_and_checked_when_present(tmp_path):
    record = minimal_run()
    assert "gpu" not in record["device_used"]  # CPU runs, and runs before it, lack it
    record["device_used"]["gpu"] = {"index": 2, "uuid": "GPU-cccc", "name": "NVIDIA H100 80GB HBM3"}
    schema.write_run(tmp_path, record)
    assert schema.read_run(tmp_path)["device_used"]["gpu"]["index"] == 2
    record["device_used"]["gpu"] = {"index": "2", "uuid": None, "name": None}
    with pytest.raises(schema.SchemaError, match="device_used.gpu: field 'index' has type str"):
        schema.write_run(tmp_path, record)


def test_a_sequence_runs_authors_accuracies_are_optional_and_checked_when_present(tmp_path):
    record = minimal_run()
    assert "authors_accuracy" not in record["results"]  # other models, failed runs and runs before it lack them
    record["results"]["authors_accuracy"] = {"real_tokens": 0.61, "padding_counted": 0.83, "end_step_counted": None}
    schema.write_run(tmp_path, record)
    assert schema.read_run(tmp_path)["results"]["authors_accuracy"]["padding_counted"] == 0.83
    for bad in ({"real_tokens": 0.61, "padding_counted": 1.5, "end_step_counted": None},
                {"real_tokens": 0.61, "padding_counted": 0.83, "end_step_counted": None, "copy_task": 1.0}):
        record["results"]["authors_accuracy"] = bad
        with pytest.raises(schema.SchemaError, match="results.authors_accuracy: needs exactly real_tokens, "):
            schema.write_run(tmp_path, record)
    record["results"]["authors_accuracy"] = {"real_tokens": 0.61}
    with pytest.raises(schema.SchemaError, match="results.authors_accuracy: missing field 'padding_counted'"):
        schema.write_run(tmp_path, record)


def _iterations_run(ranks=None) -> dict:
    """An ok iteration-protocol run.json of a ranks sweep at `ranks` (None: no sweep), with its throughput."""
    spec = {"name": "cnn-mnist", "dataset": "mnist",
            "measurement": {"protocol": "iterations", "warmup": 1, "iterations": 2}}
    rec = schema.run_record(minimal_request(spec=spec, sweep={"ranks": ranks} if ranks else None))
    rows = [{"iteration": i, "phase": "warmup" if i == 1 else "measured", "time_s": 0.1, "loss": 1.0}
            for i in (1, 2, 3)]
    rec["timing"].update(schema.summarize_iterations(rows), protocol="iterations", eval_time_s=0.1,
                         setup_time_s=0.1, train_start_unix=0.0, train_end_unix=1.0)
    rec["results"].update(test_accuracy=0.5, final_loss=1.0, ranks=ranks or 1, images_per_ms=1.28)
    return schema.finish(rec, None)


def test_the_throughput_of_an_iteration_run_is_checked_on_write_and_read(tmp_path):
    for ranks in (None, 2):
        rec = _iterations_run(ranks)
        schema.write_run(tmp_path, rec)
        assert schema.read_run(tmp_path)["results"] == rec["results"]
    bad = _iterations_run(2)
    bad["results"]["ranks"] = 3
    (tmp_path / schema.RUN_FILE).write_text(json.dumps(bad))
    with pytest.raises(schema.SchemaError, match="results.ranks 3 is not the run's rank count 2"):
        schema.read_run(tmp_path)


@pytest.mark.parametrize("mutate, message", [
    (lambda r: r["results"].pop("images_per_ms"), "results.ranks and results.images_per_ms come together"),
    (lambda r: r["results"].update(images_per_ms=0.0), "images_per_ms 0.0 must be positive"),
    (lambda r: r["results"].update(ranks=1), "results.ranks 1 is not the run's rank count 2"),
    (lambda r: r["results"].update(ranks=True), "field 'ranks' has type bool"),
    (lambda r: [r["results"].pop(k) for k in ("ranks", "images_per_ms")], "an ok run of a ranks sweep needs"),
    (lambda r: [r["timing"].pop(k) for k in schema.RUN_ITERATION_TIMING_FIELDS], "only for iteration-protocol runs"),
])
def test_a_throughput_where_it_does_not_belong_or_does_not_add_up_is_refused(tmp_path, mutate, message):
    rec = _iterations_run(2)
    mutate(rec)
    with pytest.raises(schema.SchemaError, match=message):
        schema.write_run(tmp_path, rec)


def test_an_epoch_run_has_no_throughput_and_a_failed_ranks_run_needs_none():
    rec = minimal_run()
    rec["results"].update(ranks=1, images_per_ms=1.0)
    with pytest.raises(schema.SchemaError, match="only for iteration-protocol runs"):
        schema.validate_run(rec)
    failed = _iterations_run(2)
    for key in ("ranks", "images_per_ms"):
        failed["results"].pop(key)
    schema.validate_run(schema.finish(failed, {"cause": "crash", "message": "rank 1 died"}))


# What bench.blas records (its field names and types): a real entry of NumPy's bundled OpenBLAS.
_OPENBLAS = {"kind": "blas", "api": "openblas", "filepath": "<env>/numpy.libs/libscipy_openblas64_-32a4b2a6.so",
             "version": "0.3.31.188.0", "num_threads": 1, "threading_layer": "pthreads", "architecture": "Haswell"}


def test_the_loaded_libraries_are_optional_and_checked_when_present(tmp_path):
    record = minimal_run()
    assert "libraries" not in record["environment"]  # runs before it, and runs off Linux, lack it
    schema.validate_run(record)
    record["environment"]["libraries"] = [_OPENBLAS, dict(_OPENBLAS, kind="openmp", api="gomp", version=None,
                                                          filepath="/usr/lib/libgomp.so.1.0.0")]
    record["environment"]["library_settings"] = {"TF_ENABLE_ONEDNN_OPTS": None}
    schema.write_run(tmp_path, record)
    assert schema.read_run(tmp_path)["environment"]["libraries"][0] == _OPENBLAS


@pytest.mark.parametrize("libraries, settings, message", [
    ({"blas": "openblas"}, None, "environment.libraries must be a list"),
    ([dict(_OPENBLAS, kind="lapack")], None, r"libraries\[0\]: kind 'lapack' is not one of"),
    ([dict(_OPENBLAS, filepath="libopenblas.so")], None, "is neither the absolute path"),
    ([dict(_OPENBLAS, num_threads="1")], None, r"libraries\[0\]: field 'num_threads' has type str"),
    ([{k: v for k, v in _OPENBLAS.items() if k != "version"}], None, "missing field 'version'"),
    ([_OPENBLAS], {"TF_ENABLE_ONEDNN_OPTS": 0}, "library_settings must be"),
])
def test_malformed_loaded_libraries_are_refused(tmp_path, libraries, settings, message):
    record = minimal_run()
    record["environment"]["libraries"] = libraries
    if settings is not None:
        record["environment"]["library_settings"] = settings
    with pytest.raises(schema.SchemaError, match=message):
        schema.write_run(tmp_path, record)


def test_setup_failures_are_a_kind_of_their_own_validated_on_write_and_read(tmp_path):
    for cause in ("missing-library", "bad-data", "invalid-setting", "cancelled"):
        run = schema.finish(minimal_run(), {"cause": cause, "message": "the fix is named here"})
        schema.write_run(tmp_path, run)
        assert schema.failure_kind(schema.read_run(tmp_path)["failure"]) == schema.SETUP
    # Records written before the taxonomy (a crash, a timeout) read as they were: results.
    old = schema.finish(minimal_run(), {"cause": "timeout", "message": "the run exceeded its time limit"})
    (tmp_path / schema.RUN_FILE).write_text(json.dumps(old))
    assert schema.failure_kind(schema.read_run(tmp_path)["failure"]) == schema.RESULT
    with pytest.raises(schema.SchemaError, match=r"a failed run needs failure.cause in \('nan', 'oom', 'timeout', "
                                                 r"'crash', 'killed', 'cancelled', 'missing-library', 'bad-data', "
                                                 r"'invalid-setting'\)"):
        schema.write_run(tmp_path, schema.finish(minimal_run(), {"cause": "setup", "message": ""}))


_BUILD = {"implementation": "CPython", "version": "3.6.15", "compiler": "GCC 10.2.1 20210110",
          "configure": ["--enable-shared"], "pgo": False, "lto": False, "opt": "-O3"}
_BASE = {"era": "paper", "debian_release": "bullseye", "debian_version": "11.11", "python": "3.6.15",
         "source": "Python-3.6.15.tar.xz", "source_sha256": "ab" * 32, "source_kind": "stand-in",
         "configure": "--enable-shared", "pgo": "no", "cc": "gcc 10.2.1", "departs_from": "built here"}


def test_the_python_build_base_and_cpu_flags_are_optional_and_checked_when_present(tmp_path):
    record = minimal_run()
    schema.write_run(tmp_path / "old", record)  # runs before them lack them, and still read
    assert "python_build" not in schema.read_run(tmp_path / "old")["environment"]
    record["environment"].update(python_build=_BUILD, base=_BASE)
    record["host"]["cpu_flags"] = ["avx", "avx2"]
    schema.write_run(tmp_path / "new", record)
    back = schema.read_run(tmp_path / "new")
    assert (back["environment"]["python_build"], back["environment"]["base"], back["host"]["cpu_flags"]) == (
        _BUILD, _BASE, ["avx", "avx2"])


@pytest.mark.parametrize("where, value, message", [
    ("python_build", dict(_BUILD, pgo="yes"), "r.json: environment.python_build needs pgo and lto true or false$"),
    ("python_build", dict(_BUILD, configure=[1]), "environment.python_build.configure must be a list of configure"),
    ("base", dict(_BASE, source_kind="mirror"), "r.json: environment.base: source_kind 'mirror' is not one of "
                                                r"\('python.org', 'stand-in'\)$"),
    ("base", dict(_BASE, pgo="maybe"), "environment.base: pgo 'maybe' is not true, false, 'yes' or 'no'$"),
    ("base", {k: v for k, v in _BASE.items() if k != "cc"}, "environment.base: base record: missing field 'cc'$"),
    ("cpu_flags", "avx avx2", "r.json: host.cpu_flags must be a list of CPU flag names$"),
])
def test_a_malformed_python_build_base_or_cpu_flags_is_refused(where, value, message):
    record = minimal_run()
    (record["host"] if where == "cpu_flags" else record["environment"])[where] = value
    with pytest.raises(schema.SchemaError, match=message):
        schema.validate_run(record, "r.json")



def _top_level_names(source: str):
    """The names a module's source defines at its top: functions, classes, assigned names."""
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            yield node.name
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                yield from (e.id for e in getattr(target, "elts", [target]))


def test_the_package_re_exports_every_name_its_modules_define():
    """`schema.<name>` reaches each public name defined at the top of a bench/schema/ module (its __init__
    lists them once): a name added to a module but not to the package would be found missing here."""
    names = {}
    for info in pkgutil.iter_modules(schema.__path__):
        module = importlib.import_module(f"{schema.__name__}.{info.name}")
        names.update((name, module) for name in _top_level_names(Path(module.__file__).read_text(encoding="utf-8"))
                     if not name.startswith("_"))
    assert len(names) > 70 and {"read_run", "RUN_FILE", "read_monitor", "summarize_collective"} <= set(names)
    missing = sorted(n for n, module in names.items() if getattr(schema, n, None) is not getattr(module, n))
    assert not missing, f"bench/schema/__init__.py does not re-export {missing}"
