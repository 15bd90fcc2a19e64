"""The Kubernetes executor's manifests: valid for the stated API version offline (and a broken one
rejected), locked down (non-root, no privilege escalation, capabilities dropped, data read-only,
egress denied), one GPU per GPU run, images by digest; the pod's script run with /bin/sh against a
folder (a stand-in `python` for the entrypoint); apply() without a cluster and against a loopback
API server."""

import copy
import json
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from bench import schema
from bench.errors import UsageError
from campaign import leases
from campaign.executors import kubernetes as k8s
from campaign.plan import PlannedRun
from tests.runrecord import minimal_request

REPO = Path(__file__).resolve().parents[2]
DIGEST = "registry.example.org/team/dlrepro/{fw}@sha256:" + "a1" * 32


def runs_of(tmp_path, framework="pytorch", device="cpu", n=2, campaign="gpu-cnn", digest=DIGEST, dataset="mnist"):
    """n planned runs of `framework` whose prepared data lies under tmp_path/data."""
    data = {"dataset": dataset, "source": "synthetic", "arrays_sha256": "ab" * 32,
            "path": str(tmp_path / "data" / "prepared" / dataset), "train_indices": None, "test_indices": None}
    return [PlannedRun(minimal_request(seed, framework=framework, device=device, runner="docker", campaign=campaign,
                                       env_id="sha256:" + "cd" * 32, data=data,
                                       image_digest=digest and digest.format(fw=framework)), f"run {seed}")
            for seed in range(n)]


def settings(tmp_path, **overrides):
    fields = {"results_root": tmp_path / "results", "data_root": tmp_path / "data", "namespace": "bench",
              "parallelism": 3, "timeout_s": 3600}
    return k8s.KubernetesSettings(**{**fields, **overrides})


def batch_dir(tmp_path, campaign="gpu-cnn", batch="kubernetes-1"):
    return tmp_path / "results" / campaign / "batches" / batch


def jobs(objects):
    return [o for o in objects if o["kind"] == "Job"]


@pytest.fixture
def objects(tmp_path):
    """A batch of two pytorch GPU runs and three keras CPU runs (cifar10 and mnist)."""
    runs = runs_of(tmp_path, "pytorch", "gpu") + runs_of(tmp_path, "keras", "cpu", 3, dataset="cifar10")
    return k8s.manifests(runs, batch_dir(tmp_path), settings(tmp_path))


def test_the_manifests_validate_against_the_stated_api_version_and_survive_the_file(objects, tmp_path):
    assert [o["kind"] for o in objects] == ["NetworkPolicy", "Job", "Job"]  # the fence before any pod
    k8s.validate(objects)
    path = k8s.write_manifests(objects, batch_dir(tmp_path))
    assert path == batch_dir(tmp_path) / k8s.MANIFEST_FILE
    text = path.read_text()
    assert "command:\n        - /bin/sh\n        - -c\n        - |" in text  # the script is readable
    assert "&id" not in text  # every object spelled out, no YAML anchors
    again = list(yaml.safe_load_all(text))
    assert again == objects
    k8s.validate(again)


@pytest.mark.parametrize("breakage, message", [
    (lambda j: j["spec"]["template"]["spec"]["containers"][0]["securityContext"].update(runAsNonRot=True),
     r"containers\.0\.securityContext: Additional properties are not allowed \('runAsNonRot'"),
    (lambda j: j["spec"].update(parallelism="three"), r"spec\.parallelism: 'three' is not of type 'integer'"),
    (lambda j: j["spec"]["template"]["spec"].pop("containers"), r"'containers' is a required property"),
])
def test_a_broken_manifest_is_rejected_naming_the_field(objects, breakage, message):
    broken = copy.deepcopy(objects)
    breakage(jobs(broken)[0])
    job = "Job dlrepro-gpu-cnn-kubernetes-1-keras"
    with pytest.raises(UsageError, match=rf"{job} is not valid Kubernetes 1\.33: .*{message}"):
        k8s.validate(broken)


