"""A runner whose 'entrypoint' is a small real process chosen per test, and a planned campaign for it.

The campaign logic (plan, execute) sees a runner through its contract only (campaign/runners):
prepare() an environment, launch() a request into its run folder.
"""

import subprocess
import sys

import numpy as np

from bench import atomic, schema
from campaign import plan
from campaign.requests import Environment
from campaign.runners import Outcome
from tests.runrecord import minimal_run

SIZES = {"train": 600, "test": 300}


class ScriptRunner:
    """'ok' writes a valid run.json; 'crash', 'sleep' and 'kill' run a process that does so."""

    name = "local"

    def __init__(self, behaviour: str):
        self.behaviour = behaviour
        self.launched: list[str] = []

    def prepare(self, framework: str) -> Environment:
        return Environment("env-" + framework)

    def launch(self, request: dict, run_dir, timeout_s):
        self.launched.append(request["run_id"])
        if self.behaviour == "ok":
            schema.write_run(run_dir, minimal_run(request["run_id"]))
            return Outcome(0)
        code = {"crash": "import sys; print('boom'); sys.exit(3)",
                "sleep": "import time; time.sleep(30)",
                "kill": "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"}[self.behaviour]
        with open(run_dir / schema.LOG_FILE, "w") as log:
            proc = subprocess.Popen([sys.executable, "-c", code], stdout=log, stderr=subprocess.STDOUT)
            try:
                return Outcome(proc.wait(timeout=timeout_s))
            except subprocess.TimeoutExpired:
                proc.kill()
                return Outcome(proc.wait(), timed_out=True)


def prepared_mnist(data_root) -> None:
    """A small prepared MNIST in the real format (arrays.npz + meta.json) under data_root."""
    folder = data_root / "prepared" / "mnist"
    folder.mkdir(parents=True)
    arrays = {f"{k}_{split}": np.zeros((n, 28, 28, 1) if k == "x" else n, np.uint8 if k == "x" else np.int64)
              for split, n in SIZES.items() for k in ("x", "y")}
    np.savez(folder / "arrays.npz", **arrays)
    atomic.write_text(folder / "meta.json", '{"format_version": 1, "dataset": "mnist", "arrays_sha256": "abc"}')


def planned(tmp_path, runner, repeats=2) -> list:
    """cnn-mnist (smoke) x pytorch x repeats, planned into tmp_path/results/t."""
    m = plan.Matrix(("pytorch",), ("cnn-mnist",), "cpu", "smoke", repeats, "real")
    prepared_mnist(tmp_path / "data")
    return plan.plan(m, runner, "t", tmp_path / "results" / "t", tmp_path / "data", threads=1)
