"""The Kubernetes executor's manifests: one Indexed Job per framework (and GPU count) of a batch, and a NetworkPolicy.

A batch (`<campaign_dir>/batches/<batch>/`: runs.txt, requests/<run_id>.json) becomes:

- a NetworkPolicy selecting the batch's pods (by the dlrepro campaign and batch labels), denying
  all ingress and all egress: a run reads its dataset from a volume and needs no network;
- per framework (one image each), an Indexed Job: one pod per run, `completions` runs,
  `parallelism` at once, each run tried once (backoffLimitPerIndex 0: a failed run is a result;
  a Job-wide backoffLimit 0 would instead kill the runs in flight at the first failure). The image
  is named by digest; the pod runs as the image's user 10001, non-root, without privilege
  escalation, every capability dropped, seccomp RuntimeDefault, a read-only root filesystem with
  an emptyDir at /tmp (HOME: frameworks write caches there; as large as the docker runner's tmpfs),
  no service account token, the pod's pause process as PID 1 (shareProcessNamespace: it reaps
  orphans, as docker's init does) and the memory limit its requests record (environment.limits, the
  docker runner's: MEMORY, else the planning host's memory less its reserve, which a smaller node
  cannot schedule: set MEMORY for the cluster). A pod spec has no pids limit (the node's kubelet sets
  podPidsLimit): the campaign plans these runs with pids null. The data PVC (PersistentVolumeClaim) is
  mounted read-only at /data (its root is the host's data root; a request's data.path is relative to it),
  the results PVC's campaign folder at /campaign (the PVC's root is the host's results root, the parent of
  campaign folders). A GPU run's pod asks for one `nvidia.com/gpu` per rank.

The pod's script (POD_SCRIPT) takes line JOB_COMPLETION_INDEX of the Job's run list, skips a run
already published or leased to another holder, and takes its lease as campaign/leases.py does
(`.claims/<run_id>`: leases.LEASES_DIR, created exclusively, its holder named, touched every
HEARTBEAT_S so it never looks stale while the run is in flight). It writes `<run_id>.partial/`
(request.json first), runs `python -m bench run` into it under the run's time limit, records a run that ended without
run.json as failed (timeout, killed, crash: the host's causes, by bench.failures in the image),
adds executor.json (pod, node, Job, index), renames it to `<run_id>/` and releases the lease. A
pod that is itself killed (deleted, evicted) leaves `.partial` and a lease that goes stale, so a
resumed campaign runs that run again.

Manifests are validated offline against the API schema of KUBERNETES_VERSION (kubernetes-validate,
strict) and applied with the official client where a cluster answers; otherwise the written file
is for `kubectl apply -f`.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from bench import atomic
from bench.errors import UsageError
from campaign import leases
from campaign.execute import DEFAULT_TIMEOUT_S
from campaign.plan import PlannedRun
from campaign.runners import TMP_BYTES, request_limits

KUBERNETES_VERSION = "1.33"  # the API schema the manifests are validated against (bundled by kubernetes-validate)
MANIFEST_FILE = "kubernetes.yaml"
IMAGE_UID = 10001  # the image's own non-root user (images/<era>.Dockerfile)
DATA_MOUNT, CAMPAIGN_MOUNT = "/data", "/campaign"
# The pod enforces the run's limit itself (timeout: a failed run, cause timeout); its activeDeadlineSeconds
# is a backstop that also covers the image pull and recording the failure.
STARTUP_ALLOWANCE_S = 600
APP_LABEL = "app.kubernetes.io/name"
LABELS = {"campaign": "dlrepro/campaign", "batch": "dlrepro/batch", "framework": "dlrepro/framework"}
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
_LABEL_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?")
_DIGEST_REF = re.compile(r"[^@\s]+@sha256:[0-9a-f]{64}")
_SHELL_SAFE = re.compile(r"[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*")

POD_SCRIPT = r"""set -eu
line=$(printf '%s\n' "$DLREPRO_RUNS" | sed -n "$((JOB_COMPLETION_INDEX + 1))p")
if [ -z "$line" ]; then echo "dlrepro: no run for completion index $JOB_COMPLETION_INDEX" >&2; exit 1; fi
run_id=${line%% *}
campaign=$DLREPRO_CAMPAIGN_DIR
partial="$campaign/$run_id.partial"
lease="$campaign/.claims/$run_id"
if [ -e "$campaign/$run_id/run.json" ]; then echo "dlrepro: run $run_id is done already"; exit 0; fi
# The lease as campaign/leases.py makes it: created exclusively, naming its holder, kept fresh.
mkdir -p "$campaign/.claims"
token=$(cat /proc/sys/kernel/random/uuid)
if ! (set -C; printf '{"executor": "kubernetes", "executor_id": "%s", "host": "%s", '\
'"pid": %s, "since": "%s", "token": "%s"}\n' "${POD_NAME:-}" "${HOSTNAME:-${POD_NAME:-pod}}" "$$" \
    "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$token" > "$lease") 2>/dev/null
