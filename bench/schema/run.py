"""run.json: its checks (validate_run), its one constructor (run_record, finish), its writer and reader (a
version 1 file upgraded on read), and the run folders of a campaign (iter_run_dirs).

What each section holds is declared in bench/schema/runfields.py. Standard library only, CPython 3.6-clean.
"""

import datetime
import json
import math
from pathlib import Path
from typing import Optional

from bench import atomic, blas, generated
from bench.measurement import INFERENCE, ITERATIONS, TIMED_BATCHES
from bench.request import WRAPPERS, container_problem, limits_problem, system_environment_problem
from bench.schema.base import (
    OPT_NUM,
    OPT_STR,
    READABLE_VERSIONS,
    RUN_FILE,
    SCHEMA_VERSION,
    SchemaError,
    _check_fields,
    _check_version,
)
from bench.schema.runfields import (
    BASE_SOURCE_KINDS,
    COLLECTIVE_FAMILY,
    FAILURE_CAUSES,
    ITERATION_STATS,
    PYTHON_BUILD_FLAGS,
    RUN_AUTHORS_ACCURACY_FIELDS,
    RUN_BASE_FIELDS,
    RUN_COLLECTIVE_FIELDS,
    RUN_COLLECTIVE_SIZE_FIELDS,
    RUN_CONFIG_FIELDS,
    RUN_DATASET_FIELDS,
    RUN_FIELDS,
    RUN_GPU_FIELDS,
    RUN_INFERENCE_FIELDS,
    RUN_ITERATION_TIMING_FIELDS,
    RUN_LIBRARY_FIELDS,
    RUN_MONITOR_CONTENTION_FIELDS,
    RUN_PYTHON_BUILD_FIELDS,
    RUN_RAW_FILE_FIELDS,
    RUN_RESULTS_FIELDS,
    RUN_THROUGHPUT_FIELDS,
    RUN_TIMING_FIELDS,
    STATUSES,
    TIMING_DEFINITION,
)


def _check_device_gpus(obj: dict, where: str) -> None:
    """device_used.gpu (rank 0's GPU) and device_used.gpus (every GPU of a run given several), when present."""
    if "gpu" in obj["device_used"]:
        _check_fields(obj["device_used"]["gpu"], RUN_GPU_FIELDS, f"{where}: device_used.gpu")
    if "gpus" in obj["device_used"]:
        gpus = obj["device_used"]["gpus"]
        if not isinstance(gpus, list) or len(gpus) < 2:
            raise SchemaError(f"{where}: device_used.gpus must list the run's GPUs (two or more), got {gpus!r}")
        for i, gpu in enumerate(gpus):
            _check_fields(gpu, RUN_GPU_FIELDS, f"{where}: device_used.gpus[{i}]")


