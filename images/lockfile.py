"""versions.lock: every frozen version of the kit in one file, generated from the per-image locks.

``python -m images.lockfile write`` (run by `make lock`) writes it from:

- the base images (each era's Dockerfile pins its base by digest; Python and Debian packages come
  from images/frameworks.toml; ``BASE_NOTES`` below adds where the digest was seen and the
  registry-free route images/base/make-base.sh),
- each image's lock (images/<framework>/<era>/requirements*.txt): every package, its version and
  the sha256 of every file the lock accepts, the lock's own sha256,
- what the registry does not carry (``PAPER_SOURCES``: the CUDA runtime, torch 0.4.1, ...) and
  the CUDA each image really carries, beside what the paper says.

The paper-era locks (images/<fw>/paper/requirements.txt and requirements-gpu.txt) are resolved here
from pins.in / pins-gpu.in for CPython 3.6.15 on manylinux1/manylinux2010 x86_64, in a scratch virtual
environment holding the hash-locked tools of images/common/lock-tools.txt (pip >= 25, which applies the
target's Requires-Python; pip 23.2 did not, pypa/pip#12216). images/indexcheck.py checks the result
against the index's own metadata.

``python -m images.lockfile verify`` (run by `make verify-lock`) fails when versions.lock is stale
(a lock changed without `make lock`), and with --images compares `pip freeze --all` inside each
built image with the lock, and its installed Debian packages with those frameworks.toml pins for the
Debian release the image is built on (its /etc/os-release: the paper era's buster or bullseye base),
failing on any drift.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from bench import atomic
from bench.errors import UsageError
from bench.frameworks import ERAS
from images import build as images
from images import envs, external

LOCK_FILE = envs.REPO_ROOT / "versions.lock"
FORMAT = 1
# Paper-era pins are resolved for the image's Python and platform, not the host's: CPython 3.6, its
# own ABI, the stable ABI (psutil ships cp36-abi3 wheels) and pure wheels, on manylinux1 and
# manylinux2010 x86_64 (the image's pip 21.3.1 installs both; the lock takes manylinux1 where both exist).
PAPER_TARGET = ["--python-version", "3.6", "--implementation", "cp", "--abi", "cp36m", "--abi", "abi3",
                "--abi", "none", "--platform", "manylinux1_x86_64", "--platform", "manylinux2010_x86_64"]
LOCK_TOOLS = envs.IMAGES_DIR / "common" / "lock-tools.txt"
PAPER_BUILD_PINS = envs.IMAGES_DIR / "common" / "paper-build-pins.in"
PINS_FILES = {"cpu": "pins.in", "gpu": "pins-gpu.in"}
# pip evaluates environment markers (`cached-property; python_version < "3.8"`) for the interpreter it
# runs on, whatever --python-version says; this runs pip with the marker environment of the image's
# CPython 3.6.15 on Linux x86_64, so such dependencies are kept.
PIP_FOR_PY36 = """\
import runpy, sys
from pip._vendor.packaging import markers
env = markers.default_environment()
env.update(python_version="3.6", python_full_version="3.6.15", implementation_name="cpython",
           implementation_version="3.6.15", platform_python_implementation="CPython", os_name="posix",
           sys_platform="linux", platform_system="Linux", platform_machine="x86_64")
