"""A real full or read-only file system for the tests of the one-line OSError messages (bench.errors.run_cli).

The tests run as root, whom permission bits do not stop, and a mocked errno would not show what the
kit's writes really do. MountSpace holds a private mount namespace (unshare -m, for the life of one
`sleep` process): a tmpfs of a given size mounted there fills up for real, and a bind mount remounted
read-only refuses writes for real, while the host's mounts stay as they are. Commands run inside it
(nsenter); the test reads the files through /proc/<pid>/root, which sees that namespace's mounts.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest


class MountSpace:
    """A private mount namespace, for a `with` block."""

    def __init__(self) -> None:
        if os.geteuid() != 0 or not (shutil.which("unshare") and shutil.which("nsenter")):
            pytest.skip("a private mount namespace needs root and util-linux's unshare and nsenter")
        self._holder = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sleep", "infinity"])
        deadline = time.monotonic() + 10
        while os.readlink(f"/proc/{self._holder.pid}/ns/mnt") == os.readlink("/proc/self/ns/mnt"):
            if self._holder.poll() is not None or time.monotonic() > deadline:
                pytest.skip("unshare -m cannot make a mount namespace here (no CAP_SYS_ADMIN)")
            time.sleep(0.01)

    def run(self, *argv: str | Path, cwd: Path | None = None, env: dict | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess:
        """Run argv inside the namespace in the folder `cwd` (text output captured)."""
        # Entering a mount namespace moves to its root; nsenter --wd would open the folder on the host's mounts.
        cd = ["sh", "-c", 'cd "$0" && exec "$@"', str(cwd)] if cwd is not None else []
        return subprocess.run(["nsenter", "-t", str(self._holder.pid), "-m", "--", *cd, *map(str, argv)], env=env,
                              capture_output=True, text=True, timeout=timeout)

    def mount(self, *argv: str | Path) -> None:
        """`mount argv...` inside the namespace; a failure skips the test (this machine cannot mount)."""
        proc = self.run("mount", *argv)
        if proc.returncode != 0:
            pytest.skip(f"mount {' '.join(map(str, argv))} failed here: {proc.stderr.strip()}")

    def tmpfs(self, where: Path, size: str) -> None:
        """A tmpfs of `size` (e.g. '4m') at `where`: it fills up for real."""
        self.mount("-t", "tmpfs", "-o", f"size={size}", "tmpfs", where)

    def read_only(self, where: Path) -> None:
        """Make the folder `where` read-only inside the namespace (a bind mount of itself, remounted ro)."""
        self.mount("--bind", where, where)
        self.mount("-o", "remount,bind,ro", where)

    def path(self, inside: Path) -> Path:
        """Where the test process reads the namespace's `inside` (an absolute path)."""
        return Path(f"/proc/{self._holder.pid}/root") / Path(inside).relative_to("/")

    def __enter__(self) -> MountSpace:
        return self

    def __exit__(self, *exc: object) -> None:
        """End the namespace (its mounts go with it)."""
        self._holder.kill()
        self._holder.wait()


def digests(folder: Path) -> dict[str, str]:
    """{relative path: sha256} of every file under folder (what must not change)."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(Path(folder).rglob("*")) if p.is_file()}
