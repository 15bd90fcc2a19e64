"""The entrypoint: run one run request and write its run folder.

Every runner calls exactly this (`python -m bench run --request R --out D`), in a framework's
environment or as a container's entrypoint. It reads nothing but the request (bench/request.py):
the resolved workload spec, the rows of the subset, the prepared dataset (or the recipe of data it
generates itself: bench/generated.py), device, threads and seed. It owns the clocks and the
artifacts (bench/schema/); the framework module only builds and trains the model.

Training time is the sum of the epochs' training passes, each closed by a device synchronize.
The per-epoch test pass is timed separately (eval_time_s); model construction and data loading
are setup_time_s (schema.TIMING_DEFINITION). A spec whose measurement protocol is "iterations"
(bench/measurement.py) times single mini-batches instead (bench/iterations.py), over several
data-parallel ranks when the request's sweep has ranks > 1 (bench/dataparallel.py); "inference" times
forward passes only (bench/inference.py). A spec of family
"collective" trains nothing: it times the framework's own collective (bench/collectives).
CPython 3.6-clean: paper-era images run it.
"""

import math
import os
import platform
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Dict, Optional

from bench import (
    blas,
    blas_backends,
    collectives,
    dataparallel,
    failures,
    frameworks,
    generated,
    inference,
    iterations,
    measurement,
    modelplan,
    prepared,
    pythonbuild,
    request,
    schema,
    seqaccuracy,
    switches,
    threads,
)
from bench.detection import detector
from bench.errors import UsageError
from bench.frameworks import NonFiniteLoss
from bench.frameworks.common import cpu_name, majority_rate
from bench.gpu import assigned_gpus
from bench.gpu import probe as gpu_probe


def seed_everything(seed: int) -> None:
    """Seed Python's and NumPy's generators (frameworks seed their own in make_trainer)."""
    import random

    import numpy as np

    random.seed(seed)
    np.random.seed(seed)
    os.environ["PYTHONHASHSEED"] = str(seed)


