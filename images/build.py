"""Framework images: which files make one, its tag and labels, and building, pushing and pulling it.

An image is the era's Dockerfile (``images/<era>.Dockerfile``) built for one framework over a
context this module assembles:

    Dockerfile                   images/<era>.Dockerfile
    install-lock.sh              images/common/install-lock.sh
    lock/requirements.txt        images/<framework>/<era>/requirements.txt (requirements-gpu.txt for gpu)
    lock/build-requirements.txt  (when the lock has one) and lock/pip-install-args
    build-inputs/certs/*.crt     optional extra CA certificates (empty when none)
    build-inputs/wheels/*.whl    optional local wheelhouse, only the files the lock names (empty when none),
                                 plus the files the lock takes from outside the index (images/external.py:
                                 torch 0.4.1, trusted on first use; their hash lines are added to the staged lock)
                                 and from an index its sources.toml declares (images/sources.py: torch
                                 2.13.0+cpu from PyTorch's CPU wheel index, fetched on the host)
    bench/                       the in-image payload: bench/ without other eras' framework modules

The framework's Debian packages (images/frameworks.toml) are build arguments; the labels are set
here (``labels``) and nowhere else. Its tag, ``dlrepro/<framework>:<era>-<variant>-<12 hex>``, is a
hash of everything that decides the image's content (Dockerfile, install script, lock files, the
packages, the payload, the base image reference), so an unchanged image is reused and a changed
input builds a new one; host code (campaign/, images/, data/, analysis/) never enters an image and
never changes a tag. The build inputs are left out of that hash on purpose: the lock's hashes
decide what gets installed, wherever pip finds it.

The base is chosen per era in one place (``base_image``): BASE_IMAGE when set; else the era's local
base (``dlrepro/base:bookworm`` from ``make base``, ``dlrepro/base:paper`` from ``make base ERA=paper``)
when the engine has it; else the Dockerfile's own default. It must be pinned: the Dockerfile's
default is a digest, and a base given by tag (a local base, or BASE_IMAGE=TAG) is resolved to the
local image's id before the build, so every build names its base by digest. A base labelled for another
era (org.dlrepro.base-era) is refused. The base's Debian release (its label org.dlrepro.debian-release,
else its /etc/os-release; the paper Dockerfile's default is buster) picks the release's package pins
from images/frameworks.toml, so it enters the tag through the packages.

Environment variables read at build time (never written into the repository):
DLREPRO_CA_CERTS (':'-separated certificate files; default the first of PIP_CERT,
REQUESTS_CA_BUNDLE, SSL_CERT_FILE that exists), DLREPRO_WHEELHOUSE (':'-separated folders;
default PIP_FIND_LINKS and --find-links folders in DLREPRO_PIP_ARGS), PIP_INDEX_URL and
PIP_EXTRA_INDEX_URL (passed to the install stage only), DLREPRO_BUILD_NETWORK (the build's
network mode, default host: the build's pip then reaches what the host reaches), DLREPRO_DEBIAN_ARCHIVE
(paper era: where apt finds Debian's retired releases; default derived inside the build from the base
image's own apt source), images/external.py's DLREPRO_TORCH_ARCHIVE, DLREPRO_LOCAL_LOCK and
DLREPRO_EXTERNAL_CACHE, and the index overrides sources.toml declares (DLREPRO_TORCH_CPU_INDEX).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

from bench.errors import UsageError
from bench.frameworks import ERAS, module_era
from images import envs, external, sources
from images.sources import env_paths, wheelhouses
from images.sources import norm as _norm

REPO = envs.REPO_ROOT
IMAGES = envs.IMAGES_DIR
PAYLOAD = REPO / "bench"
INSTALL_SCRIPT = IMAGES / "common" / "install-lock.sh"
FRAMEWORKS_FILE = IMAGES / "frameworks.toml"
REPOSITORY = "dlrepro"
VARIANTS = ("cpu", "gpu")
LABEL_PREFIX = "org.dlrepro."
BASE_IMAGE_VAR = "BASE_IMAGE"
_PINNED = re.compile(r"(^sha256:[0-9a-f]{64}$)|(@sha256:[0-9a-f]{64}$)")
_BASE_ARG = re.compile(r"^ARG BASE_IMAGE=(\S+)", re.MULTILINE)
# A paper-era lock states the CUDA its build was made for in a header line (tensorflow-gpu 1.11 and
# torch 0.4.1 name no CUDA in their package names).
_CUDA_LINE = re.compile(r"(?m)^# cuda: (\d+\.\d+)\b")
DEBIAN_ARCHIVE_VAR = "DLREPRO_DEBIAN_ARCHIVE"
BASE_ERA_LABEL = f"{LABEL_PREFIX}base-era"
DEBIAN_RELEASE_LABEL = f"{LABEL_PREFIX}debian-release"
# The local base an era's images are built on when no BASE_IMAGE is given and the engine has it.
ERA_BASES = {"current": "dlrepro/base:bookworm", "paper": "dlrepro/base:paper"}
_CODENAME = re.compile(r'(?m)^VERSION_CODENAME="?([a-z0-9-]+)"?\s*$')


def era_packages() -> dict:
    """images/frameworks.toml: per era its Debian packages ("apt") and, per framework, its own."""
    with open(FRAMEWORKS_FILE, "rb") as fh:
        return tomllib.load(fh)


def default_release(era: str) -> str:
    """The Debian release of the era's Dockerfile default base (frameworks.toml's `debian`)."""
    return era_packages()[era]["debian"]


def _tables(era: str) -> list[dict]:
    table = era_packages()[era]
    return [table, *table.get("frameworks", {}).values()]


def era_releases(era: str) -> list[str]:
    """The Debian releases the era pins packages for (its apt tables' keys); empty when its packages are one
    list, whatever the base."""
    found: dict[str, None] = {}
    for entry in _tables(era):
        if isinstance(entry.get("apt"), dict):
            found |= dict.fromkeys(entry["apt"])
    return list(found)


def apt_packages(entry: dict, release: str) -> list[str]:
    """An entry's Debian packages ("apt") for a Debian release: a list holds for any release, a table is
    keyed by release."""
    apt = entry.get("apt", [])
    return list(apt.get(release, [])) if isinstance(apt, dict) else list(apt)


def check_release(era: str, release: str, base: str | None = None) -> None:
    """UsageError when the era pins its packages per release and not for this (base's) release."""
    known = era_releases(era)
    if known and release not in known:
        what = f"base image {base} is Debian {release}, but" if base else f"for Debian {release}:"
        raise UsageError(f"{what} the {era} era's Debian packages are pinned for {' and '.join(known)} only "
                         "(images/frameworks.toml)",
                         f"unset BASE_IMAGE to build on the era's own base, or pin the packages for {release}")


@dataclass(frozen=True)
class ImageSpec:
    """One image: a framework in an era, CPU or GPU variant."""

    framework: str
    era: str = "current"
    variant: str = "cpu"

    @property
    def folder(self) -> Path:
        """images/<framework>/<era>/: the framework's locks for the era."""
        return IMAGES / self.framework / self.era

    @property
    def dockerfile(self) -> Path:
        """images/<era>.Dockerfile: one per era, the framework a build argument."""
        return IMAGES / f"{self.era}.Dockerfile"

    @property
    def lock(self) -> Path:
        """The lock installed into the image."""
        return self.folder / ("requirements-gpu.txt" if self.variant == "gpu" else envs.LOCK_NAME)

    def check(self) -> None:
        """UsageError unless the era, the framework's entry in frameworks.toml, the Dockerfile and the lock exist."""
        if self.variant not in VARIANTS:
            raise UsageError(f"unknown image variant '{self.variant}'", f"choose from: {', '.join(VARIANTS)}")
        if self.era not in ERAS:
            raise UsageError(f"unknown era '{self.era}'", f"choose from: {', '.join(ERAS)} (ERA=...)")
        known = era_packages()[self.era].get("frameworks", {})
        if self.framework not in known:
            raise UsageError(f"no {self.era}-era image for '{self.framework}'",
                             f"choose from: {', '.join(sorted(known))} (FRAMEWORKS=...)")
        for path in (self.dockerfile, self.lock):
            if not path.is_file():
                raise UsageError(f"no image for {self.framework} ({self.era}, {self.variant}): "
                                 f"{path.relative_to(REPO)} is missing",
                                 "pick another ERA/VARIANT, or run 'make lock' for a missing lock")

    def packages(self, release: str | None = None) -> dict[str, str]:
        """The Debian packages as build arguments, ERA_PACKAGES and FRAMEWORK_PACKAGES, for the base's Debian
        release (default: that of the Dockerfile's own base)."""
        release = release or default_release(self.era)
        check_release(self.era, release)
        era = era_packages()[self.era]
        own = apt_packages(era.get("frameworks", {}).get(self.framework, {}), release)
        return {"ERA_PACKAGES": " ".join(apt_packages(era, release)), "FRAMEWORK_PACKAGES": " ".join(own)}


def lock_files(spec: ImageSpec) -> dict[str, Path]:
    """Name inside the context's lock/ folder -> the file it is copied from."""
    files = {envs.LOCK_NAME: spec.lock}
    for name in (envs.BUILD_LOCK_NAME, envs.PIP_ARGS_FILE):
        if (spec.folder / name).is_file():
            files[name] = spec.folder / name
    return files


def lock_sha256(spec: ImageSpec) -> str:
    """The lock's identity, as the local runner computes it (label org.dlrepro.lock-sha256)."""
    return envs.env_sha256(spec.lock, spec.lock.read_bytes())


def payload_files(era: str) -> list[Path]:
    """What an image of `era` carries of the kit: the Python modules of bench/, less the framework
    modules of other eras (bench/frameworks/<framework>/<other era>*.py; and nothing else: bench/ruff.toml
    is the host's lint setting)."""
    def other_era(p: Path) -> bool:
        return p.parent.parent == PAYLOAD / "frameworks" and module_era(p.stem) not in (None, era)

    return sorted(p for p in PAYLOAD.rglob("*.py") if "__pycache__" not in p.parts and not other_era(p))


def inputs_sha256(spec: ImageSpec, base: str | None, release: str | None = None) -> str:
    """Hash of everything that decides the image's content (not the optional build inputs); the base's Debian
    release enters through the packages pinned for it."""
    digest = hashlib.sha256()
    parts = [("Dockerfile", spec.dockerfile), ("install-lock.sh", INSTALL_SCRIPT)]
    parts += [(f"lock/{name}", path) for name, path in sorted(lock_files(spec).items())]
    parts += [(str(p.relative_to(REPO)), p) for p in payload_files(spec.era)]
    for name, path in parts:
        digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    args = "".join(f"{k}={v}\0" for k, v in sorted(spec.packages(release).items()))
    digest.update(f"{args}framework={spec.framework}\0base={base or 'dockerfile-default'}\0"
                  f"variant={spec.variant}".encode())
    return digest.hexdigest()


def tag(spec: ImageSpec, base: str | None, release: str | None = None) -> str:
    """dlrepro/<framework>:<era>-<variant>-<first 12 hex of inputs_sha256>."""
    return f"{REPOSITORY}/{spec.framework}:{spec.era}-{spec.variant}-{inputs_sha256(spec, base, release)[:12]}"


def cuda_of_lock(lock_text: str) -> str | None:
    """The CUDA runtime (x.y) a lock installs, read from its `# cuda:` line or its CUDA wheels; None for a CPU lock."""
    stated = _CUDA_LINE.search(lock_text)
    if stated:
        return stated.group(1)
    # CUDA 12 wheels carry the major version in the name (nvidia-cuda-runtime-cu12, tensorflow[and-cuda]);
    # from CUDA 13 on they do not (nvidia-cuda-runtime==13.0.96, torch 2.13): the version says it.
    runtime = re.search(r"(?m)^nvidia-cuda-runtime(?:-cu\d+)?==(\d+)\.(\d+)", lock_text)
    if runtime:
        return f"{runtime.group(1)}.{runtime.group(2)}"
    bundled = re.search(r"(?m)^(?:mxnet|cupy)-cu(?:da)?(\d+?)(\d)==", lock_text)  # mxnet-cu112: CUDA 11.2
    return f"{bundled.group(1)}.{bundled.group(2)}" if bundled else None


def external_label(pin: external.ExternalPin) -> str:
    """The label carrying the sha256 an external file was trusted with (org.dlrepro.external.<name>)."""
    return f"{LABEL_PREFIX}external.{_norm(pin.name)}"


def labels(spec: ImageSpec, base: str | None, fetched: list[external.FetchedFile] = (),
           release: str | None = None) -> dict[str, str]:
    """Labels every image carries: framework, era, variant, the lock hash, the inputs hash (of the packages for
    the base's Debian release), the base, for GPU images the CUDA runtime they carry (read by the GPU
    pre-flight), and for each file taken from outside the index the sha256 it was trusted with and where from."""
    cuda = cuda_of_lock(spec.lock.read_text()) if spec.variant == "gpu" else None
    trusted = {external_label(f.pin): f"sha256:{f.sha256} {f.pin.path}" for f in fetched}
    return {**({f"{LABEL_PREFIX}cuda": cuda} if cuda else {}), **trusted,
        f"{LABEL_PREFIX}framework": spec.framework, f"{LABEL_PREFIX}era": spec.era,
        f"{LABEL_PREFIX}variant": spec.variant, f"{LABEL_PREFIX}lock-sha256": lock_sha256(spec),
        f"{LABEL_PREFIX}inputs-sha256": inputs_sha256(spec, base, release),
        f"{LABEL_PREFIX}base-image": base or "dockerfile-default",
    }


# --- build inputs -------------------------------------------------------------------------------

def ca_cert_files() -> list[Path]:
    """Extra CA certificates for the build's pip: $DLREPRO_CA_CERTS, else the host pip's bundle."""
    if "DLREPRO_CA_CERTS" in os.environ:
        return [p for p in env_paths("DLREPRO_CA_CERTS") if p.is_file()]
    for var in ("PIP_CERT", "REQUESTS_CA_BUNDLE", "SSL_CERT_FILE"):
        path = Path(os.environ.get(var, ""))
        if os.environ.get(var) and path.is_file():
            return [path]
    return []


def locked_names(lock_text: str) -> set[str]:
    """Normalized project names pinned in a lock (`name==version`)."""
    return {_norm(m.group(1)) for m in re.finditer(r"(?m)^([A-Za-z0-9][A-Za-z0-9._-]*)==", lock_text)}


def index_build_args() -> dict[str, str]:
    """PIP_INDEX_URL / PIP_EXTRA_INDEX_URL for the install stage; file:// URLs mean nothing inside a build."""
    out = {}
    for var in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL"):
        urls = [u for u in os.environ.get(var, "").split() if not u.startswith("file:")]
        if urls:
            out[var] = " ".join(urls)
    return out


def era_build_args(era: str, release: str | None = None) -> dict[str, str]:
    """Build arguments only an era's Dockerfile declares: the paper era's DEBIAN_ARCHIVE when set, and the
    base's DEBIAN_RELEASE where the era pins packages per release."""
    archive = os.environ.get(DEBIAN_ARCHIVE_VAR, "").strip()
    out = {"DEBIAN_ARCHIVE": archive} if era == "paper" and archive else {}
    if era_releases(era):
        out["DEBIAN_RELEASE"] = release or default_release(era)
    return out


def stage_context(spec: ImageSpec, dest: Path, fetched: list[external.FetchedFile] = (),
                  indexed: list[Path] = ()) -> dict[str, int]:
    """Assemble the build context in dest; return how many certificates and wheels went in. `fetched`
    (external.fetch_all of the lock) adds the files from outside the index with their hash lines;
    `indexed` (sources.fetch_all of the lock) the files it takes from a declared index, whose hashes
    the lock already carries."""
    shutil.copy2(spec.dockerfile, dest / "Dockerfile")
    shutil.copy2(INSTALL_SCRIPT, dest / "install-lock.sh")
    (dest / "lock").mkdir()
    for name, path in lock_files(spec).items():
        shutil.copy2(path, dest / "lock" / name)
    certs, wheels = dest / "build-inputs" / "certs", dest / "build-inputs" / "wheels"
    certs.mkdir(parents=True)
    wheels.mkdir()
    for i, cert in enumerate(ca_cert_files()):
        shutil.copy2(cert, certs / f"extra-{i}.crt")
    wanted = set()
    for path in lock_files(spec).values():
        wanted |= locked_names(path.read_text())
    for whl in indexed:
        external.link_or_copy(whl, wheels / whl.name)
    n_wheels = len(indexed)
    for folder in wheelhouses():
        for whl in sorted(folder.glob("*.whl")):
            if _norm(whl.name.split("-", 1)[0]) in wanted and not (wheels / whl.name).exists():
                external.link_or_copy(whl, wheels / whl.name)
                n_wheels += 1
    external.stage(list(fetched), dest / "lock", wheels)
    n_wheels += len(fetched)
    for path in payload_files(spec.era):
        target = dest / path.relative_to(REPO)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    return {"certs": len(list(certs.iterdir())), "wheels": n_wheels}


# --- engine ---------------------------------------------------------------------------------------

def client():
    """A docker SDK client, or a UsageError saying no engine answers."""
    try:
        import docker
        from docker.errors import DockerException
    except ImportError:
        raise UsageError("the docker SDK for Python is not installed in this environment",
                         "run 'make host' (it is in images/host/requirements.txt)") from None
    try:
        c = docker.from_env(timeout=600)
        c.ping()
        return c
    except DockerException as exc:
        raise UsageError(f"no Docker engine answers ({str(exc).splitlines()[0][:200]})",
                         "start dockerd (or set DOCKER_HOST), or use RUNNER=local") from None


def is_pinned(ref: str) -> bool:
    """Whether an image reference names a digest (name@sha256:... or a bare image id)."""
    return bool(_PINNED.search(ref))


def resolve_base(docker_client, ref: str | None) -> str | None:
    """The base image pinned by digest: a digest is kept, a local tag becomes its image id."""
    if not ref:
        return None
    if is_pinned(ref):
        return ref
    from docker.errors import ImageNotFound

    try:
        return docker_client.images.get(ref).id
    except ImageNotFound:
        raise UsageError(f"base image '{ref}' is given by tag and is not on this engine",
                         "pin it by digest (name@sha256:...) or make it first (make base)") from None


def dockerfile_base(spec: ImageSpec) -> str:
    """The base the era's Dockerfile pins by digest (its ARG BASE_IMAGE default)."""
    found = _BASE_ARG.search(spec.dockerfile.read_text())
    if not found:
        raise UsageError(f"{spec.dockerfile} has no 'ARG BASE_IMAGE=...' default",
                         "pin the base there by digest")
    return found.group(1)


# What to do when the base cannot be pulled: each era has a registry-free base (make base; for the paper
# era, CPython 3.6.15 built from source on Debian 11, which later builds find by its tag).
BASE_FIXES = {
    "current": "make base (a Debian 12 base without any registry; later builds use it), or RUNNER=local",
    "paper": "make base ERA=paper (CPython 3.6.15 built from source, no registry needed; the paper images then "
             "build on dlrepro/base:paper), or pull the image where a registry answers and 'docker save' it into "
             "'docker load' here",
}


def base_image(docker_client, era: str) -> str | None:
    """The base `era`'s images are built on, for every caller (make images, the docker and Charliecloud
    runners): BASE_IMAGE when set; else the era's local base (ERA_BASES: made by `make base` and
    `make base ERA=paper`) when the engine has it; else None, the Dockerfile's pinned default."""
    given = os.environ.get(BASE_IMAGE_VAR, "").strip()
    if given:
        return given
    local = ERA_BASES.get(era)
    return local if local and find(docker_client, local) is not None else None


def os_release_codename(docker_client, image_id: str) -> str | None:
    """VERSION_CODENAME of the image's /etc/os-release, read from its file system (a container is created,
    never started); None when it has none."""
    import io
    import tarfile

    from docker.errors import NotFound

    container = docker_client.containers.create(image_id, command=["true"], network_disabled=True)
    try:
        # /etc/os-release is a symbolic link to /usr/lib/os-release on newer releases.
        for path in ("/usr/lib/os-release", "/etc/os-release"):
            try:
                chunks, _ = container.get_archive(path)
            except NotFound:
                continue
            with tarfile.open(fileobj=io.BytesIO(b"".join(chunks))) as tar:
                member = tar.next()
                if member is None or not member.isfile():
                    continue
                found = _CODENAME.search(tar.extractfile(member).read().decode(errors="replace"))
                return found.group(1) if found else None
        return None
    finally:
        container.remove(force=True)


def base_release(docker_client, base: str | None, era: str) -> str:
    """The base's Debian release (None: the Dockerfile's default base, whose release frameworks.toml names),
    pulling a pinned base that is not here yet. UsageError for a base labelled for another era, or of a
    release the era pins no packages for."""
    if base is None:
        return default_release(era)
    ensure_base(docker_client, base, era)
    image = docker_client.images.get(base)
    found = image.labels or {}
    base_era = found.get(BASE_ERA_LABEL)
    if base_era and base_era != era:
        own = f"{ERA_BASES[era]} when made, else the Dockerfile's base" if era in ERA_BASES else "the Dockerfile's base"
        raise UsageError(f"base image {(image.tags or [base])[0]} is made for the {base_era} era "
                         f"({BASE_ERA_LABEL}={base_era}), not for ERA={era}",
                         f"unset BASE_IMAGE (ERA={era} then builds on {own}) or set it to a {era}-era base")
    release = found.get(DEBIAN_RELEASE_LABEL) or os_release_codename(docker_client, image.id) or "unknown"
    check_release(era, release, (image.tags or [base])[0])
    return release


def ensure_base(docker_client, ref: str, era: str = "current") -> None:
    """The base image is on this engine, pulled if it is not; a UsageError naming the
    registry-free route when it cannot be pulled (offline hosts, no registry)."""
    from docker.errors import APIError, ImageNotFound

    try:
        docker_client.images.get(ref)
        return
    except ImageNotFound:
        pass
    _say(f"pulling base image {ref} ...")
    try:
        docker_client.images.pull(ref)
    except APIError as exc:
        reason = str(exc.explanation or exc).splitlines()[0][:200]
        raise UsageError(f"base image {ref} is not on this engine and cannot be pulled ({reason})",
                         BASE_FIXES.get(era, BASE_FIXES["current"])) from None


def find(docker_client, image_tag: str):
    """The local image with this tag, or None."""
    from docker.errors import ImageNotFound

    try:
        return docker_client.images.get(image_tag)
    except ImageNotFound:
        return None


def check_trusted(image, fetched_before: dict[str, dict], spec: ImageSpec) -> None:
    """UsageError when a reused image carries an external file other than the one versions.local.lock records."""
    for pin in external.pins_of(spec.lock.read_text()):
        known = fetched_before.get(pin.path, {}).get("sha256")
        carried = (image.labels or {}).get(external_label(pin), "")
        if known and carried and not carried.startswith(f"sha256:{known} "):
            raise UsageError(f"image {(image.tags or [image.id])[0]} carries {pin.path} {carried.split()[0]}, but "
                             f"{external.local_lock_path().name} records sha256:{known}",
                             f"docker rmi {image.id[:19]} to rebuild it with the recorded file")


def built_from_lock(docker_client, spec: ImageSpec) -> list:
    """Local images of spec built from its current lock (whatever payload they carry), newest first."""
    wanted = {"framework": spec.framework, "era": spec.era, "variant": spec.variant, "lock-sha256": lock_sha256(spec)}
    found = docker_client.images.list(filters={"label": [f"{LABEL_PREFIX}{k}={v}" for k, v in wanted.items()]})
    return sorted(found, key=lambda image: image.attrs.get("Created", ""), reverse=True)


def digest(image) -> str:
    """What run.json records: the registry digest (name@sha256:...) when the image has one, else its id."""
    repo_digests = image.attrs.get("RepoDigests") or []
    return repo_digests[0] if repo_digests else image.id


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Planned:
    """What an image is built on and called: its base pinned (None: the Dockerfile's default), the base's
    Debian release, and the tag."""

    base: str | None
    release: str
    tag: str


def plan(docker_client, spec: ImageSpec, base_ref: str | None) -> Planned:
    """The pinned base, its Debian release and the image's tag (the base is pulled when pinned and absent;
    the Dockerfile's default base is not needed to name the image)."""
    spec.check()
    base = resolve_base(docker_client, base_ref)
    release = base_release(docker_client, base, spec.era)
    return Planned(base, release, tag(spec, base, release))


def build(docker_client, spec: ImageSpec, base_ref: str | None = None, quiet: bool = False):
    """Build the image (or reuse it when its tag exists); return the docker SDK Image. base_ref: what
    base_image() chose (None: the Dockerfile's default)."""
    return build_planned(docker_client, spec, plan(docker_client, spec, base_ref), quiet)


def build_planned(docker_client, spec: ImageSpec, planned: Planned, quiet: bool = False):
    """build() of an image plan() has named."""
    base, release, image_tag = planned.base, planned.release, planned.tag
    existing = find(docker_client, image_tag)
    if existing is not None:
        check_trusted(existing, external.recorded(), spec)
        _say(f"image {image_tag} is built ({existing.id[:19]}), reused")
        return existing
    ensure_base(docker_client, base or dockerfile_base(spec), spec.era)
    # Files from outside the index (torch 0.4.1): fetched on the host, trusted on first use; files from a
    # declared index (torch 2.13.0+cpu) fetched on the host too, where a loopback mirror answers.
    fetched = external.fetch_all(spec.lock.read_text())
    indexed = sources.fetch_all(spec.lock)
    build_args = {**spec.packages(release), **index_build_args(), **era_build_args(spec.era, release)}
    if base:
        build_args[BASE_IMAGE_VAR] = base
    with tempfile.TemporaryDirectory(prefix="dlrepro-build-") as ctx:
        counts = stage_context(spec, Path(ctx), fetched, indexed)
        _say(f"building {image_tag} ({counts['certs']} extra CA files, {counts['wheels']} wheelhouse files) ...")
        log: list[str] = []
        stream = docker_client.api.build(
            path=ctx, tag=image_tag, buildargs=build_args, labels=labels(spec, base, fetched, release), rm=True,
            forcerm=True,
            decode=True, network_mode=os.environ.get("DLREPRO_BUILD_NETWORK", "host"), pull=False,
        )
        for chunk in stream:
            if "error" in chunk:
                tail = " | ".join(line.strip() for line in log[-5:] if line.strip())
                raise UsageError(f"building {image_tag} failed: {chunk['error'].strip()[:400]} ({tail[-600:]})",
                                 "check that the package index and Debian mirror are reachable from the build "
                                 "(DLREPRO_BUILD_NETWORK, DLREPRO_CA_CERTS, DLREPRO_WHEELHOUSE, "
                                 "DLREPRO_DEBIAN_ARCHIVE)")
            text = chunk.get("stream", "")
            if text:
                log.append(text)
                if not quiet and (text.startswith("Step ") or "Successfully" in text):
                    _say("  " + text.rstrip())
    return docker_client.images.get(image_tag)


def remote_name(registry: str, image_tag: str) -> str:
    """<registry>/dlrepro/<framework>:<tag> for a local dlrepro/<framework>:<tag>."""
    return f"{registry.rstrip('/')}/{image_tag}"


def push(docker_client, image_tag: str, registry: str) -> str:
    """Tag the local image for the registry, push it, and return the name@digest it got."""
    image = find(docker_client, image_tag)
    if image is None:
        raise UsageError(f"image {image_tag} is not built", "run 'make images' first")
    remote = remote_name(registry, image_tag)
    repo, _, version = remote.rpartition(":")
    image.tag(repo, version)
    for chunk in docker_client.api.push(repo, tag=version, stream=True, decode=True):
        if "error" in chunk:
            raise UsageError(f"pushing {remote} failed: {chunk['error']}", "check REGISTRY and 'docker login'")
    image.reload()
    return digest(image)


def pull(docker_client, image_tag: str, registry: str):
    """Pull <registry>/<tag> and give it the local tag, so campaigns find it as if built here."""
    from docker.errors import APIError

    remote = remote_name(registry, image_tag)
    repo, _, version = remote.rpartition(":")
    try:
        image = docker_client.images.pull(repo, tag=version)
    except APIError as exc:
        raise UsageError(f"pulling {remote} failed ({exc.explanation or exc})",
                         "check REGISTRY, or build the image here with 'make images'") from None
    local_repo, _, local_version = image_tag.rpartition(":")
    image.tag(local_repo, local_version)
    return image
