"""A runner whose 'entrypoint' is a small real process chosen per test, and a planned campaign for it.

The campaign logic (plan, execute) sees a runner through its contract only (campaign/runners):
prepare() an environment, launch() a request into its run folder (given GPUs or not), abort().
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np

from bench import atomic, hashing, schema
from campaign import plan
from campaign.requests import Environment
from campaign.runners import Outcome
from campaign.runners.docker import container_config
from campaign.runners.local import gpu_env
from tests.runrecord import minimal_run

# 'nap': the process reports the GPU it sees, sleeps, and the run is ok.
NAP = ("import os, sys, time; print('CUDA_VISIBLE_DEVICES=%s DLREPRO_GPU_UUID=%s' % ("
       "os.environ.get('CUDA_VISIBLE_DEVICES', ''), os.environ.get('DLREPRO_GPU_UUID', '')), flush=True); "
       "time.sleep(float(sys.argv[1]))")

SIZES = {"train": 600, "test": 300}


class ScriptRunner:
    """'ok' writes a valid run.json; 'crash', 'sleep' and 'kill' run a process that does so; 'nap'
    runs a process for `nap_s` seconds with the GPU environment the local runner gives (gpu_env),
    then writes a valid run.json. Each launch records when its process ran (monotonic start, end),
    its GPU, its environment and the container config the docker runner would create for it."""

    name = "local"

    def __init__(self, behaviour: str, nap_s: float = 1.0):
        self.behaviour, self.nap_s = behaviour, nap_s
        self.launched: list[str] = []
        self.spans: list[tuple[float, float]] = []
        self.gpus: list = []
        self.envs: list[dict] = []
        self.configs: list[dict] = []
        self._procs: set = set()
        self._lock = threading.Lock()

    def prepare(self, framework: str) -> Environment:
        return Environment("env-" + framework)

    def abort(self) -> None:
        with self._lock:
            procs = list(self._procs)
        for proc in procs:
            proc.send_signal(signal.SIGKILL)

    def launch(self, request: dict, run_dir, timeout_s, gpus=()):
        self.launched.append(request["run_id"])
        self.gpus.append(gpus)
        self.configs.append(container_config(request, run_dir, (1000, 1000), gpus))
        if self.behaviour == "ok":
            schema.write_run(run_dir, minimal_run(request["run_id"]))
            return Outcome(0)
        code = {"crash": "import sys; print('boom'); sys.exit(3)",
                "sleep": "import time; time.sleep(30)",
                "kill": "import os, signal; os.kill(os.getpid(), signal.SIGKILL)",
                "nap": NAP}[self.behaviour]
        env = {**os.environ, **gpu_env(gpus)}
        self.envs.append(gpu_env(gpus))
        with open(run_dir / schema.LOG_FILE, "w") as log:
            start = time.monotonic()
            proc = subprocess.Popen([sys.executable, "-c", code, str(self.nap_s)], stdout=log,
                                    stderr=subprocess.STDOUT, env=env)
            with self._lock:
                self._procs.add(proc)
            try:
                outcome = Outcome(proc.wait(timeout=timeout_s))
            except subprocess.TimeoutExpired:
                proc.kill()
                outcome = Outcome(proc.wait(), timed_out=True)
            finally:
                with self._lock:
                    self._procs.discard(proc)
                self.spans.append((start, time.monotonic()))
        if self.behaviour == "nap" and outcome.returncode == 0:
            schema.write_run(run_dir, minimal_run(request["run_id"]))
        return outcome


def prepared_mnist(data_root) -> None:
    """A small prepared MNIST in the real format (arrays.npz + meta.json, which records the arrays' sha256:
    planning and the entrypoint check it) under data_root."""
    folder = data_root / "prepared" / "mnist"
    folder.mkdir(parents=True)
    arrays = {f"{k}_{split}": np.zeros((n, 28, 28, 1) if k == "x" else n, np.uint8 if k == "x" else np.int64)
              for split, n in SIZES.items() for k in ("x", "y")}
    np.savez(folder / "arrays.npz", **arrays)
    meta = {"format_version": 1, "dataset": "mnist", "arrays_sha256": hashing.sha256_file(folder / "arrays.npz")}
    atomic.write_text(folder / "meta.json", json.dumps(meta))


def planned(tmp_path, runner, repeats=2, device="cpu") -> list:
    """cnn-mnist (smoke) x pytorch x repeats on `device`, planned into tmp_path/results/t."""
    m = plan.Matrix(("pytorch",), ("cnn-mnist",), device, "smoke", repeats, "real")
    prepared_mnist(tmp_path / "data")
    return plan.plan(m, runner, "t", tmp_path / "results" / "t", tmp_path / "data", threads=1)