markers.default_environment = lambda: dict(env)
sys.argv[0] = "pip"
runpy.run_module("pip", run_name="__main__", alter_sys=True)
"""
# The resolver reads the index pip is configured with and nothing else: no constraints, find-links or
# extra indexes of this machine (a blank value clears pip's configured list; an empty one is ignored),
# so every locked file is one images/indexcheck.py can find on that index.
RESOLVER_ENV = {"PIP_CONSTRAINT": " ", "PIP_FIND_LINKS": " ", "PIP_EXTRA_INDEX_URL": " ",
                "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
# Where each era's base digest comes from, beside what the Dockerfiles and frameworks.toml say.
BASE_NOTES = {
    "current": {
        "without_registry": "images/base/make-base.sh TAG (debootstrap --variant=minbase bookworm from a Debian "
                            "mirror + docker import); BASE_IMAGE=TAG pins the build to that image's id",
        "note": "digest as published on Docker Hub for debian:bookworm-slim; this kit's CI has no registry and "
                "builds on the debootstrap route, recording the local image id in each image's labels",
    },
    "paper": {
        "provenance": "python:3.6.15-slim-buster, the last Debian 10 (buster) build of Docker Hub's official "
                      "python 3.6 image (CPython 3.6.15; not rebuilt since 3.6's end of life). The digest is the one "
                      "public Dockerfiles pin for that tag (e.g. a Salt 2018.3 test image: 'FROM "
                      "python:3.6.15-slim-buster@sha256:e10aa836...'), found by a code search in Nov 2026; "
                      "docker-library/repo-info (repos/python/remote/3.6.15-slim-buster.md) shows the tag's Dockerfile "
                      "for earlier digests. The machine that wrote this lock has no registry and could not pull it: "
                      "`make images ERA=paper` where Docker Hub answers does",
        "apt_source": "the framework packages are pinned per Debian release (images/frameworks.toml), chosen by "
                      "the base's: on the registry image (Debian 10, retired) paper.Dockerfile points apt at "
                      "Debian's archive of retired releases (DLREPRO_DEBIAN_ARCHIVE, default derived from the "
                      "image's own sources.list), Valid-Until checks off for it, and installs Debian 10's final "
                      "versions; on make base ERA=paper's Debian 11 base, apt reads the base's own sources",
        "replaces": "python:3.6-slim@sha256:d4ca3c2f... (a 2018 Debian 9 image, CPython 3.6.5-3.6.8)",
        "without_registry": "the image above stays the default where a registry answers; without one, `make base "
                            "ERA=paper` (images/base/make-paper-base.sh) builds CPython 3.6.15 here from "
                            "python.org's Python-3.6.15.tar.xz or .tgz at its published sha256 (PYTHON_SOURCE), or "
                            "from a named stand-in trusted on first use in versions.local.lock (PYTHON_STANDIN), in "
                            "a debootstrapped Debian 11 (bullseye) root with its gcc 10: ./configure "
                            "--enable-loadable-sqlite-extensions --enable-option-checking=fatal --enable-shared "
                            "--with-system-expat --with-system-ffi LDFLAGS=-Wl,-rpath,/usr/local/lib, no PGO "
                            "(PGO=yes adds --enable-optimizations); imported as dlrepro/base:paper-<inputs> and "
                            "dlrepro/base:paper, whose labels and /etc/dlrepro/base.json record the source, its "
                            "sha256 and kind, the flags and compiler. CI builds it from the stand-in "
                            "../shared/sources/Python-3.6.15.tar.xz (sha256 "
                            "71a43bd39bbd9090e0c9fd5962d77697732ed780a80ceadb949e3ba94905c345: python.org's 3.6.15 "
                            "tree repacked from deadsnakes/python3.6's upstream/3.6.15 less Misc/svnmap.txt, not "
                            "python.org's bytes)",
    },
}
# What each paper-era GPU image carries of CUDA, and why it differs from the paper (see shared FACTS
# and dlbench.md). The CUDA and cuDNN versions themselves are stated in each lock's header.
PAPER_SOURCES = {
    "tensorflow": "tensorflow-gpu==1.11.0 is a CUDA 9.0 / cuDNN 7 build (no 1.11 build for the paper's CUDA 10.0). "
                  "Its wheel carries no CUDA: it loads libcudart.so.9.0 and libcudnn.so.7, which the image does "
                  "not install yet; the host must provide them (e.g. mounted from a CUDA 9.0 runtime)",
    "keras": "as tensorflow: keras==2.2.4 on tensorflow-gpu==1.11.0, CUDA 9.0 and cuDNN 7 from the system",
    "pytorch": "torch==0.4.1 is not on the package index (no torch 0.x files): PyTorch's own wheel archive "
               "(download.pytorch.org/whl/{cpu,cu90,cu92}/torch-0.4.1-cp36-cp36m-linux_x86_64.whl). The GPU image "
               "takes cu92, which bundles CUDA 9.2 and cuDNN 7.1 in the wheel; no sha256 is published, so the "
               "build records the one it first fetched (versions.local.lock, image label)",
    "mxnet": "mxnet-cu90==1.3.0 is a CUDA 9.0 build (its libmxnet.so needs libcudart.so.9.0, libcublas.so.9.0, "
             "libcufft, libcurand and libcusolver .so.9.0 from the system; read from the wheel with HTTP range "
             "requests); mxnet-cu100 starts at 1.3.1, so the paper's CUDA 10.0 would mean another MXNet release",
    "theano": "theano==1.0.2 is an sdist; its GPU backend (libgpuarray/pygpu 0.7) is not on the package index: "
              "the paper-era image is CPU only",
    "chainer": "chainer==4.5.0 is an sdist (the paper's 4.5.2 is not on the index: 4.x ends at 4.5.0); the GPU "
               "image pairs it with cupy-cuda92==4.5.0 (cupy-cuda100 starts at 5.1.0), whose wheel bundles cuDNN "
               "and NCCL but not the CUDA 9.2 toolkit libraries: the host must provide them",
}
# Whether a paper-era GPU image really carries its CUDA runtime (in a wheel) or needs it from the host.
PAPER_CUDA_RUNTIME = {
    "tensorflow": "not in the image: tensorflow-gpu 1.11.0 loads CUDA 9.0 and cuDNN 7 libraries from the system",
    "keras": "not in the image: tensorflow-gpu 1.11.0 loads CUDA 9.0 and cuDNN 7 libraries from the system",
    "pytorch": "in the torch 0.4.1 cu92 wheel (CUDA 9.2, cuDNN 7.1), as PyTorch's wheels of that time shipped "
               "(not checked: PyTorch's archive is not reachable from the machine that wrote this)",
    "mxnet": "cuDNN linked into mxnet-cu90 1.3.0's libmxnet.so; the CUDA 9.0 libraries it loads (libcudart, "
             "libcublas, libcufft, libcurand, libcusolver .so.9.0) from the system",
    "chainer": "cuDNN and NCCL in the cupy-cuda92 4.5.0 wheel; the CUDA 9.2 toolkit libraries from the system",
}
# The paper's own statement, kept beside the choices so the report can say what differs.
PAPER_SAYS_CUDA = "CUDA 10.0, cuDNN 7.3"
PAPER_SAYS = ("CUDA 10.0 and cuDNN 7.3 for all frameworks (repository README: CUDA 9.2 / cuDNN 7.2.1 for "
              "Chainer, MXNet, PyTorch)")

_PIN = re.compile(r"(?m)^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s\\;]+)((?:\s*\\\s*\n\s*--hash=sha256:[0-9a-f]{64})*)")


def parse_lock(text: str) -> dict[str, dict]:
    """name -> {"version", "sha256": [...]} from a hash-locked requirements file."""
    out = {}
    for m in _PIN.finditer(text):
        hashes = re.findall(r"sha256:([0-9a-f]{64})", m.group(3))
        out[images._norm(m.group(1))] = {"version": m.group(2), "sha256": hashes}
    return out


def image_locks() -> list[tuple[str, str, str, Path]]:
    """(framework, era, variant, lock path) of every image lock in images/."""
    found = []
    for lock in sorted(envs.IMAGES_DIR.glob("*/*/requirements*.txt")):
        if lock.parent.name not in ERAS:
            continue  # images/host: tools, not an image
        variant = "gpu" if lock.name == "requirements-gpu.txt" else "cpu"
        found.append((lock.parent.parent.name, lock.parent.name, variant, lock))
    return found


def era_base(era: str) -> str:
    """The base image the era's Dockerfile pins by digest."""
    return images.dockerfile_base(images.ImageSpec("pytorch", era))