def validate_run(obj: dict, where: str = RUN_FILE) -> dict:
    """Check a run.json object of this schema version; return it unchanged or raise SchemaError."""
    _check_fields(obj, RUN_FIELDS, where)
    _check_version(obj, where)
    _check_fields(obj["config"], RUN_CONFIG_FIELDS, f"{where}: config")
    if "sweep" in obj["config"] and not isinstance(obj["config"]["sweep"], dict):
        raise SchemaError(f"{where}: config.sweep must be an object ({{axis: value}})")
    _check_fields(obj["timing"], RUN_TIMING_FIELDS, f"{where}: timing")
    _check_iteration_timing(obj, where)
    _check_fields(obj["results"], RUN_RESULTS_FIELDS, f"{where}: results")
    _check_collective(obj, where)
    _check_throughput(obj, where)
    _check_inference(obj, where)
    _check_authors_accuracy(obj["results"].get("authors_accuracy"), f"{where}: results.authors_accuracy")
    _check_fields(obj["monitor"], {k: t for k, t in RUN_MONITOR_CONTENTION_FIELDS.items() if k in obj["monitor"]},
                  f"{where}: monitor")
    _check_fields(obj["dataset"], {k: t for k, t in RUN_DATASET_FIELDS.items() if k in obj["dataset"]},
                  f"{where}: dataset")
    _check_raw_files(obj["dataset"].get("raw_files"), f"{where}: dataset.raw_files")
    if "generated" in obj["dataset"]:
        problem = generated.recipe_problem(obj["dataset"]["generated"])
        if problem:
            raise SchemaError(f"{where}: dataset: {problem}")
    _check_device_gpus(obj, where)
    _check_libraries(obj["environment"], where)
    _check_build(obj, where)
    if obj["config"]["runner"] in ("docker",) + WRAPPERS:
        # A container run names the exact image it ran in.
        image = obj["environment"].get("image_digest")
        if not isinstance(image, str) or "sha256:" not in image:
            raise SchemaError(f"{where}: an image run needs environment.image_digest (sha256:... or name@sha256:...)")
    # A system run names the environment it found (no kit image or lock stands behind it).
    system_problem = (system_environment_problem(obj["config"]["runner"], obj["environment"])
                      or container_problem(obj["config"]["runner"], obj["environment"])
                      or limits_problem(obj["environment"]))
    if system_problem:
        raise SchemaError(f"{where}: {system_problem}")
    if obj["status"] not in STATUSES:
        raise SchemaError(f"{where}: status {obj['status']!r} is not one of {STATUSES}")
    failure = obj["failure"]
    if obj["status"] == "failed":
        if not failure or failure.get("cause") not in FAILURE_CAUSES:
            raise SchemaError(f"{where}: a failed run needs failure.cause in {FAILURE_CAUSES}")
    elif failure is not None:
        raise SchemaError(f"{where}: status ok but failure is set")
    return obj


def _check_iteration_timing(obj, where):
    """timing's iterations-protocol fields: none (epoch protocol) or all of them, consistent."""
    timing = obj["timing"]
    if not any(name in timing for name in RUN_ITERATION_TIMING_FIELDS):
        return
    _check_fields(timing, RUN_ITERATION_TIMING_FIELDS, f"{where}: timing")
    if timing["protocol"] not in TIMED_BATCHES:
        allowed = " or ".join(repr(p) for p in TIMED_BATCHES)
        raise SchemaError(f"{where}: timing.protocol {timing['protocol']!r} is not {allowed} "
                          "(the epoch protocol writes no protocol field)")
    if timing["warmup_iterations"] < 0 or timing["measured_iterations"] < 1:
        raise SchemaError(f"{where}: timing needs warmup_iterations >= 0 and measured_iterations >= 1")
    stats = timing["iteration_time_s"]
    if stats is None:
        if obj["status"] == "ok":
            raise SchemaError(f"{where}: an ok iterations run needs timing.iteration_time_s")
        return
    _check_fields(stats, dict.fromkeys(ITERATION_STATS, OPT_NUM), f"{where}: timing.iteration_time_s")
    if any(stats[name] is None for name in ITERATION_STATS if name != "std"):
        raise SchemaError(f"{where}: timing.iteration_time_s needs every statistic but std")


def _check_collective(obj, where):
    """results.collective: required by an ok run of the collective family, refused elsewhere, well-formed."""
    table = obj["results"].get("collective")
    if obj["spec"].get("family") != COLLECTIVE_FAMILY:
        if table is not None:
            raise SchemaError(f"{where}: results.collective is only for workloads of family {COLLECTIVE_FAMILY!r}")
        return
    if table is None:
        if obj["status"] == "ok":
            raise SchemaError(f"{where}: an ok collective run needs results.collective")
        return
    _check_fields(table, RUN_COLLECTIVE_FIELDS, f"{where}: results.collective")
    if table["ranks"] < 1 or table["repetitions"] < 1 or table["warmup"] < 0 or not table["sizes"]:
        raise SchemaError(f"{where}: results.collective needs ranks >= 1, repetitions >= 1, warmup >= 0 and sizes")
    for number, entry in enumerate(table["sizes"]):
        _check_fields(entry, RUN_COLLECTIVE_SIZE_FIELDS, f"{where}: results.collective.sizes[{number}]")
        if not isinstance(entry.get("checked"), bool):
            raise SchemaError(f"{where}: results.collective.sizes[{number}] needs checked = true or false")


