"""The charliecloud runner: a kit image run by Charliecloud's ch-run, for HPC sites without Docker.

The image is the framework's kit image (images/build.py), converted once with `ch-convert` into a
directory image under CH_IMAGES (default ~/.cache/dlrepro/charliecloud, a shared filesystem on a
cluster), beside a record of what it was made from: the Docker image id and digest, and the sha256
of the directory's content (file names, modes, link targets and bytes), which run.json carries as
environment.container and which is computed again each time a campaign prepares the image: a
directory changed since it was converted is refused, not run under the record's identity.
Converting needs Docker once (on any machine; copy the folder over); running needs only ch-run.

A run is locked down as in the docker runner: the image's non-root user (10001), no network (a
network namespace of its own: unshare --net), the dataset read-only (a read-only bind mount made
in a mount namespace of its own) and only the run folder writable: ch-run mounts the image read-only
and gives the run a private tmpfs at /tmp (--private-tmp). It sets no memory or pids limit and runs no
init process (environment.limits says so: null, false); a cluster's scheduler bounds the task instead.
environment.container.reference is the image's folder name under CH_IMAGES (no host path). The namespaces need root or
unprivileged user namespaces; ch-run itself needs user namespaces. GPU runs would need the host's
NVIDIA libraries injected into the image (ch-fromhost --nvidia): not supported yet, refused at
prepare time.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

from bench import atomic
from bench.errors import UsageError
from bench.request import data_folder
from campaign.requests import Environment
from campaign.runners import GpuSlot, Limits, Outcome, entrypoint_args
from campaign.runners.local import abort_all, launch_process
from images import build as images

IMAGES_VAR = "CH_IMAGES"
RECORD = "dlrepro-image.json"
DATA_MOUNT, OUT_MOUNT = Path("/mnt/0"), Path("/mnt/1")  # ch-run binds onto directories the image has
IMAGE_UID = 10001
PYTHON = "/opt/venv/bin/python"
LIMITS = Limits(read_only_root=True)  # what ch-run applies (see above)


def images_root() -> Path:
    """Where converted directory images live (CH_IMAGES)."""
    return Path(os.environ.get(IMAGES_VAR) or Path.home() / ".cache" / "dlrepro" / "charliecloud")


def tree_sha256(root: Path) -> str:
    """sha256 of a directory image's content: every path (sorted), its mode, and its bytes or link target."""
    digest = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames) + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            if rel == RECORD:
                continue
            st = os.lstat(path)
            digest.update(f"{rel}\0{st.st_mode:o}\0".encode())
            if os.path.islink(path):
                digest.update(os.readlink(path).encode())
            elif os.path.isfile(path):
                with open(path, "rb") as fh:
                    for block in iter(lambda: fh.read(1 << 20), b""):
                        digest.update(block)
            digest.update(b"\0")
    return digest.hexdigest()


def _record(target: Path) -> dict | None:
    try:
        return json.loads((target / RECORD).read_text())
    except (OSError, ValueError):
        return None


def verify_image(target: Path, record: dict) -> dict:
    """`record` when the directory image at `target` still has the content it was converted with
    (tree_sha256 equal to the record's sha256), else a UsageError: a run must not use a changed
    image under the identity of the one it was made from."""
    found = tree_sha256(target)
    if found != record.get("sha256"):
        raise UsageError(f"the Charliecloud image {target} changed since it was converted (content sha256 "
                         f"{found[:12]}, its {RECORD} says {str(record.get('sha256'))[:12]})",
                         f"delete {target} and run again, so it is converted anew")
    return record


def ensure_image(spec: images.ImageSpec, target: Path) -> dict:
    """The record of the directory image of kit image `spec` at `target`: converted (again) when a
    Docker engine answers and its image is not the one the directory was made from; used as it is
    where no engine answers (a cluster node). An image used as it is is checked against its record
    first (verify_image)."""
    have = _record(target)
    try:
        client = images.client()
    except UsageError as exc:
        if have is None:
            raise UsageError(f"no Charliecloud image of {spec.framework} in {target.parent}, and {exc.problem}",
                             f"run it once where Docker answers, or copy that folder here ({IMAGES_VAR})") from None
        return verify_image(target, have)
    image = images.build(client, spec, images.base_image(client, spec.era))
    if have is not None and have["docker_image_id"] == image.id:
        return verify_image(target, have)
    if shutil.which("ch-convert") is None:
        raise UsageError("ch-convert (Charliecloud) is not on PATH", "install Charliecloud (Debian: charliecloud)")
    reference = image.tags[0] if image.tags else image.id
    tmp = target.with_name(target.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"charliecloud: converting {reference} into {target} (once per image) ...", flush=True)
    done = subprocess.run(["ch-convert", "-i", "docker", reference, str(tmp)], capture_output=True, text=True,
                          env={**os.environ, "USER": os.environ.get("USER") or "dlrepro"})
    if done.returncode != 0:
        raise UsageError(f"ch-convert failed: {done.stderr.strip()[-300:]}", "check Charliecloud and the Docker engine")
    record = {"docker_image_id": image.id, "image_digest": images.digest(image), "tag": reference,
              "sha256": tree_sha256(tmp)}
    atomic.write_text(tmp / RECORD, json.dumps(record, indent=2, sort_keys=True) + "\n")
    shutil.rmtree(target, ignore_errors=True)
    os.rename(tmp, target)
    return record