then
  echo "dlrepro: run $run_id is leased to another executor; skipped"; exit 0
fi
(while sleep "$DLREPRO_HEARTBEAT_S"; do touch "$lease" || exit 0; done) >/dev/null 2>&1 &
beat=$!
rm -rf "$partial"
mkdir "$partial"
cp "$campaign/$DLREPRO_BATCH/requests/$run_id.json" "$partial/request.json"
limit=${DLREPRO_TIMEOUT_S:+timeout -k 30 $DLREPRO_TIMEOUT_S}
exit_file="${TMPDIR:-/tmp}/dlrepro-exit"
start=$(date +%s)
{ rc=0; $limit python -m bench run --request "$partial/request.json" --out "$partial" \
    --data "$DLREPRO_DATA_ROOT/${line#* }" 2>&1 || rc=$?; echo "$rc" > "$exit_file"; } | tee -a "$partial/log.txt"
if [ ! -f "$partial/run.json" ]; then
  # It ended without a run.json: record it as failed, as the host does (campaign/execute.py).
  python - "$partial" "$(cat "$exit_file")" "$(($(date +%s) - start))" "${DLREPRO_TIMEOUT_S:-0}" <<'EOF' || true
import sys
from pathlib import Path
from bench import failures, request, schema
out, rc, elapsed, limit = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
# timeout's own status is 124; 137 when it had to SIGKILL the run after its grace (-k 30).
timed_out = rc == 124 or bool(limit and elapsed >= limit)
failure = failures.failure(timed_out, failures.returncode_of_status(rc), failures.log_tail(out),
                           failures.OOM_HINT_POD)
schema.write_run(out, schema.finish(schema.run_record(request.read(out / "request.json")), failure))
EOF
fi
kill "$beat" 2>/dev/null || true
if [ ! -f "$partial/run.json" ]; then echo "dlrepro: run $run_id has no run.json; left in $partial" >&2; exit 1; fi
printf '{"batch": "%s", "completion_index": %s, "executor": "kubernetes", '\
'"executor_id": "%s", "job": "%s", "node": "%s"}\n' "${DLREPRO_BATCH#batches/}" \
  "$JOB_COMPLETION_INDEX" "${POD_NAME:-}" "${DLREPRO_JOB:-}" "${NODE_NAME:-}" > "$partial/executor.json"