def _q(value) -> str:
    return json.dumps(value)  # a JSON string or list of strings is valid TOML


def _apt(value) -> str:
    """A frameworks.toml apt entry in TOML: a list, or an inline table of lists keyed by Debian release."""
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{release} = {_q(pins)}" for release, pins in value.items()) + " }"
    return _q(value)


def render() -> str:
    """The text of versions.lock, from the locks as they are now."""
    lines = ["# versions.lock: every frozen version of the kit. Generated by `make lock` "
             "(python -m images.lockfile write)",
             "# from images/*/*/requirements*.txt; `make verify-lock` checks it. Do not edit by hand.",
             f"format = {FORMAT}", f"paper_says = {_q(PAPER_SAYS)}", ""]
    packages = images.era_packages()
    for era in ERAS:
        base = {"image": era_base(era), "python": packages[era]["python"], "apt": packages[era].get("apt", []),
                **BASE_NOTES[era]}
        lines.append(f"[base.{era}]")
        lines += [f"{k} = {_q(v)}" for k, v in base.items()]
        lines.append("")
    for fw, era, variant, lock in image_locks():
        text = lock.read_text()
        spec = images.ImageSpec(fw, era, variant)
        key = f"{fw}/{era}/{variant}"
        lines.append(f'[images."{key}"]')
        lines.append(f"dockerfile = {_q(str(spec.dockerfile.relative_to(envs.REPO_ROOT)))}")
        lines.append(f"lock = {_q(str(lock.relative_to(envs.REPO_ROOT)))}")
        lines.append(f"lock_sha256 = {_q(images.lock_sha256(spec))}")
        lines.append(f"base = {_q(era_base(era))}")
        lines.append(f"apt = {_apt(packages[era].get('frameworks', {}).get(fw, {}).get('apt', []))}")
        lines.append(f"cuda = {_q(images.cuda_of_lock(text) or 'none')}")
        lines.append(f"cudnn = {_q(_cudnn_of_lock(text) or 'none')}")
        if era == "paper":
            lines.append(f"paper_says = {_q(PAPER_SAYS_CUDA)}")
            if variant == "gpu":
                lines.append(f"cuda_runtime = {_q(PAPER_CUDA_RUNTIME.get(fw, 'unknown'))}")
            lines.append(f"sources = {_q(PAPER_SOURCES.get(fw, ''))}")
        lines.append(f'[images."{key}".packages]')
        pins = {name: (pin["version"], pin["sha256"], "") for name, pin in parse_lock(text).items()}
        pins |= {images._norm(p.name): (p.version, [], p.path) for p in external.pins_of(text)}
        for name, (version, hashes, outside) in sorted(pins.items()):
            where = f", external = {_q(outside + ' (trusted on first use: versions.local.lock)')}" if outside else ""
            lines.append(f"{name} = {{ version = {_q(version)}, sha256 = {_q(hashes)}{where} }}")
        lines.append("")
    return "\n".join(lines)