def ch_command(image_dir: Path, request: dict, run_dir: Path, data_root: Path | None = None) -> list[str]:
    """The command line of one run: namespaces for no network and read-only data (the request's data
    folder under `data_root`), then ch-run as the image's non-root user on the request in the run folder."""
    folder = data_folder(request["data"], data_root)
    data = str(folder) if folder is not None else ""  # "" for data generated in the run: nothing to bind
    binds = ["-b", f"{data}:{DATA_MOUNT}"] if data else []
    ch_run = ["ch-run", "--set-env", "--set-env=HOME=/tmp", "--set-env=PYTHONUNBUFFERED=1", "--private-tmp",
              "-u", str(IMAGE_UID), "-g", str(IMAGE_UID), *binds, "-b", f"{run_dir}:{OUT_MOUNT}",
              "-c", "/opt/dlrepro", str(image_dir), "--", PYTHON, "-m", "bench",
              *entrypoint_args(OUT_MOUNT, DATA_MOUNT if data else None)]
    lockdown = (f"mount --bind {shlex.quote(data)} {shlex.quote(data)} && "
                f"mount -o remount,bind,ro {shlex.quote(data)} && " if data else "") + f"exec {shlex.join(ch_run)}"
    user_ns = [] if os.getuid() == 0 else ["--map-root-user"]
    return ["unshare", *user_ns, "--net", "--mount", "--propagation", "private", "--", "sh", "-c", lockdown]


class CharliecloudRunner:
    """Runs each run in its framework's kit image through ch-run."""

    name = "charliecloud"

    def __init__(self, device: str = "cpu", era: str = "current", data_root: Path | None = None) -> None:
        self.device, self.era, self.data_root = device, era, data_root
        self._dirs: dict[str, Path] = {}

    def prepare(self, framework: str) -> Environment:
        """Find (or make, where Docker answers) the framework's directory image, its content checked
        against its record (once per campaign: launches reuse it); its identity is the kit image's id
        and digest, its container record the directory and its content sha256."""
        if self.device == "gpu":
            raise UsageError("GPU runs under Charliecloud are not supported yet (the image needs the host's "
                             "NVIDIA libraries: ch-fromhost --nvidia)", "use RUNNER=docker or RUNNER=local on GPUs")
        if shutil.which("ch-run") is None:
            raise UsageError("ch-run (Charliecloud) is not on PATH", "install Charliecloud, or choose another RUNNER")
        spec = images.ImageSpec(framework, self.era, "cpu")
        target = images_root() / f"{framework}-{self.era}-cpu"
        target.parent.mkdir(parents=True, exist_ok=True)
        record = ensure_image(spec, target)
        self._dirs[framework] = target
        container = {"wrapper": self.name, "reference": target.name, "sha256": record["sha256"]}
        return Environment(record["docker_image_id"], record["image_digest"], container=container,
                           limits=LIMITS.record())

    def abort(self) -> None:
        """Kill every run in flight (the campaign was stopped)."""
        abort_all()

    def launch(self, request: dict, run_dir: Path, timeout_s: float | None,
               gpus: tuple[GpuSlot, ...] = ()) -> Outcome:
        """Run the request in the framework's directory image; kill it on timeout (CPU only: prepare refuses GPUs)."""
        framework = request["framework"]
        if framework not in self._dirs:
            raise UsageError(f"no Charliecloud image prepared for {framework}", "call prepare() before launch()")
        env = {**os.environ, "USER": os.environ.get("USER") or "dlrepro"}
        return launch_process(ch_command(self._dirs[framework], request, run_dir, self.data_root), run_dir,
                              timeout_s, env)
