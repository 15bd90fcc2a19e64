"""The entrypoint: train one (framework, workload, profile, device, seed) and write its run directory.

Every runner calls exactly this (`python -m bench run ...`), in a framework's virtual environment
or as a container's entrypoint. It owns the clocks and the artifacts; the framework module only
builds and trains the model.

Training time is the sum of the epochs' training passes, each closed by a device synchronize.
The per-epoch test pass is timed separately (eval_time_s); model construction and data loading
are setup_time_s. The authors' notebooks timed the loop including the test passes: that figure is
training_time_s + eval_time_s.
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import os
import platform
import subprocess
import sys
import time
import traceback
from pathlib import Path

from bench import dataset, frameworks, schema, spec, threads
from bench.frameworks import NonFiniteLoss
from bench.gpu import probe as gpu_probe

TIMING_DEFINITION = (
    "training_time_s = sum over epochs of the training pass (device synchronized before each clock "
    "read); eval_time_s = sum of per-epoch test passes; setup_time_s = model build and data loading "
    "before epoch 1. The DLBench notebooks' wall time = training_time_s + eval_time_s."
)



def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Arguments shared by every runner; see bench.campaign for how they are chosen."""
    ap = argparse.ArgumentParser(prog="python -m bench run", description="Train one run.")
    ap.add_argument("--framework", required=True)
    ap.add_argument("--workload", required=True)
    ap.add_argument("--profile", default="paper")
    ap.add_argument("--device", default="cpu", choices=("cpu", "gpu"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--campaign", default="adhoc")
    ap.add_argument("--runner", default="local")
    ap.add_argument("--run-id", required=True)
    ap.add_argument("--data", type=Path, required=True, help="prepared dataset folder")
    ap.add_argument("--out", type=Path, required=True, help="run directory to write")
    ap.add_argument("--threads", type=int, default=None, help="CPU threads for the framework")
    ap.add_argument("--env-id", default=None, help="lock sha256 or image digest of the environment")
    ap.add_argument("--image-digest", default=None)
    ap.add_argument("--no-monitor", dest="monitor", action="store_false",
                    help="train without the 1 s monitor (only to measure the monitor's own overhead)")
    return ap.parse_args(argv)


def seed_everything(seed: int) -> None:
    """Seed Python's and NumPy's generators (frameworks seed their own in make_trainer)."""
    import random

    import numpy as np

    random.seed(seed)
    np.random.seed(seed)
    os.environ["PYTHONHASHSEED"] = str(seed)


def host_info() -> dict:
    """Hostname, OS, CPU model and count, memory, and the GPUs NVML sees."""
    import psutil

    cpu_model = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    gpus = gpu_probe()
    return {
        "hostname": platform.node(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "cpu_model": cpu_model,
        "cpu_count": os.cpu_count(),
        "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "mem_total_mb": round(psutil.virtual_memory().total / 2**20),
        "gpus": gpus.devices,
        "gpu_status": gpus.summary() if not gpus.available else "ok",
        "in_container": Path("/.dockerenv").exists(),
    }


def classify_failure(exc: BaseException) -> str:
    """Map an exception to a schema failure cause."""
    if isinstance(exc, NonFiniteLoss):
        return "nan"
    text = f"{type(exc).__name__} {exc}".lower()
    if isinstance(exc, MemoryError) or "out of memory" in text or "resourceexhausted" in text:
        return "oom"
    return "crash"


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


def installed_packages() -> dict[str, str]:
    """Every distribution installed in this environment (what `pip freeze` would list)."""
    from importlib import metadata

    return {d.metadata["Name"].lower(): d.version for d in metadata.distributions()}


def train(args: argparse.Namespace, record: dict) -> None:
    """Build and train; fill record's timing, results, model and device_used as they become known."""
    wl = record["spec"]
    t_setup = time.perf_counter()
    data = dataset.load(args.data, wl["data"].get("train_subset"), wl["data"].get("test_subset"))
    data = dataset.bind_roles(data, wl.get("arrays"))
    record["dataset"].update(
        sha256=data.meta["arrays_sha256"],
        source=data.meta.get("source", "real"),
        train_examples=int(len(data.y_train)),
        test_examples=int(len(data.y_test)),
    )
    fw = frameworks.load(args.framework)
    env = record["environment"]
    env["packages"] = installed_packages()
    env["python"] = platform.python_version()
    env["framework_build"] = fw.versions()  # what was imported, with the CUDA/cuDNN it was built for
    env["framework_version"] = env["framework_build"].get(fw.PACKAGE)
    trainer = fw.make_trainer(wl, data, args.device, args.seed)
    record["model"]["trainable_params"] = int(trainer.param_count())
    record["device_used"].update(trainer.info())
    timing = record["timing"]
    timing["setup_time_s"] = time.perf_counter() - t_setup
    timing["training_time_s"] = 0.0
    timing["eval_time_s"] = 0.0
    timing["train_start_unix"] = time.time()
    metrics = schema.MetricsWriter(args.out)
    try:
        for epoch in range(1, wl["training"]["epochs"] + 1):
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
            print(f"epoch {epoch}/{wl['training']['epochs']}: loss {loss:.4f} "
                  f"test_accuracy {test_acc:.4f} time {t1 - t0:.2f}s (+{t2 - t1:.2f}s eval)", flush=True)
    finally:
        metrics.close()


def new_record(args: argparse.Namespace, wl: dict) -> dict:
    """The run.json skeleton: everything known before training starts."""
    return {
        "schema_version": schema.SCHEMA_VERSION,
        "run_id": args.run_id,
        "status": "failed",
        "failure": {"cause": "crash", "message": "did not finish"},
        "config": {
            "framework": args.framework, "workload": args.workload, "profile": args.profile,
            "device": args.device, "seed": args.seed, "repeat": args.repeat,
            "campaign": args.campaign, "runner": args.runner,
        },
        "spec": wl,
        "dataset": {"name": wl["dataset"], "path": str(args.data)},
        "environment": {"runner": args.runner, "env_id": args.env_id, "image_digest": args.image_digest},
        "host": host_info(),
        "device_used": {"requested": args.device},
        "model": {},
        "timing": {
            "training_time_s": None, "eval_time_s": None, "setup_time_s": None,
            "train_start_unix": None, "train_end_unix": None, "definition": TIMING_DEFINITION,
        },
        "results": {"test_accuracy": None, "final_loss": None, "epochs_completed": 0},
        "monitor": {},
        "started_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "finished_at": None,
    }


def main(argv: list[str] | None = None) -> int:
    """Run one training and write run.json; exit 0 if it succeeded, 1 if it failed (recorded)."""
    args = parse_args(argv)
    threads.pin(args.threads)  # again, for callers that import this module directly
    seed_everything(args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    wl = spec.load(args.workload, args.profile)
    record = new_record(args, wl)
    monitor = start_monitor(args.out) if args.monitor else None
    try:
        train(args, record)
        record["status"], record["failure"] = "ok", None
    except Exception as exc:  # every failure is a result: recorded with its cause
        traceback.print_exc()
        record["failure"] = {"cause": classify_failure(exc), "message": f"{type(exc).__name__}: {exc}"[:2000]}
    finally:
        if monitor is not None:
            stop_monitor(monitor)
    t = record["timing"]
    record["monitor"] = (summarize_monitor(args.out, t["train_start_unix"], t["train_end_unix"])
                         if monitor is not None else {"disabled": True})
    record["finished_at"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    schema.write_run(args.out, record)
    return 0 if record["status"] == "ok" else 1


def summarize_monitor(out: Path, t0: float | None, t1: float | None) -> dict:
    """Summary of monitor.csv over the training window, plus the GPU status line."""
    from bench.monitor import summarize

    summary = summarize(list(schema.read_monitor(out)), t0, t1)
    status = gpu_probe()
    summary["gpu"] = status.summary() if not status.available else "measured"
    return summary