mv -T "$partial" "$campaign/$run_id"
if grep -q "$token" "$lease" 2>/dev/null; then rm -f "$lease"; fi
echo "dlrepro: run $run_id published"
"""


def _positive(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError(f"Kubernetes setting {name}={value!r} is not a positive whole number", f"set {name} to e.g. 1")


@dataclass(frozen=True)
class KubernetesSettings:
    """Where a batch runs: the namespace, the two PVCs and the host folders their roots hold
    (`results_root`: the parent of campaign folders; `data_root`: the folder with prepared/ in it),
    pods at once, the per-run time limit (None: none) and how long finished Jobs are kept."""

    results_root: Path
    data_root: Path
    namespace: str = "default"
    data_claim: str = "dlrepro-data"
    results_claim: str = "dlrepro-results"
    parallelism: int = 1
    timeout_s: float | None = DEFAULT_TIMEOUT_S
    ttl_s: int = 7 * 24 * 3600

    def __post_init__(self) -> None:
        for name in ("namespace", "data_claim", "results_claim"):
            value = getattr(self, name)
            if not isinstance(value, str) or not _DNS_LABEL.fullmatch(value):
                raise UsageError(f"Kubernetes setting {name}={value!r} is not a valid name",
                                 "use lower-case letters, digits and '-' (at most 63 characters)")
        _positive("parallelism", self.parallelism)
        _positive("ttl_s", self.ttl_s)
        if self.timeout_s is not None and not self.timeout_s > 0:
            raise UsageError(f"per-run time limit {self.timeout_s!r} is not positive",
                             "set TIMEOUT to seconds, e.g. 86400")


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]


def label_value(text: str) -> str:
    """`text` as a valid label value (<= 63 of [A-Za-z0-9-_.], alphanumeric at both ends): as it is
    when it already is one, else cleaned and suffixed with a hash of the original (stays distinct)."""
    if _LABEL_VALUE.fullmatch(text):
        return text
    cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-_.")[:54].rstrip("-_.")
    return f"{cleaned}-{_short_hash(text)}" if cleaned else _short_hash(text)


def _dns(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def object_name(*parts: str, limit: int = 52) -> str:
    """A DNS-label name 'dlrepro-<parts>' of at most `limit` characters (a Job's stays <= 52: its pods'
    hostnames add '-<index>'); shortened in the middle (the last part kept) and suffixed with a hash
    of the parts when they had to be shortened or cleaned, so names stay distinct."""
    full = "-".join(("dlrepro", *parts))
    name = _dns(full)
    if len(name) > limit or name != full.lower():
        tail = f"-{_dns(parts[-1])[:16]}-{_short_hash(full)}"
        name = _dns(full[:-len(parts[-1])])[:limit - len(tail)].rstrip("-") + tail
    return name


def _under(path: Path, root: Path, what: str, setting: str) -> str:
    try:
        relative = PurePosixPath(Path(path).resolve().relative_to(Path(root).resolve()))
    except ValueError:
        raise UsageError(f"{what} {path} is not under the {setting} {root}",
                         f"set the {setting} to the host folder the PVC's root holds") from None
    if not _SHELL_SAFE.fullmatch(str(relative)):
        raise UsageError(f"{what} {path} has characters a pod path cannot take ({relative})",
                         "use letters, digits, '.', '_' and '-' in folder names")
    return str(relative)


def data_subpath(data: dict, data_root: Path) -> str:
    """A request's data folder relative to the data PVC's root: its data.path (relative to the data root;
    one of an older request, absolute, must lie under `data_root`); '.' for data generated in the run (the
    root stands in, unread)."""
    path = data["path"]
    if not path:
        return "."
    if Path(path).is_absolute():
        return _under(Path(path), data_root, "dataset", "data root")
    if not _SHELL_SAFE.fullmatch(path):
        raise UsageError(f"dataset path {path!r} has characters a pod path cannot take",
                         "use letters, digits, '.', '_' and '-' in folder names")
    return path


def memory_limit(runs: list[PlannedRun]) -> int | None:
    """The memory limit (bytes) the runs' requests record, one for all of them (None: none recorded)."""
    found = {(limits.memory_bytes if limits else None) for limits in map(request_limits, (r.request for r in runs))}
    if len(found) != 1:
        raise UsageError(f"the {runs[0].request['framework']} runs of one batch record several memory limits "
                         f"({sorted(found, key=str)})", "plan the batch again with one MEMORY")
    return found.pop()


def image_of(runs: list[PlannedRun]) -> str:
    """The one image (`<repository>@sha256:<digest>`) a framework's runs name, or a UsageError."""
    refs = {run.request["environment"].get("image_digest") for run in runs}
    framework = runs[0].request["framework"]
    if len(refs) != 1:
        raise UsageError(f"the {framework} runs of one batch name several images ({sorted(map(str, refs))})",
                         "plan the batch again with one image per framework")
    ref = refs.pop()
    if not ref or not _DIGEST_REF.fullmatch(ref):
        raise UsageError(f"the {framework} image has no registry digest ({ref}): a cluster cannot pull it",
                         "push the images first: make push REGISTRY=<your registry>")
    return ref


def _labels(campaign: str, batch: str, framework: str | None = None) -> dict:
    labels = {APP_LABEL: "dlrepro", LABELS["campaign"]: label_value(campaign), LABELS["batch"]: label_value(batch)}
    if framework is not None:
        labels[LABELS["framework"]] = label_value(framework)
    return labels


def network_policy(campaign: str, batch: str, namespace: str) -> dict:
    """Deny every ingress and egress of the batch's pods (policy types without rules allow nothing)."""
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": object_name(campaign, batch, "deny", limit=63), "namespace": namespace,
                         "labels": _labels(campaign, batch)},
            "spec": {"podSelector": {"matchLabels": _labels(campaign, batch)},
                     "policyTypes": ["Ingress", "Egress"], "ingress": [], "egress": []}}


