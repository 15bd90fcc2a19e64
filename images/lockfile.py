"""versions.lock: every frozen version of the kit in one file, generated from the per-image locks.

``python -m images.lockfile write`` (run by `make lock`) writes it from:

- the base images (each era's Dockerfile pins its base by digest; Python and Debian packages come
  from images/frameworks.toml; ``BASE_NOTES`` below adds where the digest was seen and the
  registry-free route images/base/make-base.sh),
- each image's lock (images/<framework>/<era>/requirements*.txt): every package, its version and
  the sha256 of every file the lock accepts, the lock's own sha256,
- what the registry does not carry (``PAPER_SOURCES``: the CUDA runtime, torch 0.4.1, ...) and
  the CUDA each image really carries.

``python -m images.lockfile verify`` (run by `make verify-lock`) fails when versions.lock is stale
(a lock changed without `make lock`), and with --images compares `pip freeze --all` inside each
built image with the lock, failing on any drift.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from bench import atomic
from bench.errors import UsageError
from bench.frameworks import ERAS
from images import build as images
from images import envs

LOCK_FILE = envs.REPO_ROOT / "versions.lock"
FORMAT = 1
# Paper-era pins are resolved for the image's Python and platform, not the host's.
PAPER_TARGET = ["--python-version", "3.6", "--platform", "manylinux1_x86_64", "--implementation", "cp",
                "--abi", "cp36m"]
SDIST_TOOLS = envs.IMAGES_DIR / "common" / "sdist-build-requirements.txt"
# Where each era's base digest comes from, beside what the Dockerfiles and frameworks.toml say.
BASE_NOTES = {
    "current": {
        "without_registry": "images/base/make-base.sh TAG (debootstrap --variant=minbase bookworm from a Debian "
                            "mirror + docker import); BASE_IMAGE=TAG pins the build to that image's id",
        "note": "digest as published on Docker Hub for debian:bookworm-slim; this kit's CI has no registry and "
                "builds on the debootstrap route, recording the local image id in each image's labels",
    },
    "paper": {
        "note": "Docker Hub's python:3.6 images still exist (unmaintained since 2021-12). The digest is one "
                "published python:3.6-slim digest as found in public Dockerfiles; the machine that wrote this lock "
                "has no registry and could not check it: `make images ERA=paper` where Docker Hub answers does",
    },
}
# What each paper-era image carries that PyPI does not, and why (see shared FACTS and dlbench.md).
PAPER_SOURCES = {
    "tensorflow": {"cuda": "9.0", "cudnn": "7.x",
                   "from": "tensorflow-gpu==1.11.0 on PyPI is built for CUDA 9.0 / cuDNN 7; the paper's CUDA 10.0 "
                           "cannot be met with this release's wheels. CUDA 9.0 runtime and cuDNN 7.3: conda "
                           "packages cudatoolkit=9.0 and cudnn=7.3.1 (anaconda channel), installed into the image"},
    "keras": {"cuda": "9.0", "cudnn": "7.x", "from": "as tensorflow: keras==2.2.4 on tensorflow-gpu==1.11.0"},
    "pytorch": {"cuda": "9.2", "cudnn": "7.1",
                "from": "torch==0.4.1 is not on PyPI (no torch 0.x files): PyTorch's own wheel archive "
                        "(download.pytorch.org/whl/cu92/torch-0.4.1-cp36-cp36m-linux_x86_64.whl, CUDA 9.2 and "
                        "cuDNN bundled; cpu/ for the CPU image). Its sha256 is recorded when the image is first "
                        "built (this machine cannot reach that host)"},
    "mxnet": {"cuda": "9.0", "cudnn": "7.x",
              "from": "mxnet-cu90==1.3.0 on PyPI (CUDA 9.0 bundled); mxnet-cu100 starts at 1.3.1, so the paper's "
                      "CUDA 10.0 would mean another MXNet release"},
    "theano": {"cuda": "none", "cudnn": "none",
               "from": "theano==1.0.2 is an sdist on PyPI (sha256 below); its GPU backend (libgpuarray/pygpu 0.7) "
                       "is conda-only: the paper-era image is CPU"},
    "chainer": {"cuda": "9.2", "cudnn": "7.x",
                "from": "chainer==4.5.0 (CPU) is an sdist on PyPI; GPU runs pair chainer 4.5.2 with "
                        "cupy-cuda92==4.5.0 (CUDA 9.2 bundled; cupy-cuda100 starts at 5.1.0)"},
}
# The paper's own statement, kept beside the choices so the report can say what differs.
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
        lines.append(f"apt = {_q(packages[era].get('frameworks', {}).get(fw, {}).get('apt', []))}")
        if era == "paper":
            src = PAPER_SOURCES.get(fw, {})
            lines.append(f"cuda = {_q(src.get('cuda', 'none') if variant == 'gpu' else 'none')}")
            lines.append(f"cudnn = {_q(src.get('cudnn', 'none') if variant == 'gpu' else 'none')}")
            lines.append(f"sources = {_q(src.get('from', ''))}")
        else:
            lines.append(f"cuda = {_q(images.cuda_of_lock(text) or 'none')}")
            lines.append(f"cudnn = {_q(_cudnn_of_lock(text) or 'none')}")
        lines.append(f'[images."{key}".packages]')
        for name, pin in sorted(parse_lock(text).items()):
            lines.append(f"{name} = {{ version = {_q(pin['version'])}, sha256 = {_q(pin['sha256'])} }}")
        lines.append("")
    return "\n".join(lines)


def _cudnn_of_lock(text: str) -> str | None:
    m = re.search(r"(?m)^nvidia-cudnn-cu\d+==(\d+\.\d+)", text)
    return m.group(1) if m else None


def paper_pins(framework: str) -> tuple[list[str], list[str], list[str]]:
    """(resolved with dependencies, sdists pinned alone, external pieces) from images/<fw>/paper/pins.in."""
    deps, sdists, external = [], [], []
    for raw in (envs.IMAGES_DIR / framework / "paper" / "pins.in").read_text().splitlines():
        line, _, comment = raw.partition("#")
        line = line.strip()
        if not line:
            continue
        if line.startswith("external:"):
            external.append(line.split(":", 1)[1].strip())
        elif comment.strip() == "sdist":
            sdists.append(line)
        else:
            deps.append(line)
    return deps, sdists, external


def pip_report(requirements: list[str], with_deps: bool, binary_only: bool = True) -> list[dict]:
    """Resolve requirements for the paper-era target with pip's --dry-run --report (nothing is
    installed; PyPI serves the wheels' metadata on its own): [{name, version, url, sha256}]."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="dlrepro-resolve-") as tmp:
        report = Path(tmp) / "report.json"
        cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
               "--disable-pip-version-check", "--target", str(Path(tmp) / "t"), "--report", str(report), *PAPER_TARGET]
        cmd += ["--only-binary=:all:"] if binary_only else []
        cmd += [] if with_deps else ["--no-deps"]
        # The host pip's own constraints and local wheel folders are for the host's Python, not this target.
        env = {**__import__("os").environ, "PIP_CONSTRAINT": "", "PIP_FIND_LINKS": ""}
        if not binary_only:
            # An sdist's metadata comes from running its setup.py; old ones (chainer 4.5) need the
            # hash-locked build tools (setuptools < 70) of images/common/sdist-build-requirements.txt.
            tools = Path(tmp) / "tools"
            subprocess.run([sys.executable, "-m", "venv", str(tools)], check=True)
            subprocess.run([str(tools / "bin" / "python"), "-m", "pip", "install", "--quiet", "--require-hashes",
                            "--no-deps", "--disable-pip-version-check", "-r", str(SDIST_TOOLS)], check=True, env=env)
            cmd = [str(tools / "bin" / "python"), *cmd[1:], "--no-build-isolation"]
        proc = subprocess.run([*cmd, *requirements], capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise UsageError(f"resolving {' '.join(requirements)} for Python 3.6 failed: {last}",
                             "check that the package index is reachable")
        items = json.loads(report.read_text())["install"]
    return [{"name": images._norm(i["metadata"]["name"]), "version": i["metadata"]["version"],
             "url": i["download_info"]["url"], "sha256": i["download_info"]["archive_info"]["hashes"]["sha256"]}
            for i in items]


def resolve_paper(framework: str) -> Path:
    """Write images/<fw>/paper/requirements.txt: every pin with its dependencies, one sha256 each."""
    deps, sdists, external = paper_pins(framework)
    found = pip_report(deps, with_deps=True) if deps else []
    for sdist in sdists:
        found += pip_report([sdist], with_deps=False, binary_only=False)
    lines = ["# Hash-locked paper-era environment (CPython 3.6, manylinux1 x86_64). Do not edit by hand:",
             "# `make lock` regenerates it from pins.in beside it (python -m images.lockfile write).",
             "# Install with: pip install --require-hashes --no-deps -r <this file>"]
    for ext in external:
        lines.append(f"# not from the package index (see versions.lock): {ext}")
    for item in sorted(found, key=lambda i: i["name"]):
        lines.append(f"{item['name']}=={item['version']} \\\n    --hash=sha256:{item['sha256']}")
    out = envs.IMAGES_DIR / framework / "paper" / envs.LOCK_NAME
    atomic.write_text(out, "\n".join(lines) + "\n")
    return out


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
        for pins in sorted(envs.IMAGES_DIR.glob("*/paper/pins.in")):
            print(f"resolving {pins.relative_to(envs.REPO_ROOT)} for Python 3.6")
            resolve_paper(pins.parent.parent.name)
    atomic.write_text(LOCK_FILE, render())
    print(f"wrote {LOCK_FILE.relative_to(envs.REPO_ROOT)} ({len(image_locks())} image locks)")


def freeze_drift(lock_text: str, freeze_text: str) -> list[str]:
    """Differences between a lock and `pip freeze --all` output: missing, extra or other versions.
    pip itself (the venv's own) may differ; setuptools and wheel only when the lock does not pin them."""
    locked = {n: p["version"] for n, p in parse_lock(lock_text).items()}
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


def image_freeze(docker_client, image_ref: str) -> str:
    """`pip freeze --all` inside the image (no network)."""
    out = docker_client.containers.run(image_ref, entrypoint=["/opt/venv/bin/python", "-m", "pip", "freeze", "--all"],
                                       network_mode="none", remove=True, stdout=True, stderr=False)
    return out.decode()


def verify(check_images: bool, frameworks: list[str], era: str, variant: str) -> list[str]:
    """Problems found: a stale versions.lock, and with check_images each built image's drift."""
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
                problems.append(f"{fw}: no image built from {spec.lock.relative_to(envs.REPO_ROOT)} (make images)")
                continue
            name = (built[0].tags or [built[0].id])[0]
            drift = freeze_drift(spec.lock.read_text(), image_freeze(client, built[0].id))
            problems += [f"{fw} ({name}): {d}" for d in drift]
            print(f"{fw}: pip freeze in {name} {'matches' if not drift else 'DIFFERS from'} "
                  f"{spec.lock.relative_to(envs.REPO_ROOT)}")
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
        problems = verify(check, a.frameworks.replace(",", " ").split(), a.era, a.variant)
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