def _check_throughput(obj, where):
    """results.ranks and results.images_per_ms: both or neither, only on iteration-protocol runs, ranks equal
    to the sweep's (1 without), required by an ok run that sweeps ranks."""
    results = obj["results"]
    present = [name for name in RUN_THROUGHPUT_FIELDS if name in results]
    swept = (obj["config"].get("sweep") or {}).get("ranks")
    if not present:
        if swept is not None and obj["status"] == "ok":
            raise SchemaError(f"{where}: an ok run of a ranks sweep needs results.ranks and results.images_per_ms")
        return
    if len(present) != len(RUN_THROUGHPUT_FIELDS):
        raise SchemaError(f"{where}: results.ranks and results.images_per_ms come together")
    if obj["timing"].get("protocol") != ITERATIONS:
        raise SchemaError(f"{where}: results.ranks and images_per_ms are only for iteration-protocol runs")
    _check_fields(results, RUN_THROUGHPUT_FIELDS, f"{where}: results")
    want = 1 if swept is None else swept
    if results["ranks"] != want:
        raise SchemaError(f"{where}: results.ranks {results['ranks']} is not the run's rank count {want!r} "
                          "(config.sweep.ranks, else 1)")
    if results["images_per_ms"] is not None and results["images_per_ms"] <= 0:
        raise SchemaError(f"{where}: results.images_per_ms {results['images_per_ms']} must be positive (or null)")


def _check_inference(obj, where):
    """results' inference figures (RUN_INFERENCE_FIELDS): all or none, only on inference-protocol runs, required
    by an ok one, positive and consistent (s_per_1000_images = 1000 / images_per_s)."""
    results = obj["results"]
    present = [name for name in RUN_INFERENCE_FIELDS if name in results]
    inference = obj["timing"].get("protocol") == INFERENCE
    if not present:
        if inference and obj["status"] == "ok":
            raise SchemaError(f"{where}: an ok inference run needs results.{', '.join(RUN_INFERENCE_FIELDS)}")
        return
    if not inference:
        raise SchemaError(f"{where}: results.{present[0]} is only for inference-protocol runs")
    _check_fields(results, RUN_INFERENCE_FIELDS, f"{where}: results")
    rate, per_1000 = results["images_per_s"], results["s_per_1000_images"]
    if results["batch_size"] < 1 or (rate is None) != (per_1000 is None) or (rate is not None and rate <= 0):
        raise SchemaError(f"{where}: results needs batch_size >= 1 and images_per_s, s_per_1000_images both "
                          "positive (or both null)")
    if rate is not None and not math.isclose(rate * per_1000, 1000.0, rel_tol=1e-9):
        raise SchemaError(f"{where}: results.s_per_1000_images {per_1000} is not 1000 / images_per_s {rate}")
    if obj["status"] == "ok" and rate is None:
        raise SchemaError(f"{where}: an ok inference run needs results.images_per_s and s_per_1000_images")


def _check_authors_accuracy(table, where):
    """results.authors_accuracy (RUN_AUTHORS_ACCURACY_FIELDS), when present: exactly its definitions, each in [0, 1]
    or null."""
    if table is None:
        return
    _check_fields(table, RUN_AUTHORS_ACCURACY_FIELDS, where)
    values = table.values()
    if set(table) != set(RUN_AUTHORS_ACCURACY_FIELDS) or any(v is not None and not 0 <= v <= 1 for v in values):
        raise SchemaError(f"{where}: needs exactly {', '.join(RUN_AUTHORS_ACCURACY_FIELDS)}, each in [0, 1] or null")


