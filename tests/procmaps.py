"""What the kernel says a process has mapped (/proc/<pid>/maps), read from outside it: the independent
account the BLAS tests hold bench/blas.py's record against."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from bench import request

REPO = Path(__file__).resolve().parents[1]


def maps_lines(pid: int) -> list[str]:
    """The file of each mapping /proc/<pid>/maps shows in that process (a loaded library has several)."""
    with open(f"/proc/{pid}/maps") as fh:
        return [f[5].strip() for f in (line.split(None, 5) for line in fh) if len(f) == 6]


def run_watched(python: Path, req: Path, out: Path, env: dict[str, str] | None = None,
                timeout: float = 900, data_root: Path | None = None) -> set[str]:
    """Run `python -m bench run` on a request into `out` (it must exit 0; its data.path resolved under
    `data_root`, by default the entrypoint's) and return every file its /proc/<pid>/maps showed while it ran,
    sampled every 50 ms."""
    data = request.data_folder(request.read(req)["data"], data_root) if data_root is not None else None
    proc = subprocess.Popen([str(python), "-m", "bench", "run", "--request", str(req), "--out", str(out),
                             *(["--data", str(data)] if data is not None else [])],
                            cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen: set[str] = set()
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            seen |= set(maps_lines(proc.pid))
        except (OSError, IndexError):  # between exit and reaping
            pass
        time.sleep(0.05)
    if proc.poll() is None:
        proc.kill()
    output = proc.communicate()[0]
    assert proc.returncode == 0, output[-3000:]
    return seen
