"""The system runner: each run in the Python environment the campaign itself runs on, as it is.

For environments that already exist (an HPC module, a vendor container with its own CUDA build, a
machine with a preinstalled framework and no route to a package index): no virtual environment is
built and no image. Runs use the campaign's own interpreter (sys.executable) with the payload
(bench/) put in front of whatever PYTHONPATH the environment sets.

No kit lock stands behind such an environment, so it is identified by what is installed: env_id is
the sha256 of `pip freeze` (where pip is absent, of the sorted name==version of every installed
distribution, read with importlib.metadata), headed by a line naming the Python version, so the
same packages on another Python are another environment. The request's environment.system
(bench/request.py) records it with the Python, the framework module's versions and the CUDA it was
built for; run.json carries it, and the report labels these runs as a system environment, never
pooled with runs in kit images or locked environments.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from bench.errors import UsageError
from bench.request import PACKAGES_SOURCES, data_folder
from campaign.requests import Environment
from campaign.runners import NOT_APPLIED, GpuSlot, Outcome
from campaign.runners.local import REPO, abort_all, launch_entrypoint

PIP_FREEZE, METADATA = PACKAGES_SOURCES
# Importing a framework (TensorFlow with CUDA) can take a while; listing packages is quick.
PROBE_TIMEOUT_S = 600
FREEZE_TIMEOUT_S = 300
_MARK = "dlrepro-probe: "
# Run in the environment's own interpreter: does the framework module (and the monitor's psutil)
# import, what does it report, and which distributions are installed.
_PROBE = f"""
import json, platform, sys
out = {{"python": platform.python_version(), "executable": sys.executable}}
try:
    import psutil  # the run's monitor
    from bench import frameworks
    module = frameworks.load(sys.argv[1], sys.argv[2])
    out["versions"] = {{str(k): str(v) for k, v in module.versions().items()}}
    out["package"] = module.PACKAGE
except ImportError as exc:
    out["missing"], out["error"] = exc.name or "", "%s: %s" % (type(exc).__name__, exc)
except Exception as exc:
    out["error"] = "%s: %s" % (type(exc).__name__, exc)
try:
    from importlib import metadata
    dists = {{}}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if name:
            dists.setdefault(name.lower(), "%s==%s" % (name, dist.version))
    out["distributions"] = sorted(dists.values(), key=str.lower)
except ImportError:
    out["distributions"] = None