def _check_raw_files(raw_files, where):
    """dataset.raw_files, when present: {file name: {"sha256", "verified"}}."""
    if raw_files is None:
        return
    if not isinstance(raw_files, dict):
        raise SchemaError(f"{where}: expected an object, got {type(raw_files).__name__}")
    for name, entry in sorted(raw_files.items()):
        _check_fields(entry, RUN_RAW_FILE_FIELDS, f"{where}.{name}")


def _check_libraries(environment, where):
    """environment.libraries and environment.library_settings, when present."""
    libraries = environment.get("libraries")
    if libraries is not None:
        if not isinstance(libraries, list):
            raise SchemaError(f"{where}: environment.libraries must be a list of loaded libraries")
        for i, entry in enumerate(libraries):
            at = f"{where}: environment.libraries[{i}]"
            _check_fields(entry, RUN_LIBRARY_FIELDS, at)
            if entry["kind"] not in blas.KINDS:
                raise SchemaError(f"{at}: kind {entry['kind']!r} is not one of {blas.KINDS}")
            if not entry["filepath"].startswith(("/", blas.ENV_PREFIX + "/")):
                raise SchemaError(f"{at}: filepath {entry['filepath']!r} is neither the absolute path of the loaded "
                                  f"file nor its path in the run's environment ({blas.ENV_PREFIX}/...)")
    settings = environment.get("library_settings")
    if settings is not None and (not isinstance(settings, dict) or not all(
            isinstance(k, str) and isinstance(v, OPT_STR) for k, v in settings.items())):
        raise SchemaError(f"{where}: environment.library_settings must be {{variable: value or null}}")


def _check_build(obj, where):
    """environment.python_build, environment.base and host.cpu_flags, when present."""
    environment = obj["environment"]
    if "python_build" in environment:
        build = environment["python_build"]
        at = f"{where}: environment.python_build"
        _check_fields(build, RUN_PYTHON_BUILD_FIELDS, at)
        if not all(isinstance(build.get(flag), bool) for flag in PYTHON_BUILD_FLAGS):
            raise SchemaError(f"{at} needs {' and '.join(PYTHON_BUILD_FLAGS)} true or false")
        if not all(isinstance(option, str) for option in build["configure"]):
            raise SchemaError(f"{at}.configure must be a list of configure options")
    if "base" in environment:
        problem = base_problem(environment["base"])
        if problem:
            raise SchemaError(f"{where}: environment.base: {problem}")
    flags = (obj["host"] or {}).get("cpu_flags")
    if flags is not None and (not isinstance(flags, list) or not all(isinstance(f, str) for f in flags)):
        raise SchemaError(f"{where}: host.cpu_flags must be a list of CPU flag names")


def base_problem(base) -> Optional[str]:
    """Why `base` is no base record run.json can hold (RUN_BASE_FIELDS: /etc/dlrepro/base.json), or None."""
    try:
        _check_fields(base, RUN_BASE_FIELDS, "base record")
    except SchemaError as exc:
        return str(exc)
    if base["source_kind"] not in BASE_SOURCE_KINDS:
        return f"source_kind {base['source_kind']!r} is not one of {BASE_SOURCE_KINDS}"
    if base.get("pgo") not in (True, False, "yes", "no"):
        return f"pgo {base.get('pgo')!r} is not true, false, 'yes' or 'no'"
    return None