def job(runs: list[PlannedRun], campaign_subpath: str, batch: str, settings: KubernetesSettings) -> dict:
    """The Indexed Job that runs `runs` (one framework's, each needing the same GPUs, in this order), pod i
    running runs[i]."""
    request = runs[0].request
    campaign, framework = request["campaign"], request["framework"]
    lines = []
    for run in runs:
        if not _SHELL_SAFE.fullmatch(run.run_id) or "/" in run.run_id:
            raise UsageError(f"run id {run.run_id!r} cannot name a file", "plan the campaign again")
        lines.append(f"{run.run_id} {data_subpath(run.request['data'], settings.data_root)}")
    gpus = runs[0].gpus
    if any(run.gpus != gpus for run in runs):
        raise UsageError(f"the {framework} runs of one Indexed Job need different GPU counts",
                         "plan the batch again (manifests() makes one job per framework and GPU count)")
    gpu = gpus > 0
    name = object_name(campaign, batch, framework if gpus <= 1 else f"{framework}-{gpus}gpus")
    env = {"DLREPRO_RUNS": "\n".join(lines), "DLREPRO_CAMPAIGN_DIR": CAMPAIGN_MOUNT,
           "DLREPRO_BATCH": f"batches/{batch}", "DLREPRO_DATA_ROOT": DATA_MOUNT, "DLREPRO_JOB": name,
           "DLREPRO_HEARTBEAT_S": str(int(leases.HEARTBEAT_S)),
           "HOME": "/tmp", "TMPDIR": "/tmp", "PYTHONUNBUFFERED": "1"}
    if settings.timeout_s is not None:
        env["DLREPRO_TIMEOUT_S"] = str(math.ceil(settings.timeout_s))
    container = {
        "name": "run", "image": image_of(runs), "imagePullPolicy": "IfNotPresent",
        "command": ["/bin/sh", "-c", POD_SCRIPT],
        "env": [{"name": k, "value": v} for k, v in env.items()] + [
            {"name": k, "valueFrom": {"fieldRef": {"fieldPath": path}}}
            for k, path in (("POD_NAME", "metadata.name"), ("NODE_NAME", "spec.nodeName"))],
        "securityContext": {"runAsNonRoot": True, "runAsUser": IMAGE_UID, "runAsGroup": IMAGE_UID,
                            "allowPrivilegeEscalation": False, "privileged": False,
                            "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]},
                            "seccompProfile": {"type": "RuntimeDefault"}},
        "volumeMounts": [{"name": "data", "mountPath": DATA_MOUNT, "readOnly": True},
                         {"name": "results", "mountPath": CAMPAIGN_MOUNT, "subPath": campaign_subpath},
                         {"name": "tmp", "mountPath": "/tmp"}],
    }
    limits = {"nvidia.com/gpu": str(gpus)} if gpu else {}  # one per rank of a data-parallel run
    memory = memory_limit(runs)
    if memory is not None:
        limits["memory"] = str(memory)
    if limits:
        container["resources"] = {"limits": limits}
    pod = {
        "restartPolicy": "Never", "automountServiceAccountToken": False, "enableServiceLinks": False,
        "shareProcessNamespace": True,
        "securityContext": {"runAsNonRoot": True, "runAsUser": IMAGE_UID, "runAsGroup": IMAGE_UID,
                            "fsGroup": IMAGE_UID, "fsGroupChangePolicy": "OnRootMismatch",
                            "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [container],
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": settings.data_claim, "readOnly": True}},
                    {"name": "results", "persistentVolumeClaim": {"claimName": settings.results_claim}},
                    {"name": "tmp", "emptyDir": {"sizeLimit": str(TMP_BYTES)}}],
    }
    if settings.timeout_s is not None:
        pod["activeDeadlineSeconds"] = math.ceil(settings.timeout_s) + STARTUP_ALLOWANCE_S
    if gpu:  # GPU nodes are commonly tainted so that only pods asking for a GPU land there
        pod["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    labels = _labels(campaign, batch, framework)
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": settings.namespace, "labels": labels},
            "spec": {"completionMode": "Indexed", "completions": len(runs),
                     "parallelism": min(settings.parallelism, len(runs)), "backoffLimitPerIndex": 0,
                     "ttlSecondsAfterFinished": settings.ttl_s,
                     "template": {"metadata": {"labels": labels}, "spec": pod}}}