def host_info() -> dict:
    """Hostname, OS, CPU model, logical and physical core counts, memory, and the GPUs NVML sees."""
    import psutil

    gpus = gpu_probe()
    return {
        "hostname": platform.node(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "cpu_model": cpu_name(),
        "cpu_count": os.cpu_count(),
        "cpu_physical_cores": threads.physical_cores(),
        "cpu_flags": blas.cpu_flags(),  # the instruction sets the BLAS's kernels were chosen by
        "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "mem_total_mb": round(psutil.virtual_memory().total / 2**20),
        "gpus": gpus.devices,
        "gpu_status": gpus.summary() if not gpus.available else "ok",
        "in_container": Path("/.dockerenv").exists(),
    }


def gpus_used(assigned: list, devices: list) -> list:
    """run.json's GPUs: the host GPUs the campaign gave this run (bench.gpu.assigned_gpus), in rank order,
    each named as NVML names it here when it lists that UUID; [] when the run was given none."""
    named = {d.get("uuid"): d.get("name") for d in devices if d.get("uuid")}
    return [{"index": gpu["index"], "uuid": gpu["uuid"], "name": named.get(gpu["uuid"]) or gpu["name"]}
            for gpu in assigned]


def classify_failure(exc: BaseException, stage: str = failures.TRAINING) -> str:
    """Map an exception that stopped the run at `stage` (bench/failures.py) to a schema failure cause: the
    setup's (not a result) or the framework's."""
    if isinstance(exc, NonFiniteLoss):
        return "nan"
    setup = failures.setup_cause(exc, stage)
    if setup is not None:
        return setup
    text = f"{type(exc).__name__} {exc}".lower()
    if isinstance(exc, MemoryError) or "out of memory" in text or "resourceexhausted" in text:
        return "oom"
    return "crash"


def stage_of(req: dict, record: dict) -> str:
    """How far the run got (bench/failures.py), read from its record: the data's sizes are recorded once the
    data is loaded, the framework's build once the framework is imported."""
    if req["data"]["source"] != request.NO_DATA and "train_examples" not in record["dataset"]:
        return failures.DATA
    return failures.TRAINING if "framework_build" in record["environment"] else failures.FRAMEWORK


def start_monitor(out_dir: Path) -> subprocess.Popen:
    """Launch the 1 s monitor beside this process, watching this process's tree."""
    return subprocess.Popen(
        [sys.executable, "-m", "bench.monitor", "--pid", str(os.getpid()), "--out",
         str(out_dir / schema.MONITOR_FILE)],
        stdin=subprocess.DEVNULL,
    )


def stop_monitor(proc: subprocess.Popen) -> None:
    """Let the monitor finish its current sample and exit."""
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


def installed_packages() -> Dict[str, str]:
    """Every distribution on sys.path (what `pip freeze` would list), read from its metadata files.

    Read directly rather than through importlib.metadata, which CPython 3.6 does not have.
    """
    found = {}
    for entry in sys.path:
        folder = Path(entry or ".")
        if not folder.is_dir():
            continue
        for meta in list(folder.glob("*.dist-info/METADATA")) + list(folder.glob("*.egg-info/PKG-INFO")):
            name = version = None
            try:
                with open(str(meta), encoding="utf-8", errors="replace") as fh:
                    for line in fh:
                        if line.startswith("Name:") and name is None:
                            name = line.split(":", 1)[1].strip()
                        elif line.startswith("Version:") and version is None:
                            version = line.split(":", 1)[1].strip()
                        elif not line.strip():
                            break  # the headers end at the first blank line
            except OSError:
                continue
            if name and version:
                found.setdefault(name.lower(), version)
    return found


def train(req: dict, data_dir: Path, out: Path, record: dict) -> None:
    """Build and train; fill record's timing, results, model and device_used as they become known."""
    wl = req["spec"]
    if collectives.is_collective(wl):  # no model and no data: the framework's own collective, timed
        record_environment(req, record)
        collectives.run(req, out, record)
        return
    t_setup = time.perf_counter()
    made = req["data"]["source"] == generated.SOURCE
    if made:  # random inputs made here, in the run's process (the setup time includes making them)
        data, digest = generated.load(req["data"]["generated"])
        if digest != req["data"]["arrays_sha256"]:
            raise RuntimeError(f"the generated data has arrays_sha256 {digest}, the "
                               f"request was planned for {req['data']['arrays_sha256']}: plan the run again")
    else:
        # data.window: a language model's own window length, cut from the prepared token streams.
        # The bytes are hashed as they are read; others than the planned ones are a UsageError (setup).
        try:
            data = prepared.load(data_dir, req["data"]["train_indices"], req["data"]["test_indices"],
                                 window=(wl.get("data") or {}).get("window"), planned=req["data"])
        except prepared.ArraysDiffer as refused:
            record["dataset"]["sha256"] = refused.sha256  # run.json names the bytes found, not those planned
            raise
        digest = data.sha256
    record["dataset"]["sha256"] = digest  # of the arrays trained on, as computed here
    detecting = detector.is_detector(wl)
    if not detecting:  # a detector reads its images' arrays by their own names (bench/detection/images.py)
        data = prepared.bind_roles(data, wl.get("arrays"))
    record["dataset"].update(train_examples=int(len(data.y_train)), test_examples=int(len(data.y_test)))
    # No floor for random labels (bench/generated.py) or for a detector (its y counts objects; mAP has no majority)
    if not made and not detecting:
        record["dataset"]["test_majority_rate"] = majority_rate(data.test["y"], data.test.get("y_len"))
    fw = record_environment(req, record)
    if dataparallel.ranks(req) > 1:  # the ranks build their own trainers, each on its shard of the rows
        dataparallel.run(req, fw, data, out, record, t_setup)
        return
    trainer = fw.make_trainer(wl, data, req["device"], req["seed"])
    record["model"]["trainable_params"] = int(trainer.param_count())
    if detecting:
        record["model"]["detector"] = detector.record(wl)
    record["device_used"].update(trainer.info())
    timing = record["timing"]
    timing["setup_time_s"] = time.perf_counter() - t_setup
    timing["training_time_s"] = 0.0
    timing["eval_time_s"] = 0.0
    protocol = measurement.of_spec(wl)
    if protocol["protocol"] == measurement.ITERATIONS:
        warmup = measurement.warmup_steps(protocol, len(data.y_train), int(wl["training"]["batch_size"]))
        iterations.run(trainer, warmup, protocol["iterations"], out, record, req["framework"], req["era"])
        # results.ranks and images_per_ms, as a sweep of ranks has
        dataparallel.record_throughput(record, int(wl["training"]["batch_size"]), [len(data.y_train)])
    elif protocol["protocol"] == measurement.INFERENCE:
        record["model"]["output_values"] = modelplan.output_values(modelplan.plan(wl))  # per image: 2,048 features
        # A batch is batch_size rows, the whole set when it is smaller (the trainers' StepRing)
        batch = min(int(wl["training"]["batch_size"]), len(data.y_train))
        inference.run(trainer, protocol["warmup"], protocol["iterations"], batch, out, record,
                      req["framework"], req["era"])
    else:
        train_epochs(trainer, wl["training"]["epochs"], out, record)
        if modelplan.LOSSES.get(wl["training"]["loss"], ("",))[0] == "sequence":
            # The final weights under the study authors' accuracy definitions too (bench/seqaccuracy.py)
            record["results"]["authors_accuracy"] = seqaccuracy.measure(trainer, data.test,
                                                                        int(wl["training"]["batch_size"]))


def record_environment(req: dict, record: dict):
    """Load the request's framework module and record its packages and build in record's environment;
    return the module."""
    fw = frameworks.load(req["framework"], req["era"])
    env = record["environment"]
    env["packages"] = installed_packages()
    env["python"] = platform.python_version()
    env["framework_build"] = fw.versions()  # what was imported, with the CUDA/cuDNN it was built for
    env["framework_version"] = env["framework_build"].get(fw.PACKAGE)
    return fw


def train_epochs(trainer, epochs: int, out: Path, record: dict) -> None:
    """The epoch protocol: `epochs` training passes, each followed by a test pass; metrics.jsonl
    gets one record per epoch, record's timing and results the sums and the last epoch's figures."""
    timing = record["timing"]
    timing["train_start_unix"] = time.time()
    metrics = schema.MetricsWriter(out)
    try:
        for epoch in range(1, epochs + 1):
            t0 = time.perf_counter()
            loss, train_acc = trainer.train_epoch()
            trainer.synchronize()
            t1 = time.perf_counter()
            if not math.isfinite(loss):
                raise NonFiniteLoss(f"loss is {loss} after epoch {epoch}")
            test_acc = float(trainer.evaluate())
            trainer.synchronize()
            t2 = time.perf_counter()
            timing["training_time_s"] += t1 - t0
            timing["eval_time_s"] += t2 - t1
            timing["train_end_unix"] = time.time()
            metrics.write({
                "epoch": epoch, "loss": float(loss),
                "train_accuracy": None if train_acc is None else float(train_acc),
                "test_accuracy": test_acc, "epoch_time_s": t1 - t0, "eval_time_s": t2 - t1,
                "end_unix": timing["train_end_unix"],
            })
            record["results"].update(test_accuracy=test_acc, final_loss=float(loss), epochs_completed=epoch)
            print(f"epoch {epoch}/{epochs}: loss {loss:.4f} test_accuracy {test_acc:.4f} "
                  f"time {t1 - t0:.2f}s (+{t2 - t1:.2f}s eval)", flush=True)
    finally:
        metrics.close()


def run(req: dict, out: Path, data_dir: Optional[Path] = None) -> int:
    """Run a validated request into `out` (its data at data_dir, default the request's data.path under the
    data root: bench.request.data_folder);
    write run.json, ok or failed with its cause; return 0 if it succeeded, 1 if it failed."""
    threads.pin(req["threads"])  # again, for callers that did not come through __main__
    blas_backends.apply(req)  # the sweep's BLAS backend, before the framework is imported
    switches.apply(req)  # the sweep's performance switches (cuDNN autotuning, kernels, layout), likewise
    seed_everything(req["seed"])
    out.mkdir(parents=True, exist_ok=True)
    data_dir = Path(data_dir or request.data_folder(req["data"]) or "")
    record = schema.run_record(req, host=host_info())
    record_build(record["environment"])
    gpus = gpus_used(assigned_gpus(), record["host"]["gpus"])
    if gpus:
        record["device_used"]["gpu"] = gpus[0]
    if len(gpus) > 1:
        record["device_used"]["gpus"] = gpus
    monitor = start_monitor(out) if req["monitor"] else None
    failure = None
    try:
        train(req, data_dir, out, record)
    except Exception as exc:  # every failure is recorded with its cause, a result or the setup's
        refused = isinstance(exc, UsageError)  # the kit's own refusal: its one line, not a traceback
        if refused:
            print(f"error: {exc}", file=sys.stderr)
        else:
            traceback.print_exc()
        failure = {"cause": classify_failure(exc, stage_of(req, record)),
                   "message": (str(exc) if refused else f"{type(exc).__name__}: {exc}")[:2000]}
    finally:
        if monitor is not None:
            stop_monitor(monitor)
    record_libraries(record["environment"])  # after training: frameworks load their BLAS lazily
    t = record["timing"]
    record["monitor"] = (summarize_monitor(out, t["train_start_unix"], t["train_end_unix"])
                         if monitor is not None else {"disabled": True})
    schema.write_run(out, schema.finish(record, failure))
    return 0 if failure is None else 1


def record_libraries(environment: dict) -> None:
    """Record in run.json's environment the BLAS and OpenMP libraries this process has loaded (bench/blas.py)
    and the settings that choose a loaded framework's CPU kernels. A failure to read them is printed and
    leaves them out (unknown): it must not cost a run that trained its run.json."""
    try:
        libraries = blas.loaded_libraries()
        settings = blas.library_settings()
    except Exception:  # any: the run.json matters more than this field
        traceback.print_exc()
        return
    if libraries is not None:  # the environment's own files named relative to it (blas.shared_path)
        environment["libraries"] = [dict(lib, filepath=blas.shared_path(lib["filepath"])) for lib in libraries]
    if settings:
        environment["library_settings"] = settings


def record_build(environment: dict, base_file: str = pythonbuild.BASE_FILE) -> None:
    """Record in run.json's environment how this Python was built and, in an image on the kit's own base, that
    base's record (`base_file`: bench/pythonbuild.py). A base record that cannot be read or is malformed is said
    in one line of the log and left out: the run's results matter more than this field."""
    environment["python_build"] = pythonbuild.python_build()
    try:
        base = pythonbuild.base_record(base_file)
        problem = None if base is None else schema.base_problem(base)
    except (OSError, ValueError) as exc:  # unreadable, or not JSON
        base, problem = None, str(exc)
    if problem:
        print(f"warning: {base_file} not recorded: {problem}", file=sys.stderr)
    elif base is not None:
        environment["base"] = base


def summarize_monitor(out: Path, t0: Optional[float], t1: Optional[float]) -> dict:
    """Summary of monitor.csv over the training window, plus the GPU status line."""
    summary = schema.summarize_monitor(list(schema.read_monitor(out)), t0, t1)
    status = gpu_probe()
    summary["gpu"] = status.summary() if not status.available else "measured"
    return summary


def main(request_path: Path, out: Path, data_dir: Optional[Path] = None) -> int:
    """Read the request (a UsageError when it is bad), write its request.json beside the results
    when `out` is another folder (so the run folder can always be run again), and run it."""
    req = request.read(request_path)
    out = Path(out)
    if (out / schema.RUN_FILE).exists():
        raise UsageError(f"{out} already holds a finished run (run.json)",
                         "give --out a new folder to run this request again")
    if Path(request_path).resolve() != (out / request.REQUEST_FILE).resolve():
        request.write(out, req)
    return run(req, out, data_dir)
