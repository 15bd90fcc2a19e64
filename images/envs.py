"""Per-framework virtual environments built from the hash-locked requirements (the local runner).

Each framework and era has a lock, ``images/<framework>/<era>/requirements.txt``, the same file
its Docker image installs. ``ensure_env`` turns it into a virtual environment at
``<venv root>/<framework>-<era>-<first 12 hex of the lock's sha256>``: a changed lock gets a new
folder, so an environment can never silently run an older lock.

An environment counts as built only when its ``.complete`` marker holds the lock's sha256; the
marker is written last, so a build that was interrupted (Ctrl-C, full disk, lost network) is
deleted and rebuilt on next use instead of being trusted half-installed.

A lock's files come from the package index pip is set up with, except those a ``sources.toml``
beside it takes from another index (images/sources.py: torch's CPU build from PyTorch's CPU wheel
index): those are found or fetched on the host first and handed to pip with --find-links.

Environment variables: DLREPRO_VENV_ROOT (where environments live; default <repo>/.venv),
DLREPRO_PYTHON (the interpreter they are made from; default the running one, which must be the
Python the lock was resolved for), DLREPRO_PIP_ARGS (extra pip install options), and the index
overrides sources.toml declares (DLREPRO_TORCH_CPU_INDEX).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bench.errors import UsageError, run_cli
from bench.names import is_plain

REPO_ROOT = Path(__file__).resolve().parents[1]
IMAGES_DIR = REPO_ROOT / "images"
LOCK_NAME = "requirements.txt"
MARKER = ".complete"
# Tests and CI may share one set of environments between checkouts.
VENV_ROOT_VAR = "DLREPRO_VENV_ROOT"
# The interpreter the environments are made from; the lock must have been resolved for its version.
BASE_PYTHON_VAR = "DLREPRO_PYTHON"
# Extra pip arguments for installing the locks, e.g. "--find-links DIR", "--index-url URL" or
# "--no-index" (where every file is in a local folder).
PIP_ARGS_VAR = "DLREPRO_PIP_ARGS"
# Optional files beside a lock whose packages include an sdist that is built at install time
# (chainer): BUILD_LOCK_NAME, hash-locked build tools installed first, and PIP_ARGS_FILE, extra
# pip options for the lock itself (e.g. --no-build-isolation, so the build uses those tools).
BUILD_LOCK_NAME = "build-requirements.txt"
PIP_ARGS_FILE = "pip-install-args"


@dataclass(frozen=True)
class EnvInfo:
    """A built environment: where its interpreter is and which lock it was built from."""

    name: str
    python: Path
    lock_path: Path
    lock_sha256: str

    @property
    def path(self) -> Path:
        """The environment's folder (the parent of bin/)."""
        return self.python.parent.parent


class EnvBuildError(UsageError):
    """Installing a lock failed; reported like a UsageError (one line: the problem and the fix)."""


def venv_root() -> Path:
    """Folder holding the environments: $DLREPRO_VENV_ROOT, else <repo>/.venv."""
    override = os.environ.get(VENV_ROOT_VAR)
    return Path(override).expanduser().resolve() if override else REPO_ROOT / ".venv"


def lock_path(framework: str, era: str = "current") -> Path:
    """Path of the hash-locked requirements of a framework and era (it may not exist)."""
    return IMAGES_DIR / framework / era / LOCK_NAME