def _upgrade(obj):
    """A version 1 run.json as version 2: every run before the era existed ran the current era."""
    if isinstance(obj, dict) and obj.get("schema_version") == 1 and isinstance(obj.get("config"), dict):
        obj = dict(obj, schema_version=SCHEMA_VERSION)
        obj["config"] = dict(obj["config"])
        obj["config"].setdefault("era", "current")
        obj["config"].setdefault("threads", None)
    return obj


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def run_record(request: dict, host: Optional[dict] = None, failure: Optional[dict] = None) -> dict:
    """The run.json of a run request before its outcome is known: the one constructor of a record.

    The entrypoint makes it before training (status 'failed', cause 'crash', "did not finish", until
    finish() says otherwise); the host makes it for a run whose process died without writing one,
    with the failure it observed. `request` is a validated run request (bench/request.py).
    """
    data = request["data"]
    env = request["environment"]
    environment = {"runner": request["runner"], "env_id": env["env_id"], "image_digest": env["image_digest"]}
    if "system" in env:  # the system runner's record of the environment it found
        environment["system"] = env["system"]
    if "container" in env:  # the wrapper's image a container run ran in
        environment["container"] = env["container"]
    if "limits" in env:  # the bounds the runner put on the run (bench/request.py LIMIT_FIELDS)
        environment["limits"] = env["limits"]
    config = {key: request[key] for key in RUN_CONFIG_FIELDS}
    if request.get("sweep"):  # the study sweep's point the run is at (absent: no sweep)
        config["sweep"] = request["sweep"]
    return {
        "schema_version": SCHEMA_VERSION,
        "run_id": request["run_id"],
        "status": "failed",
        "failure": failure or {"cause": "crash", "message": "did not finish"},
        "config": config,
        "spec": request["spec"],
        "dataset": _dataset_record(data),
        "environment": environment,
        "host": host or {},
        "device_used": {"requested": request["device"]},
        "model": {},
        "timing": {"training_time_s": None, "eval_time_s": None, "setup_time_s": None,
                   "train_start_unix": None, "train_end_unix": None, "definition": TIMING_DEFINITION},
        "results": {"test_accuracy": None, "final_loss": None, "epochs_completed": 0},
        "monitor": {},
        "started_at": _now(),
        "finished_at": None,
    }


def _dataset_record(data: dict) -> dict:
    """run.json's dataset section from the request's data (raw_files only where the request has them)."""
    # sha256: the planned digest until the entrypoint has hashed the arrays it loads (bench/prepared.py
    # load, which refuses others); it then records that digest, of the bytes trained on.
    dataset = {"name": data["dataset"], "source": data["source"], "sha256": data["arrays_sha256"],
               "path": data["path"]}
    if "raw_files" in data:
        dataset["raw_files"] = data["raw_files"]
    if "generated" in data:  # data made in the run (bench/generated.py): the recipe they were made from
        dataset["generated"] = data["generated"]
    return dataset


def finish(record: dict, failure: Optional[dict]) -> dict:
    """Close a record: status ok when `failure` is None, else failed with it; stamp finished_at."""
    record["status"] = "ok" if failure is None else "failed"
    record["failure"] = failure
    record["finished_at"] = _now()
    return record


def write_run(run_dir: Path, obj: dict) -> None:
    """Validate and atomically write run.json into run_dir."""
    validate_run(obj, str(Path(run_dir) / RUN_FILE))
    atomic.write_text(Path(run_dir) / RUN_FILE, json.dumps(obj, indent=2, sort_keys=True) + "\n")


def read_run(run_dir: Path) -> dict:
    """Read and validate run.json from run_dir (version 1 files are upgraded on read)."""
    path = Path(run_dir) / RUN_FILE
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise SchemaError(f"{path}: not valid JSON ({exc})") from exc
    if isinstance(obj, dict):
        _check_version(obj, str(path), READABLE_VERSIONS)
    return validate_run(_upgrade(obj), str(path))


def iter_run_dirs(root: Path) -> list:
    """Completed run directories below a campaign folder (those holding a run.json)."""
    root = Path(root)
    if not root.is_dir():
        return []
    # Hidden folders hold runs moved aside for a retry; .partial ones are unfinished.
    return sorted(
        p.parent for p in root.glob(f"*/{RUN_FILE}")
        if not p.parent.name.startswith(".") and not p.parent.name.endswith(".partial")
    )