def manifests(runs: list[PlannedRun], batch_dir: Path, settings: KubernetesSettings) -> list[dict]:
    """The batch's objects in the order to apply them: its NetworkPolicy first (no pod starts
    unfenced), then one Indexed Job per framework and GPU count. `batch_dir` is `<campaign_dir>/batches/<batch>`."""
    batch_dir = Path(batch_dir)
    if not runs:
        raise UsageError("the batch has no runs", "nothing to submit: every run is done already")
    if batch_dir.parent.name != "batches" or not _SHELL_SAFE.fullmatch(batch_dir.name):
        raise UsageError(f"{batch_dir} is not a batch folder", "pass <campaign_dir>/batches/<batch name>")
    campaign_subpath = _under(batch_dir.parent.parent, settings.results_root, "campaign folder", "results root")
    groups: dict[tuple[str, int], list[PlannedRun]] = {}
    for run in runs:  # a pod's GPU limit holds for every index of its job: one job per GPU count too
        groups.setdefault((run.request["framework"], run.gpus), []).append(run)
    campaign = runs[0].request["campaign"]
    return [network_policy(campaign, batch_dir.name, settings.namespace)] + [
        job(group, campaign_subpath, batch_dir.name, settings) for _, group in sorted(groups.items())]


def _literal_dumper():
    import yaml

    class Dumper(yaml.SafeDumper):
        """Multi-line strings (the pod script, the run list) as readable literal blocks; no anchors."""

        def ignore_aliases(self, data) -> bool:
            return True

    def text(dumper, value):
        style = "|" if "\n" in value else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    Dumper.add_representer(str, text)
    return yaml, Dumper


def write_manifests(objects: list[dict], batch_dir: Path) -> Path:
    """Write the objects as one multi-document YAML file into the batch folder (atomically); its path."""
    yaml, dumper = _literal_dumper()
    path = Path(batch_dir) / MANIFEST_FILE
    atomic.write_text(path, yaml.dump_all(objects, Dumper=dumper, sort_keys=False, default_flow_style=False))
    return path


def validate(objects: list[dict], version: str = KUBERNETES_VERSION) -> None:
    """Validate each object against the Kubernetes API schema of `version` (strict: unknown fields
    fail too), offline; a UsageError naming the object, the field and the problem."""
    import kubernetes_validate

    for obj in objects:
        try:
            kubernetes_validate.validate(obj, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            where = ".".join(str(p) for p in exc.absolute_path) or "(top level)"
            raise UsageError(f"{obj.get('kind')} {obj.get('metadata', {}).get('name')} is not valid Kubernetes "
                             f"{version}: {where}: {exc.message}", "fix the setting it comes from") from None


def apply(objects: list[dict], path: Path) -> str:
    """Create the objects on the cluster the kube config (or the pod's service account) names, when
    one answers; objects that exist already (a batch submitted before) are left as they are. Returns
    what happened, or, with no cluster answering, how to apply the written file `path` by hand."""
    from kubernetes import client, config
    from urllib3.exceptions import HTTPError

    by_hand = f"kubectl apply -f {path}, then run the same make command again to collect the results"
    try:
        try:
            config.load_incluster_config()
        except config.ConfigException:
            # KUBECONFIG read now: the client reads it once, at import
            config.load_kube_config(config_file=os.environ.get("KUBECONFIG") or None)
        api = client.ApiClient()
        client.VersionApi(api).get_code(_request_timeout=10)
    except (config.ConfigException, client.ApiException, HTTPError, OSError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return f"no Kubernetes cluster answers ({reason[:200]}): {by_hand}"
    create = {"Job": client.BatchV1Api(api).create_namespaced_job,
              "NetworkPolicy": client.NetworkingV1Api(api).create_namespaced_network_policy}
    made, kept = [], []
    for obj in objects:
        meta = obj["metadata"]
        try:
            create[obj["kind"]](meta["namespace"], obj)
            made.append(f"{obj['kind']} {meta['name']}")
        except client.ApiException as exc:
            if exc.status != 409:  # 409: it exists already
                raise UsageError(f"the cluster refused {obj['kind']} {meta['name']} ({exc.status} {exc.reason})",
                                 f"check your access to namespace {meta['namespace']}, or {by_hand}") from None
            kept.append(f"{obj['kind']} {meta['name']}")
    said = f"submitted {', '.join(made) or 'nothing new'}"
    if kept:
        said += f" (already there: {', '.join(kept)})"
    return f"{said}; run the same make command again to collect the results"