def _show(path: Path) -> str:
    """A path as users should read it: relative to the repository when inside it."""
    try:
        return str(path.relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


def _available_locks() -> list[str]:
    return sorted(f"{p.parent.parent.name}/{p.parent.name}" for p in IMAGES_DIR.glob(f"*/*/{LOCK_NAME}"))


def _read_lock(framework: str, era: str) -> tuple[Path, bytes]:
    path = lock_path(framework, era)
    if not path.is_file():
        have = ", ".join(_available_locks()) or "none"
        raise UsageError(
            f"no lock file for {framework} ({era} era): {_show(path)} is missing",
            f"run 'make lock' to generate it from requirements.in, or pick a locked one ({have})",
        )
    return path, path.read_bytes()


def env_sha256(lock: Path, data: bytes) -> str:
    """The environment's identity: the lock's sha256, folding in the build lock and pip options
    beside it when present, so changing either also gives a new environment."""
    digest = hashlib.sha256(data)
    extras = [lock.with_name(n) for n in (BUILD_LOCK_NAME, PIP_ARGS_FILE) if lock.with_name(n).is_file()]
    if not extras:
        return digest.hexdigest()  # plain locks: exactly the file's sha256
    for extra in extras:
        digest.update(b"\0" + extra.name.encode() + b"\0" + extra.read_bytes())
    return digest.hexdigest()


# The phrases the lock writers put in their headers: pip-compile's "autogenerated by pip-compile
# with Python 3.11", the current locks' "Hash-locked environment (Python 3.11" and the paper-era
# locks' "for use with Python 3.6" (images.lockfile). Prose that merely mentions a Python (the
# tests' hand-made locks say what the paper image runs) is not a declaration.
_LOCK_PYTHON = re.compile(
    r"^#.*(?:autogenerated by pip-compile with Python|Hash-locked environment \(Python|for use with Python)"
    r" (\d+\.\d+)",
    re.MULTILINE,
)


def _lock_python(lock_text: str) -> str | None:
    match = _LOCK_PYTHON.search(lock_text)
    return match.group(1) if match else None


def _base_python() -> tuple[str, str]:
    """(interpreter, its major.minor) that new environments are created from."""
    exe = os.environ.get(BASE_PYTHON_VAR)
    if not exe:
        return sys.executable, f"{sys.version_info.major}.{sys.version_info.minor}"
    out = subprocess.run(
        [exe, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        raise UsageError(f"{BASE_PYTHON_VAR}={exe} does not run", "point it at a Python 3 interpreter")
    return exe, out.stdout.strip()


def _is_complete(env_dir: Path, sha: str) -> bool:
    marker = env_dir / MARKER
    python = env_dir / "bin" / "python"
    return marker.is_file() and marker.read_text().strip() == sha and python.exists()


@contextmanager
def _build_lock(env_dir: Path) -> Iterator[None]:
    # Two runs starting at once (parallel tests, two terminals) must not build into one folder.
    env_dir.parent.mkdir(parents=True, exist_ok=True)
    with open(env_dir.with_name(env_dir.name + ".lock"), "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _run_logged(cmd: list[str], log: Path, what: str) -> None:
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(f"$ {' '.join(cmd)}\n")
        fh.flush()
        code = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL).returncode
    if code != 0:
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
        last = next((line for line in reversed(lines) if line.strip()), "(no output)")
        raise EnvBuildError(
            f"{what} failed (exit {code}): {last}",
            f"see {log}; check that the package index is reachable (extra pip options: {PIP_ARGS_VAR}) "
            "and the disk has room, then run again",
        )


def _build(env_dir: Path, lock: Path, sha: str, base_python: str, log: Path, find_links: list[str] = ()) -> None:
    if env_dir.exists():
        _say(f"removing incomplete environment {env_dir.name} (an earlier build did not finish)")
        shutil.rmtree(env_dir)
    log.write_text("")
    _run_logged([base_python, "-m", "venv", str(env_dir)], log, "creating the virtual environment")
    python = env_dir / "bin" / "python"
    # --no-deps: the lock is complete, so nothing outside it may be pulled in;
    # --require-hashes: every file must match the hash it was locked with.
    pip = [
        str(python), "-m", "pip", "install", "--require-hashes", "--no-deps",
        "--no-input", "--disable-pip-version-check", *shlex.split(os.environ.get(PIP_ARGS_VAR, "")),
    ]
    build_lock = lock.with_name(BUILD_LOCK_NAME)
    if build_lock.is_file():
        _run_logged([*pip, "-r", str(build_lock)], log, f"installing {_show(build_lock)}")
    args_file = lock.with_name(PIP_ARGS_FILE)
    extra = shlex.split(args_file.read_text(), comments=True) if args_file.is_file() else []
    _run_logged([*pip, *find_links, *extra, "-r", str(lock)], log, f"installing {_show(lock)}")
    # The lock must satisfy its own dependency metadata; a broken lock fails here, not mid-run.
    _run_logged([str(python), "-m", "pip", "check"], log, "checking the installed packages (pip check)")
    (env_dir / MARKER).write_text(sha + "\n")


def ensure_env(framework: str, era: str = "current") -> EnvInfo:
    """Return the environment of `framework` in `era`, building it from its lock on first use.

    Raises UsageError when the lock is missing or was made for another Python, and
    EnvBuildError (a UsageError) when installing fails; the build log names the cause.
    """
    if not is_plain(framework) or not is_plain(era):  # they become folder names: nothing may climb out
        raise UsageError(f"bad environment name {framework!r}/{era!r}", "use names like 'keras'/'current'")
    lock, _ = _read_lock(framework, era)
    return ensure_lock_env(lock, f"{framework}-{era}")


def ensure_lock_env(lock: Path, label: str) -> EnvInfo:
    """The environment of any hash-locked requirements file (named `label`-<lock sha256>), built on
    first use and checked with `pip check`."""
    data = Path(lock).read_bytes()
    sha = env_sha256(lock, data)
    name = f"{label}-{sha[:12]}"
    env_dir = venv_root() / name
    info = EnvInfo(name=name, python=env_dir / "bin" / "python", lock_path=lock, lock_sha256=sha)
    if _is_complete(env_dir, sha):
        return info
    base_python, version = _base_python()
    wanted = _lock_python(data.decode("utf-8", errors="replace"))
    if wanted and wanted != version:
        raise UsageError(
            f"{_show(lock)} was resolved for Python {wanted}, but {base_python} is {version}",
            f"set {BASE_PYTHON_VAR} to a Python {wanted} interpreter (or regenerate it with 'make lock')",
        )
    with _build_lock(env_dir):
        if _is_complete(env_dir, sha):  # another process finished it while we waited
            return info
        started = time.monotonic()
        # Files the lock takes from a declared index are had first: a missing one is the only line said,
        # and nothing is built. (images.sources imports this module, so it is imported here.)
        from images import sources

        find_links = sources.find_links_args(sources.fetch_all(lock))
        _say(f"creating environment {label} (first use, a few minutes)...")
        log = env_dir.with_name(env_dir.name + ".log")
        _build(env_dir, lock, sha, base_python, log, find_links)
        _say(f"environment {name} ready in {time.monotonic() - started:.0f} s")
    return info


def env_python(framework: str, era: str = "current") -> Path:
    """Interpreter of the framework's environment (built on first use)."""
    return ensure_env(framework, era).python


def main(argv: list[str] | None = None) -> int:
    """`python -m images.envs [--era ERA] FRAMEWORK...`: build (first use) or check each environment."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m images.envs", description="Build the local runner's environments.")
    ap.add_argument("--era", default="current")
    ap.add_argument("frameworks", nargs="+")
    args = ap.parse_args(argv)

    def build_all(frameworks: list[str]) -> int:
        for framework in frameworks:
            info = ensure_env(framework, args.era)
            print(f"{framework}: {info.path} (lock sha256 {info.lock_sha256[:12]})")
        return 0

    return run_cli(build_all, args.frameworks)


if __name__ == "__main__":
    sys.exit(main())