def test_every_pod_runs_locked_down(objects):
    for job in jobs(objects):
        pod = job["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        sc = container["securityContext"]
        assert pod["securityContext"]["runAsNonRoot"] is sc["runAsNonRoot"] is True
        assert sc["runAsUser"] == sc["runAsGroup"] == pod["securityContext"]["fsGroup"] == 10001
        assert sc["allowPrivilegeEscalation"] is False and sc["privileged"] is False
        assert sc["capabilities"] == {"drop": ["ALL"]}
        assert sc["seccompProfile"] == pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        assert sc["readOnlyRootFilesystem"] is True
        assert pod["automountServiceAccountToken"] is False and pod["restartPolicy"] == "Never"
        mounts = {m["name"]: m for m in container["volumeMounts"]}
        volumes = {v["name"]: v for v in pod["volumes"]}
        assert mounts["data"] == {"name": "data", "mountPath": "/data", "readOnly": True}
        assert volumes["data"]["persistentVolumeClaim"] == {"claimName": "dlrepro-data", "readOnly": True}
        assert mounts["results"]["subPath"] == "gpu-cnn" and not mounts["results"].get("readOnly")
        assert mounts["tmp"]["mountPath"] == "/tmp"
        assert volumes["tmp"] == {"name": "tmp", "emptyDir": {"sizeLimit": str(2**30)}}  # the docker runner's tmpfs
        assert pod["shareProcessNamespace"] is True  # the pause process is PID 1: it reaps orphans
        env = {e["name"]: e.get("value") for e in container["env"]}
        assert env["HOME"] == "/tmp"
        assert pod["activeDeadlineSeconds"] == 3600 + k8s.STARTUP_ALLOWANCE_S


def test_gpu_runs_get_one_gpu_each_and_cpu_runs_none(objects):
    by_fw = {j["metadata"]["labels"]["dlrepro/framework"]: j["spec"]["template"]["spec"] for j in jobs(objects)}
    assert by_fw["pytorch"]["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": "1"}}
    assert "resources" not in by_fw["keras"]["containers"][0] and "tolerations" not in by_fw["keras"]


def test_each_framework_is_one_indexed_job_of_its_image_by_digest_trying_each_run_once(objects, tmp_path):
    pytorch, keras = sorted(jobs(objects), key=lambda j: j["metadata"]["labels"]["dlrepro/framework"], reverse=True)
    for job, framework, n in ((pytorch, "pytorch", 2), (keras, "keras", 3)):
        spec = job["spec"]
        assert spec["completionMode"] == "Indexed" and spec["completions"] == n
        assert spec["parallelism"] == min(3, n)
        # No run is retried, and one failed run does not stop the others (a Job-wide backoffLimit 0 would).
        assert spec["backoffLimitPerIndex"] == 0 and "backoffLimit" not in spec
        assert spec["template"]["spec"]["containers"][0]["image"] == DIGEST.format(fw=framework)
        assert len(job["metadata"]["name"]) <= 52
    env = {e["name"]: e.get("value") for e in keras["spec"]["template"]["spec"]["containers"][0]["env"]}
    ids = [r.run_id for r in runs_of(tmp_path, "keras", "cpu", 3, dataset="cifar10")]
    assert env["DLREPRO_RUNS"] == "\n".join(f"{i} prepared/cifar10" for i in ids)
    assert env["DLREPRO_BATCH"] == "batches/kubernetes-1"