def _cudnn_of_lock(text: str) -> str | None:
    m = re.search(r"(?m)^(?:# cudnn: |nvidia-cudnn-cu\d+==)(\d+(?:\.\d+|\.x)?)", text)
    return m.group(1) if m else None


@dataclass
class PaperPins:
    """What pins.in (or pins-gpu.in) asks for: requirements resolved with their dependencies, sdists
    among them (built from source at install time), files from outside the index, the build's CUDA."""

    requirements: list[str] = field(default_factory=list)
    sdists: list[str] = field(default_factory=list)
    external: list[external.ExternalPin] = field(default_factory=list)
    cuda: str | None = None
    cudnn: str | None = None


def paper_pins(framework: str, variant: str = "cpu") -> PaperPins:
    """The pins of images/<fw>/paper/pins.in (cpu) or pins-gpu.in (gpu); UsageError for a line it cannot read."""
    path = envs.IMAGES_DIR / framework / "paper" / PINS_FILES[variant]
    pins = PaperPins()
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line, _, comment = raw.partition("#")
        line = line.strip()
        key, _, value = line.partition(":")
        if not line:
            continue
        if key in ("cuda", "cudnn") and value.strip():
            setattr(pins, key, value.strip())
        elif key == "external":
            found = external.pins_of(f"# external: {value.strip()}")
            if not found:
                raise UsageError(f"{path.relative_to(envs.REPO_ROOT)}:{number}: cannot read '{raw.strip()}'",
                                 "write 'external: NAME==VERSION PATH/FILE.whl'")
            pins.external += found
        elif ":" in line:
            raise UsageError(f"{path.relative_to(envs.REPO_ROOT)}:{number}: unknown directive '{key}'",
                             "use a requirement, 'external:', 'cuda:' or 'cudnn:'")
        else:
            pins.requirements.append(line)
            if comment.strip().startswith("sdist"):
                pins.sdists.append(line)
    return pins