print("{_MARK}" + json.dumps(out), flush=True)
"""


def payload_path(existing: str | None = None) -> str:
    """PYTHONPATH for a run: the payload first, then what the environment already sets (an HPC
    module's packages may live there)."""
    existing = os.environ.get("PYTHONPATH", "") if existing is None else existing
    return os.pathsep.join([str(REPO), *(p for p in existing.split(os.pathsep) if p)])


def packages_sha256(python_version: str, packages: list[str]) -> str:
    """The environment's identity: sha256 of its package list (sorted, one a line) headed by
    'python==<version>'."""
    lines = [f"python=={python_version}", *sorted((p.strip() for p in packages if p.strip()), key=str.lower)]
    return hashlib.sha256(("\n".join(lines) + "\n").encode()).hexdigest()


def label(system: dict) -> str:
    """How the report and the campaign name a system environment, e.g. 'system environment (not a kit
    image or lock): Python 3.11.7 (/usr/bin/python3), packages sha256 0123456789ab (pip freeze),
    torch 2.5.1 (CUDA 12.4)'."""
    package = system.get("framework_package") or "?"
    version = (system.get("frameworks") or {}).get(package, "?")
    cuda = f"CUDA {system['cuda']}" if system.get("cuda") else "no CUDA"
    return (f"system environment (not a kit image or lock): Python {system.get('python', '?')} "
            f"({system.get('executable', '?')}), packages sha256 {str(system.get('packages_sha256', '?'))[:12]} "
            f"({system.get('packages_source', '?')}), {package} {version} ({cuda})")


def _run_python(python: str, args: list[str], timeout_s: float) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": payload_path(), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    try:
        return subprocess.run([python, *args], cwd=REPO, env=env, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=timeout_s)
    except OSError as exc:
        raise UsageError(f"the system Python {python} does not run ({exc.strerror})",
                         "run the campaign with the Python you mean (make ... PYTHON=/path/to/python)") from None
    except subprocess.TimeoutExpired:
        raise UsageError(f"{python} {' '.join(args[:1])} did not finish in {timeout_s:.0f} s",
                         "check that environment by hand, or use RUNNER=local") from None


def probe(python: str, framework: str, era: str) -> dict:
    """What the framework's module reports in `python` (see _PROBE), or a UsageError naming what
    does not import and the fix."""
    proc = _run_python(python, ["-c", _PROBE, framework, era], PROBE_TIMEOUT_S)
    lines = [line[len(_MARK):] for line in proc.stdout.splitlines() if line.startswith(_MARK)]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise UsageError(f"{python} could not be checked for {framework} (exit {proc.returncode}: {tail})",
                         "check that Python by hand, or use RUNNER=local")
    found = json.loads(lines[-1])
    missing = found.get("missing")
    if missing is not None:
        package = missing.split(".")[0] or "its packages"
        raise UsageError(f"{framework} cannot run in the system Python {python}: {found['error']}",
                         f"pip install {package} into it, or use RUNNER=local (a locked environment)")
    if "error" in found:
        raise UsageError(f"{framework} does not import in the system Python {python}: {found['error']}",
                         "repair that environment, or use RUNNER=local (a locked environment)")
    return found


def installed_packages(python: str, distributions: list[str] | None) -> tuple[list[str], str]:
    """The environment's package list and how it was made: `pip freeze` where pip is installed,
    else the distributions importlib.metadata lists (name==version)."""
    proc = _run_python(python, ["-m", "pip", "freeze"], FREEZE_TIMEOUT_S)
    if proc.returncode == 0:
        return proc.stdout.splitlines(), PIP_FREEZE
    if distributions is None:
        raise UsageError(f"{python} has neither pip nor importlib.metadata to list its packages",
                         "use a Python >= 3.8, or RUNNER=local")
    return distributions, METADATA


def without_home(path: str) -> str:
    """`path` with the user's home folder written '~' (an artifact names no user)."""
    home = os.path.expanduser("~").rstrip("/")
    return "~" + path[len(home):] if home and (path == home or path.startswith(home + "/")) else path


def system_block(found: dict, packages: list[str], source: str) -> dict:
    """The request's environment.system from a probe's findings and the package list."""
    versions = dict(found["versions"])
    versions.pop("python", None)
    return {
        "python": found["python"], "executable": without_home(found["executable"]),
        "packages_sha256": packages_sha256(found["python"], packages), "packages_source": source,
        "frameworks": versions, "framework_package": found["package"], "cuda": versions.get("cuda"),
    }


class SystemRunner:
    """Runs the entrypoint with the campaign's own interpreter (or `python`), building nothing."""

    name = "system"

    def __init__(self, device: str = "cpu", era: str = "current", python: str | Path | None = None,
                 data_root: Path | None = None) -> None:
        self.device, self.era, self.data_root = device, era, data_root
        self.python = str(python or sys.executable)
        self._packages: tuple[list[str], str] | None = None

    def prepare(self, framework: str) -> Environment:
        """Check that the framework imports here; identify the environment by its installed packages."""
        found = probe(self.python, framework, self.era)
        if self._packages is None:
            self._packages = installed_packages(self.python, found.get("distributions"))
        system = system_block(found, *self._packages)
        # No pre-flight table here: the environment, not a kit lock, decides its CUDA (a vendor
        # container may carry forward-compatibility libraries), so the framework's own build speaks.
        if self.device == "gpu" and not system["cuda"]:
            version = system["frameworks"].get(system["framework_package"], "?")
            raise UsageError(f"{system['framework_package']} {version} in {self.python} is not built with CUDA, "
                             "but this is a GPU campaign",
                             "use a Python with a CUDA build of it (PYTHON=...), or the cpu-* target")
        print(f"  {label(system)}", flush=True)
        return Environment(system["packages_sha256"], system=system, limits=NOT_APPLIED.record())

    def launch(self, request: dict, run_dir: Path, timeout_s: float | None,
               gpus: tuple[GpuSlot, ...] = ()) -> Outcome:
        """Start the entrypoint in its own process group (seeing only `gpus` when given); kill the
        whole group on timeout."""
        return launch_entrypoint(self.python, run_dir, timeout_s, pythonpath=payload_path(), gpus=gpus,
                                 data_dir=data_folder(request["data"], self.data_root))

    def abort(self) -> None:
        """Kill every run in flight (the campaign was stopped)."""
        abort_all()
