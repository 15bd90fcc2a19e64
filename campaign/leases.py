"""Leases: at most one process anywhere runs a given run id of a campaign at a time.

A lease is a file `<campaign>/.claims/<run_id>` (LEASES_DIR: the folder keeps its older name) created
with O_CREAT|O_EXCL, which is atomic on a local filesystem and on NFS (v3 and later) and Lustre, where
advisory locks (flock, fcntl) are not dependable. It names its holder (host, pid, and the executor's
own id for it: a Slurm array task, a Kubernetes pod) and is touched every HEARTBEAT_S while its run is
in flight, so a lease left behind by a holder that died can be told from a live one: on the holder's
own host its pid is gone; from elsewhere its heartbeat stopped STALE_S ago. A stale lease is renamed
aside (atomic) before a new one is made, so two processes breaking it at once cannot both win the new one.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from pathlib import Path

# On disk the lease folder keeps the name it had when leases were called claims: a lease excludes only
# processes that look at the same path, and an older checkout on the same results folder, or a Kubernetes
# pod whose script was frozen into a manifest submitted before the rename, still takes `.claims/<run_id>`.
LEASES_DIR = ".claims"
HEARTBEAT_S = 30.0
STALE_S = 600.0


def lease_path(campaign_dir: Path, run_id: str) -> Path:
    """Where the lease of `run_id` lives."""
    return Path(campaign_dir) / LEASES_DIR / run_id


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    return True


def read(campaign_dir: Path, run_id: str) -> dict | None:
    """The lease's holder record (with 'age_s', seconds since its last heartbeat), or None if none is held."""
    path = lease_path(campaign_dir, run_id)
    try:
        text, mtime = path.read_text(), path.stat().st_mtime
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        info = json.loads(text)
    except ValueError:
        info = {}  # caught between create and write: a live lease being made
    return {**info, "age_s": max(0.0, time.time() - mtime)}


def is_stale(info: dict) -> bool:
    """Whether a lease's holder is gone: its pid is dead on this host, or its heartbeat stopped."""
    if info.get("host") == socket.gethostname() and isinstance(info.get("pid"), int):
        if not _pid_alive(info["pid"]):
            return True
    return info["age_s"] > STALE_S


def describe(info: dict) -> str:
    """'host vm pid 123 (slurm 12_3)': who holds a lease, for progress lines."""
    extra = f" ({info['executor']} {info['executor_id']})" if info.get("executor_id") else ""
    return f"host {info.get('host', '?')} pid {info.get('pid', '?')}{extra}"


class Lease:
    """A held lease; keeps itself fresh (heartbeat) until released."""

    def __init__(self, path: Path, token: str) -> None:
        self.path, self.token = path, token
        self._stop = threading.Event()
        self._beat = threading.Thread(target=self._heartbeat, daemon=True)
        self._beat.start()

    def _heartbeat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            try:
                os.utime(self.path)
            except OSError:
                return

    def still_ours(self) -> bool:
        """Whether the lease file is still this holder's (not broken as stale by another process)."""
        try:
            return json.loads(self.path.read_text()).get("token") == self.token
        except (OSError, ValueError):
            return False

    def release(self) -> None:
        """Give the lease up (its run is published, or was stopped)."""
        self._stop.set()
        if self.still_ours():
            try:
                self.path.unlink()
            except FileNotFoundError:
                pass


def take(campaign_dir: Path, run_id: str, executor: str = "local", executor_id: str = "") -> Lease | None:
    """Lease `run_id` to this process; None when a live holder has it. A stale lease is broken
    (renamed aside, kept for inspection) and taken over."""
    path = lease_path(campaign_dir, run_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    token = uuid.uuid4().hex
    record = {"token": token, "host": socket.gethostname(), "pid": os.getpid(), "executor": executor,
              "executor_id": executor_id, "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    for _ in range(2):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            info = read(campaign_dir, run_id)
            if info is None:
                continue  # released meanwhile: try again
            if not is_stale(info):
                return None
            try:
                os.rename(path, path.with_name(f".stale-{run_id}-{token}"))
            except FileNotFoundError:
                pass  # another process broke it first; the O_EXCL create decides who wins
            continue
        with os.fdopen(fd, "w") as fh:
            fh.write(json.dumps(record, sort_keys=True) + "\n")
        return Lease(path, token)
    return None