class PaperResolver:
    """A scratch virtual environment with the hash-locked tools of images/common/lock-tools.txt (pip >= 25,
    setuptools < 70), which resolves requirements for the paper era's CPython 3.6 target."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = Path(workdir)
        self.python = self.workdir / "tools" / "bin" / "python"
        self.standins = self.workdir / "standins"
        self.sdists: dict[str, dict] = {}  # normalized name -> {"version", "sha256", "file"}

    def _env(self) -> dict[str, str]:
        return {**os.environ, **RESOLVER_ENV}

    def _run(self, cmd: list[str], what: str) -> None:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=self._env())
        if proc.returncode != 0:
            last = next((ln for ln in reversed(proc.stderr.splitlines()) if ln.strip()), "no output")
            raise UsageError(f"{what} failed: {last.strip()[:300]}",
                             "check that the package index is reachable (PIP_INDEX_URL) and the pins exist")

    def setup(self) -> PaperResolver:
        """Create the environment and install the hash-locked tools into it."""
        self._run([sys.executable, "-m", "venv", str(self.python.parent.parent)], "creating the resolver environment")
        self._run([str(self.python), "-m", "pip", "install", "--quiet", "--require-hashes", "--no-deps",
                   "-r", str(LOCK_TOOLS)], f"installing {LOCK_TOOLS.relative_to(envs.REPO_ROOT)}")
        self.standins.mkdir(exist_ok=True)
        return self

    def pip(self, args: list[str], what: str) -> None:
        """Run the environment's pip with CPython 3.6.15's environment markers (PIP_FOR_PY36)."""
        self._run([str(self.python), "-c", PIP_FOR_PY36, *args], what)

    def stand_in(self, requirement: str) -> None:
        """Download an sdist, record its sha256, and build a wheel of it into the stand-ins folder, so
        the resolver (binary only, as a foreign target demands) can read its dependencies."""
        name = images._norm(requirement.split("==")[0])
        if name in self.sdists:
            return
        folder = self.workdir / "sdists" / name
        self.pip(["download", "--quiet", "--no-deps", "--no-binary=:all:", "--no-build-isolation", "-d", str(folder),
                  requirement], f"downloading the sdist {requirement}")
        sdist = next(folder.iterdir())
        self.pip(["wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", str(self.standins), str(sdist)],
                 f"building {sdist.name} to read its dependencies")
        self.sdists[name] = {"version": requirement.split("==", 1)[1], "file": sdist.name,
                             "sha256": hashlib.sha256(sdist.read_bytes()).hexdigest()}

    def resolve(self, requirements: list[str], with_deps: bool = True) -> list[dict]:
        """[{name, version, sha256, sdist}] for the requirements on CPython 3.6 (metadata only: wheels
        are read with HTTP range requests, nothing is installed)."""
        report = self.workdir / "report.json"
        args = ["install", "--dry-run", "--ignore-installed", "--quiet", "--target", str(self.workdir / "target"),
                "--report", str(report), *PAPER_TARGET, "--only-binary=:all:", "--use-feature=fast-deps",
                "--find-links", str(self.standins), *([] if with_deps else ["--no-deps"]), *requirements]
        self.pip(args, f"resolving {' '.join(requirements)} for CPython 3.6")
        out = []
        for item in json.loads(report.read_text())["install"]:
            name, version = images._norm(item["metadata"]["name"]), item["metadata"]["version"]
            sdist = self.sdists.get(name)
            sha = sdist["sha256"] if sdist else item["download_info"]["archive_info"]["hashes"]["sha256"]
            out.append({"name": name, "version": version, "sha256": sha, "sdist": bool(sdist)})
        return out


PAPER_LOCK_HEADER = """\
# Hash-locked paper-era environment, {what}. Do not edit by hand: `make lock`
# (python -m images.lockfile write) resolves {pins} beside it for use with Python 3.6 (CPython 3.6.15 on
# manylinux1/manylinux2010 x86_64, Requires-Python and environment markers of 3.6.15) with the pip of
# images/common/lock-tools.txt; `python -m images.indexcheck` checks every file against the index's metadata.
# Install with: pip install --require-hashes --no-deps -r build-requirements.txt, then -r <this file>
# (with the options in pip-install-args, when there is one).
"""


def _lock_text(header: str, items: list[dict], pins: PaperPins) -> str:
    lines = [header.rstrip("\n")]
    if pins.cuda:
        lines.append(f"# cuda: {pins.cuda}")
    if pins.cudnn:
        lines.append(f"# cudnn: {pins.cudnn}")
    sdists = sorted(f"{i['name']}=={i['version']}" for i in items if i.get("sdist"))
    if sdists:
        lines.append(f"# sdists, built at install time with build-requirements.txt: {', '.join(sdists)}")
    lines += [f"{pin.line()}  (PyTorch's own wheel archive, trusted on first use)" for pin in pins.external]
    lines += [f"{i['name']}=={i['version']} \\\n    --hash=sha256:{i['sha256']}" for i in sorted(items, key=_by_name)]
    return "\n".join(lines) + "\n"


def _by_name(item: dict) -> str:
    return item["name"]


def resolve_paper(framework: str, variant: str, resolver: PaperResolver) -> Path:
    """Write images/<fw>/paper/requirements.txt (cpu) or requirements-gpu.txt (gpu) from its pins file."""
    pins = paper_pins(framework, variant)
    for sdist in pins.sdists:
        resolver.stand_in(sdist)
    items = resolver.resolve(pins.requirements) if pins.requirements else []
    what = f"GPU, CUDA {pins.cuda}" if variant == "gpu" else "CPU"
    header = PAPER_LOCK_HEADER.format(what=what, pins=PINS_FILES[variant])
    out = images.ImageSpec(framework, "paper", variant).lock
    atomic.write_text(out, _lock_text(header, items, pins))
    return out


def write_build_tools(resolver: PaperResolver, folders: list[Path]) -> None:
    """Write each paper folder's build-requirements.txt (images/common/paper-build-pins.in, hash-locked for
    CPython 3.6) and, where its pins build an sdist, pip-install-args (--no-build-isolation: the sdists
    build with those tools, not with whatever an isolated build would fetch)."""
    wanted = [ln.strip() for ln in PAPER_BUILD_PINS.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    items = resolver.resolve(wanted, with_deps=False)
    header = PAPER_LOCK_HEADER.format(what="its build tools, installed first",
                                      pins="images/common/paper-build-pins.in")
    text = _lock_text(header, items, PaperPins())
    for folder in folders:
        atomic.write_text(folder / envs.BUILD_LOCK_NAME, text)
        variants = [v for v, name in PINS_FILES.items() if (folder / name).is_file()]
        has_sdists = any(paper_pins(folder.parent.name, v).sdists for v in variants)
        args = folder / envs.PIP_ARGS_FILE
        if has_sdists:
            atomic.write_text(args, "# The sdists in this folder's locks build with build-requirements.txt's tools.\n"
                                    "--no-build-isolation\n")
        elif args.exists():
            args.unlink()


def resolve_all_paper() -> None:
    """Re-resolve every paper-era lock (network: the package index) in one scratch resolver environment."""
    folders = sorted(p.parent for p in envs.IMAGES_DIR.glob("*/paper/pins.in"))
    with tempfile.TemporaryDirectory(prefix="dlrepro-resolve-") as tmp:
        print("creating the resolver environment (images/common/lock-tools.txt)")
        resolver = PaperResolver(Path(tmp)).setup()
        write_build_tools(resolver, folders)
        for folder in folders:
            for variant, pins_name in PINS_FILES.items():
                if (folder / pins_name).is_file():
                    print(f"resolving {(folder / pins_name).relative_to(envs.REPO_ROOT)} for CPython 3.6")
                    resolve_paper(folder.parent.name, variant, resolver)


GPU_LOCK_HEADER = """\
# Hash-locked GPU environment (Python 3.11, linux x86_64). Do not edit by hand: `make lock`
# regenerates it from requirements-gpu.in beside it from the wheels' metadata alone (the CUDA wheels
# are GBs; none is downloaded), in a scratch Python 3.11 virtual environment with pip >= 25.3 and
# pip-tools installed, by running from the repository root:
#   PIP_ONLY_BINARY=:all: PIP_USE_FEATURE=fast-deps PIP_FIND_LINKS=' ' pip-compile --allow-unsafe \\
#     --no-emit-find-links --no-emit-index-url --no-emit-options --strip-extras \\
#     --output-file=<this file> <the requirements-gpu.in beside it>
#   python -m images.lockfile hash <this file>   (each pin's sha256, as the package index lists it)
# Install with: pip install --require-hashes --no-deps -r <this file>
"""


def add_hashes(lock: Path) -> None:
    """Add to a lock pip-compile wrote without hashes the sha256 of the file each pin installs here.

    pip-compile --generate-hashes hashes every file of a release by downloading it whenever the index
    has no JSON API at the address it guesses, which for CUDA wheels means GBs. pip's own dry run
    (pip >= 25.3, --use-feature=fast-deps) reads only each wheel's metadata and reports the sha256 the
    index lists beside the file, so the hashes cost nothing: one per pin, the Linux x86_64 file.
    """
    text = lock.read_text()
    start = text.find("# This file is autogenerated by pip-compile")
    if start < 0:
        raise UsageError(f"{lock} was not written by pip-compile", "run 'make lock'")
    body = text[text.rfind("\n", 0, max(start - 1, 0)) + 1:]  # from the lone '#' above pip-compile's header
    body = re.sub(r" \\\n(?:\s*--hash=sha256:[0-9a-f]{64}(?: \\)?\n)+", "\n", body)  # an earlier run's hashes
    pins = re.findall(r"(?m)^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s\\;]+)$", body)
    with tempfile.TemporaryDirectory(prefix="dlrepro-hash-") as tmp:
        reqs, report = Path(tmp) / "pins.txt", Path(tmp) / "report.json"
        reqs.write_text("".join(f"{name}=={version}\n" for name, version in pins))
        # --ignore-installed: report every pin, not only those missing from this interpreter.
        cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--no-deps", "--quiet",
               "--only-binary=:all:", "--use-feature=fast-deps", "--report", str(report), "-r", str(reqs)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise UsageError(f"looking up the files of {lock.name} failed: {last}",
                             "check that the package index is reachable and pip is >= 25.3")
        items = json.loads(report.read_text())["install"]
    found = {images._norm(i["metadata"]["name"]): i["download_info"] for i in items}
    out = []
    for line in body.splitlines():
        m = re.match(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s\\;]+)$", line)
        if m:
            sha = found.get(images._norm(m.group(1)), {}).get("archive_info", {}).get("hashes", {}).get("sha256")
            if not sha:
                raise UsageError(f"{lock.name}: no sha256 listed for {line}", "use an index that lists file hashes")
            line += f" \\\n    --hash=sha256:{sha}"
        out.append(line)
    atomic.write_text(lock, GPU_LOCK_HEADER + "\n".join(out) + "\n")


def write(resolve: bool = True) -> None:
    """(Re)resolve the paper-era locks (network), then (re)write versions.lock."""
    if resolve:
        resolve_all_paper()
    atomic.write_text(LOCK_FILE, render())
    print(f"wrote {LOCK_FILE.relative_to(envs.REPO_ROOT)} ({len(image_locks())} image locks)")


def freeze_drift(lock_text: str, freeze_text: str) -> list[str]:
    """Differences between a lock and `pip freeze --all` output: missing, extra or other versions.
    pip itself (the venv's own) may differ; setuptools and wheel only when the lock does not pin them.
    Files from outside the index (`# external:` lines) count as locked."""
    locked = {n: p["version"] for n, p in parse_lock(lock_text).items()}
    locked |= {images._norm(p.name): p.version for p in external.pins_of(lock_text)}  # torch 0.4.1
    frozen = {}
    for line in freeze_text.splitlines():
        if "==" in line:
            name, version = line.split("==", 1)
            frozen[images._norm(name)] = version.strip()
    tolerated = {"pip"} | ({"setuptools", "wheel"} - set(locked))
    drift = [f"{n}: locked {v}, installed {frozen.get(n, 'nothing')}" for n, v in sorted(locked.items())
             if frozen.get(n) != v]
    drift += [f"{n}: installed {v}, not in the lock" for n, v in sorted(frozen.items())
              if n not in locked and n not in tolerated]
    return drift


# The image's Debian release and its installed packages, read inside it (no network) by its own tools.
_DPKG_SCRIPT = (". /etc/os-release; echo \"$VERSION_CODENAME\"; "
                "dpkg-query -W -f '${db:Status-Abbrev}${Package}=${Version}\\n'")


def image_debian(docker_client, image_ref: str) -> tuple[str, dict[str, str]]:
    """(the image's Debian release, installed package -> version)."""
    out = docker_client.containers.run(image_ref, entrypoint=["/bin/sh", "-c", _DPKG_SCRIPT], network_mode="none",
                                       remove=True, stdout=True, stderr=False).decode()
    release, *lines = out.splitlines()
    installed = {}
    for line in lines:
        status, _, pin = line.partition(" ")
        if status.startswith("ii"):
            name, _, version = pin.strip().partition("=")
            installed[name.split(":")[0]] = version
    return release.strip() or "unknown", installed


def debian_drift(spec: images.ImageSpec, release: str, installed: dict[str, str]) -> list[str]:
    """The era's and framework's Debian pins for `release` (frameworks.toml) that the image does not have."""
    known = images.era_releases(spec.era)
    if known and release not in known:
        return [f"built on Debian {release}, for which no {spec.era}-era packages are pinned ({', '.join(known)})"]
    wanted = " ".join(spec.packages(release).values()).split()
    pins = dict(p.split("=", 1) for p in wanted)
    return [f"Debian {release} package {name}: pinned {version}, installed {installed.get(name, 'nothing')}"
            for name, version in pins.items() if installed.get(name) != version]


def image_freeze(docker_client, image_ref: str) -> str:
    """`pip freeze --all` inside the image (no network)."""
    out = docker_client.containers.run(image_ref, entrypoint=["/opt/venv/bin/python", "-m", "pip", "freeze", "--all"],
                                       network_mode="none", remove=True, stdout=True, stderr=False)
    return out.decode()


def verify(check_images: bool, frameworks: list[str], era: str, variant: str, require_built: bool = True) -> list[str]:
    """Problems found: a stale versions.lock, and with check_images each built image's drift (an image not
    built at all is a problem with require_built, else a note: --images-if-engine compares what exists)."""
    problems = []
    if not LOCK_FILE.is_file():
        problems.append("versions.lock is missing (run 'make lock')")
    elif LOCK_FILE.read_text() != render():
        problems.append("versions.lock does not match the locks in images/ (run 'make lock' to regenerate it)")
    else:
        tomllib.loads(LOCK_FILE.read_text())  # must stay valid TOML
    if check_images:
        client = images.client()
        for fw in frameworks:
            spec = images.ImageSpec(fw, era, variant)
            spec.check()
            # The installed packages depend on the lock only: any image built from it will do.
            built = images.built_from_lock(client, spec)
            if not built:
                missing = f"{fw}: no image built from {spec.lock.relative_to(envs.REPO_ROOT)} (make images)"
                if require_built:
                    problems.append(missing)
                else:
                    print(f"note: {missing}; not compared")
                continue
            name = (built[0].tags or [built[0].id])[0]
            drift = freeze_drift(spec.lock.read_text(), image_freeze(client, built[0].id))
            release, installed = image_debian(client, built[0].id)
            apt_drift = debian_drift(spec, release, installed)
            problems += [f"{fw} ({name}): {d}" for d in drift + apt_drift]
            print(f"{fw}: pip freeze in {name} {'matches' if not drift else 'DIFFERS from'} "
                  f"{spec.lock.relative_to(envs.REPO_ROOT)}; its Debian {release} packages "
                  f"{'match' if not apt_drift else 'DIFFER from'} images/frameworks.toml")
    return problems


def main(argv: list[str] | None = None) -> int:
    """`write` or `verify [--images|--images-if-engine]`."""
    ap = argparse.ArgumentParser(prog="python -m images.lockfile")
    ap.add_argument("action", choices=("write", "verify", "hash"))
    ap.add_argument("locks", nargs="*", type=Path, help="hash: locks pip-compile wrote without hashes")
    ap.add_argument("--no-resolve", action="store_true", help="write: keep the paper-era locks as they are")
    ap.add_argument("--images", action="store_true", help="also compare pip freeze in each built image")
    ap.add_argument("--images-if-engine", action="store_true", help="--images when a Docker engine answers")
    ap.add_argument("--frameworks", default="pytorch keras")
    ap.add_argument("--era", default="current")
    ap.add_argument("--variant", default="cpu")
    a = ap.parse_args(argv)
    try:
        if a.action == "hash":
            for lock in a.locks:
                add_hashes(lock)
            return 0
        if a.action == "write":
            write(resolve=not a.no_resolve)
            return 0
        check = a.images
        if a.images_if_engine and not check:
            try:
                images.client()
                check = True
            except UsageError as exc:
                print(f"note: not comparing images ({exc.problem})")
        problems = verify(check, a.frameworks.replace(",", " ").split(), a.era, a.variant, require_built=a.images)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for p in problems:
        print(f"drift: {p}", file=sys.stderr)
    if problems:
        print(f"error: versions.lock check failed ({len(problems)} problems); see above", file=sys.stderr)
        return 1
    print("versions.lock: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