def test_runs_on_generated_data_need_no_dataset_under_the_data_root(tmp_path):
    from campaign import requests, specs

    spec = specs.load("fcn-s-synthetic", "smoke")
    runs = [PlannedRun(minimal_request(seed, runner="docker", campaign="shi-cpu", env_id="sha256:" + "cd" * 32,
                                       workload="fcn-s-synthetic", spec=spec, data=requests.generated_data(spec),
                                       image_digest=DIGEST.format(fw="pytorch")), f"run {seed}") for seed in range(2)]
    objects = k8s.manifests(runs, batch_dir(tmp_path, "shi-cpu"), settings(tmp_path))
    k8s.validate(objects)
    env = {e["name"]: e.get("value") for e in jobs(objects)[0]["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["DLREPRO_RUNS"] == "\n".join(f"{r.run_id} ." for r in runs)  # the data root stands in, unread


@pytest.mark.parametrize("digest", [None, "sha256:" + "ef" * 32])
def test_an_image_without_a_registry_digest_stops_naming_make_push(tmp_path, digest):
    with pytest.raises(UsageError, match=r"the pytorch image has no registry digest .*make push REGISTRY="):
        k8s.manifests(runs_of(tmp_path, digest=digest), batch_dir(tmp_path), settings(tmp_path))


def test_the_network_policy_denies_all_traffic_of_exactly_the_batch_pods(objects, tmp_path):
    policy = objects[0]
    assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert policy["spec"]["ingress"] == [] and policy["spec"]["egress"] == []

    def selects(labels):
        return all(labels.get(k) == v for k, v in policy["spec"]["podSelector"]["matchLabels"].items())

    assert all(selects(j["spec"]["template"]["metadata"]["labels"]) for j in jobs(objects))
    other_batch = k8s.manifests(runs_of(tmp_path), batch_dir(tmp_path, batch="kubernetes-2"), settings(tmp_path))
    other_campaign = k8s.manifests(runs_of(tmp_path, campaign="cpu-cnn"), batch_dir(tmp_path, "cpu-cnn"),
                                   settings(tmp_path))
    for other in (other_batch, other_campaign):
        assert not any(selects(j["spec"]["template"]["metadata"]["labels"]) for j in jobs(other))


def test_folders_outside_the_pvcs_roots_and_bad_settings_stop_with_the_fix(tmp_path):
    elsewhere = tmp_path / "elsewhere" / "batches" / "b"
    with pytest.raises(UsageError, match=r"campaign folder .* is not under the results root .*; set the results root"):
        k8s.manifests(runs_of(tmp_path), elsewhere, settings(tmp_path))
    with pytest.raises(UsageError, match=r"dataset .* is not under the data root"):
        k8s.manifests(runs_of(tmp_path), batch_dir(tmp_path), settings(tmp_path, data_root=tmp_path / "other"))
    with pytest.raises(UsageError, match=r"namespace='Bench_1' is not a valid name"):
        settings(tmp_path, namespace="Bench_1")
    with pytest.raises(UsageError, match=r"parallelism=0 is not a positive whole number"):
        k8s.KubernetesSettings(tmp_path, tmp_path, parallelism=0)


def test_names_and_label_values_stay_valid_and_distinct():
    long = "a-campaign-name-that-goes-on-and-on-" * 3
    assert k8s.label_value("gpu-cnn") == "gpu-cnn"
    for text in (long, "My Campaign/2", "--", "x" * 63 + "_"):
        value = k8s.label_value(text)
        assert k8s._LABEL_VALUE.fullmatch(value) and value
    assert k8s.label_value(long) != k8s.label_value(long + "b")
    assert k8s.object_name("gpu-cnn", "b1", "pytorch") == "dlrepro-gpu-cnn-b1-pytorch"
    name, other = k8s.object_name(long, "b1", "pytorch"), k8s.object_name(long, "b2", "pytorch")
    assert len(name) <= 52 and k8s._DNS_LABEL.fullmatch(name) and name != other and "-pytorch-" in name
    assert k8s._DNS_LABEL.fullmatch(k8s.object_name("My_Campaign", "B", "tf"))


# --- the pod's script, run by /bin/sh against a folder --------------------------------------------

FAKE_PYTHON = """#!/bin/sh
# Stands in for the image's `python -m bench run --request R --out O --data D`: records its
# arguments, prints an epoch line, and writes run.json unless told to crash, sleep or be killed; `python -`
# (the script's failure record) is the real Python with the real bench package.
if [ "$1" = "-" ]; then exec "$REAL_PYTHON" "$@"; fi
echo "$*" >> "$FAKE_CALLS"
echo "epoch 1 loss 0.5"
if [ -n "${FAKE_LEASE:-}" ]; then
  touch -d @0 "$FAKE_LEASE"; sleep 2.5
  stat -c %Y "$FAKE_LEASE" > "$FAKE_LEASE.seen"; cat "$FAKE_LEASE" >> "$FAKE_LEASE.seen"
fi
if [ -n "${FAKE_SLEEP:-}" ]; then exec sleep "$FAKE_SLEEP"; fi
if [ -n "${FAKE_CRASH:-}" ]; then echo boom; exit 3; fi
if [ -n "${FAKE_KILL:-}" ]; then kill -KILL $$; fi
echo '{"status": "ok"}' > "$7/run.json"
"""


@pytest.fixture
def pod(tmp_path):
    """Runs the Keras Job's script for a completion index, with the campaign folder and data root
    in tmp_path and the stand-in python on PATH; returns (run ids, campaign folder, run)."""
    runs = runs_of(tmp_path, "keras", "cpu", 3)
    batch = batch_dir(tmp_path)
    (batch / "requests").mkdir(parents=True)
    for run in runs:
        (batch / "requests" / f"{run.run_id}.json").write_text(json.dumps(run.request))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").write_text(FAKE_PYTHON)
    (bin_dir / "python").chmod(0o755)
    (job,) = jobs(k8s.manifests(runs, batch, settings(tmp_path)))
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert container["command"][:2] == ["/bin/sh", "-c"]
    env = {e["name"]: e["value"] for e in container["env"] if "value" in e}  # POD_NAME, NODE_NAME: the API's
    campaign = batch.parent.parent

    def run(index, **extra):
        environ = {**os.environ, **env, "DLREPRO_CAMPAIGN_DIR": str(campaign),
                   "DLREPRO_DATA_ROOT": str(tmp_path / "data"), "TMPDIR": str(tmp_path), "HOME": str(tmp_path),
                   "PATH": f"{bin_dir}:{os.environ['PATH']}",
                   "POD_NAME": f"{job['metadata']['name']}-{index}-x7k2p", "NODE_NAME": "gpu-node-3",
                   "JOB_COMPLETION_INDEX": str(index), "FAKE_CALLS": str(tmp_path / "calls"),
                   "REAL_PYTHON": sys.executable, "PYTHONPATH": str(REPO), **extra}
        return subprocess.run(container["command"], env=environ, capture_output=True, text=True, timeout=60)

    return [r.run_id for r in runs], campaign, run


def test_the_pod_runs_the_run_of_its_index_publishes_it_and_releases_its_lease(pod, tmp_path):
    ids, campaign, run = pod
    done = run(1)
    assert done.returncode == 0, done.stderr
    final = campaign / ids[1]
    assert sorted(p.name for p in final.iterdir()) == ["executor.json", "log.txt", "request.json", "run.json"]
    assert json.loads((final / "request.json").read_text())["run_id"] == ids[1]
    assert "epoch 1 loss 0.5" in (final / "log.txt").read_text() and "epoch 1" in done.stdout
    assert (tmp_path / "calls").read_text().split() == [
        "-m", "bench", "run", "--request", f"{campaign}/{ids[1]}.partial/request.json",
        "--out", f"{campaign}/{ids[1]}.partial", "--data", f"{tmp_path}/data/prepared/mnist"]
    assert json.loads((final / "executor.json").read_text()) == {
        "batch": "kubernetes-1", "completion_index": 1, "executor": "kubernetes", "node": "gpu-node-3",
        "executor_id": "dlrepro-gpu-cnn-kubernetes-1-keras-1-x7k2p", "job": "dlrepro-gpu-cnn-kubernetes-1-keras"}
    assert leases.read(campaign, ids[1]) is None and not (campaign / f"{ids[1]}.partial").exists()
    assert not (campaign / ids[0]).exists() and not (campaign / ids[2]).exists()
    again = run(1)  # a second pod for the same index (a retry, another executor): skips, runs nothing
    assert again.returncode == 0 and f"run {ids[1]} is done already" in again.stdout
    assert len((tmp_path / "calls").read_text().splitlines()) == 1


def test_the_pod_holds_a_lease_campaign_leases_reads_and_keeps_it_fresh(pod, tmp_path):
    ids, campaign, run = pod
    lease = leases.lease_path(campaign, ids[0])
    done = run(0, DLREPRO_HEARTBEAT_S="1", FAKE_LEASE=str(lease))  # the run ages its lease, then sleeps
    assert done.returncode == 0, done.stderr
    mtime, record = (tmp_path / f"{lease}.seen").read_text().split("\n", 1)
    assert int(mtime) > time.time() - 60  # touched again while the run was in flight
    record = json.loads(record)
    assert record["executor"] == "kubernetes" and record["executor_id"].endswith("-0-x7k2p") and record["token"]
    assert isinstance(record["pid"], int) and not leases.is_stale({**record, "age_s": 0.0})


def test_the_pod_skips_a_run_leased_to_another_executor(pod, tmp_path):
    ids, campaign, run = pod
    held = leases.take(campaign, ids[2], "slurm", "12_3")
    try:
        skipped = run(2)
        assert skipped.returncode == 0 and f"run {ids[2]} is leased to another executor; skipped" in skipped.stdout
        assert not (tmp_path / "calls").exists() and not (campaign / ids[2]).exists()
        assert held.still_ours()  # the lease is not overwritten
    finally:
        held.release()


def test_a_run_that_ends_without_run_json_is_published_as_failed_with_its_cause(pod):
    ids, campaign, run = pod
    crashed = run(0, FAKE_CRASH="1")
    assert crashed.returncode == 0, crashed.stderr
    record = schema.read_run(campaign / ids[0])
    assert record["status"] == "failed" and record["failure"]["cause"] == "crash"
    assert record["failure"]["message"].startswith("exit code 3 without a run.json; log ends: ")
    assert "boom" in record["failure"]["message"]
    start = time.monotonic()
    slow = run(1, DLREPRO_TIMEOUT_S="1", FAKE_SLEEP="30")
    assert slow.returncode == 0, slow.stderr
    assert time.monotonic() - start < 15  # stopped at its limit, not when it ended by itself
    assert schema.read_run(campaign / ids[1])["failure"]["cause"] == "timeout"
    killed = run(2, FAKE_KILL="1")  # SIGKILL, as the out-of-memory killer sends: the shell sees 137
    assert killed.returncode == 0, killed.stderr
    assert schema.read_run(campaign / ids[2])["failure"] == {
        "cause": "killed", "message": "killed by SIGKILL: often the out-of-memory killer (see the pod's events)"}


def test_a_run_that_cannot_be_recorded_is_left_partial_and_the_pod_fails(pod):
    ids, campaign, run = pod
    (campaign / "batches" / "kubernetes-1" / "requests" / f"{ids[2]}.json").write_text("{}")
    broken = run(2, FAKE_CRASH="1")
    assert broken.returncode == 1 and f"run {ids[2]} has no run.json; left in" in broken.stderr
    assert not (campaign / ids[2]).exists() and (campaign / f"{ids[2]}.partial" / "log.txt").exists()
    nothing = run(3)  # past the end of the run list
    assert nothing.returncode == 1 and "no run for completion index 3" in nothing.stderr


# --- apply ----------------------------------------------------------------------------------------

class FakeApiServer(BaseHTTPRequestHandler):
    """A loopback stand-in for the API server: /version, and creation answering 201, or 409 for a name it has."""

    created: list = []

    def _send(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self._send(200, {"major": "1", "minor": "33", "gitVersion": "v1.33.0", "gitCommit": "x",
                         "gitTreeState": "clean", "buildDate": "2025-01-01T00:00:00Z", "goVersion": "go",
                         "compiler": "gc", "platform": "linux"})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if any(name == body["metadata"]["name"] for _, name in self.created):
            return self._send(409, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                    "reason": "AlreadyExists", "code": 409})
        self.created.append((self.path, body["metadata"]["name"]))
        self._send(201, body)

    def log_message(self, *args):
        pass


def kubeconfig(tmp_path, server):
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "clusters": [{"name": "c", "cluster": {"server": server}}], "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}]}))
    return path


def test_without_a_cluster_apply_says_how_to_apply_the_file(objects, tmp_path, monkeypatch):
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    path = k8s.write_manifests(objects, batch_dir(tmp_path))
    for config in (tmp_path / "none", kubeconfig(tmp_path, "http://127.0.0.1:9")):  # no config; nothing listening
        monkeypatch.setenv("KUBECONFIG", str(config))
        said = k8s.apply(objects, path)
        assert said.startswith("no Kubernetes cluster answers (")
        assert said.endswith(f"kubectl apply -f {path}, then run the same make command again to collect the results")


def test_apply_creates_the_fence_then_the_jobs_and_leaves_existing_ones(objects, tmp_path, monkeypatch):
    FakeApiServer.created = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeApiServer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
        monkeypatch.setenv("KUBECONFIG", str(kubeconfig(tmp_path, f"http://127.0.0.1:{server.server_port}")))
        said = k8s.apply(objects, Path("kubernetes.yaml"))
        names = [o["metadata"]["name"] for o in objects]
        assert FakeApiServer.created == [
            ("/apis/networking.k8s.io/v1/namespaces/bench/networkpolicies", names[0]),
            ("/apis/batch/v1/namespaces/bench/jobs", names[1]), ("/apis/batch/v1/namespaces/bench/jobs", names[2])]
        assert said == (f"submitted NetworkPolicy {names[0]}, Job {names[1]}, Job {names[2]}; "
                        "run the same make command again to collect the results")
        again = k8s.apply(objects, Path("kubernetes.yaml"))
        assert again.startswith("submitted nothing new (already there: NetworkPolicy ")
        assert len(FakeApiServer.created) == 3
    finally:
        server.shutdown()


def test_a_data_parallel_gpu_run_asks_for_one_gpu_per_rank_in_a_job_of_its_own(tmp_path):
    data = {"dataset": "mnist", "source": "synthetic", "arrays_sha256": "ab" * 32,
            "path": str(tmp_path / "data" / "prepared" / "mnist"), "train_indices": None, "test_indices": None}
    runs = runs_of(tmp_path, "pytorch", "gpu") + [
        PlannedRun(minimal_request(9, device="gpu", runner="docker", campaign="gpu-cnn", env_id="sha256:" + "cd" * 32,
                                   data=data, image_digest=DIGEST.format(fw="pytorch"), sweep={"ranks": 2}), "ranks 2")]
    found = jobs(k8s.manifests(runs, batch_dir(tmp_path), settings(tmp_path)))
    limits = sorted((j["spec"]["completions"], j["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
                     ["nvidia.com/gpu"]) for j in found)
    assert limits == [(1, "2"), (2, "1")]
    assert len({j["metadata"]["name"] for j in found}) == 2


def test_a_pod_reads_the_data_path_its_request_names_under_the_data_root_and_gets_its_memory_limit(tmp_path):
    from campaign.runners import container_limits

    limits = container_limits("2g").record()
    data = {"dataset": "mnist", "source": "synthetic", "arrays_sha256": "ab" * 32, "path": "prepared/mnist-synthetic",
            "train_indices": None, "test_indices": None}
    runs = [PlannedRun(minimal_request(seed, runner="docker", campaign="gpu-cnn", env_id="sha256:" + "cd" * 32,
                                       data=data, image_digest=DIGEST.format(fw="pytorch"), limits=limits), "run")
            for seed in range(2)]
    (job,) = jobs(k8s.manifests(runs, batch_dir(tmp_path), settings(tmp_path)))
    (container,) = job["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["DLREPRO_RUNS"] == "\n".join(f"{r.run_id} prepared/mnist-synthetic" for r in runs)
    assert container["resources"] == {"limits": {"memory": str(2 * 2**30)}}
    k8s.validate(k8s.manifests(runs, batch_dir(tmp_path), settings(tmp_path)))
    other = PlannedRun(minimal_request(9, runner="docker", campaign="gpu-cnn", env_id="sha256:" + "cd" * 32, data=data,
                                       image_digest=DIGEST.format(fw="pytorch"),
                                       limits=container_limits("3g").record()), "run")
    with pytest.raises(UsageError, match=r"the pytorch runs of one batch record several memory limits "
                                         r"\(\[2147483648, 3221225472\]\); plan the batch again with one MEMORY"):
        k8s.manifests(runs + [other], batch_dir(tmp_path), settings(tmp_path))
