"""torch 0.4.1 from PyTorch's own wheel archive, trusted on first use (images/external.py), against a
loopback HTTP server (127.0.0.1 only) that serves a small fake wheel in the archive's place: the first
fetch records the sha256 in the local lock, later builds use the cached file, a different file is
refused naming both digests, an unreachable archive is one clear error, and the build context carries
the file with a hash line and the image labels the digest."""

from __future__ import annotations

import hashlib
import http.server
import threading
import tomllib
from pathlib import Path

import pytest

from bench.errors import UsageError
from images import build as images
from images import external

CPU = "cpu/torch-0.4.1-cp36-cp36m-linux_x86_64.whl"
CU92 = "cu92/torch-0.4.1-cp36-cp36m-linux_x86_64.whl"


class _Archive(http.server.BaseHTTPRequestHandler):
    """Serves the files dict of its server at their paths; 404 otherwise."""

    def do_GET(self) -> None:  # noqa: N802 (the http.server API)
        body = self.server.files.get(self.path.lstrip("/"))
        self.send_response(200 if body is not None else 404)
        self.send_header("Content-Length", str(len(body or b"")))
        self.end_headers()
        self.wfile.write(body or b"")

    def log_message(self, *args) -> None:
        pass


@pytest.fixture()
def archive(monkeypatch, tmp_path):
    """A loopback archive serving a fake wheel per build; local lock and cache in tmp_path."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Archive)
    server.files = {CPU: b"fake torch 0.4.1 cpu wheel", CU92: b"fake torch 0.4.1 cu92 wheel"}
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    monkeypatch.setenv(external.ARCHIVE_VAR, f"http://127.0.0.1:{server.server_port}/")
    monkeypatch.setenv(external.LOCAL_LOCK_VAR, str(tmp_path / "versions.local.lock"))
    monkeypatch.setenv(external.CACHE_VAR, str(tmp_path / "cache"))
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    yield server
    server.shutdown()
    server.server_close()


def _pin(path: str = CPU) -> external.ExternalPin:
    return external.ExternalPin("torch", "0.4.1", path)


def test_first_fetch_records_the_sha256_and_later_fetches_use_the_cache(archive):
    first = external.fetch(_pin())
    sha = hashlib.sha256(b"fake torch 0.4.1 cpu wheel").hexdigest()
    assert first.sha256 == sha and first.path.read_bytes() == b"fake torch 0.4.1 cpu wheel"
    assert first.path.name == "torch-0.4.1-cp36-cp36m-linux_x86_64.whl" and first.path.parent.name == sha
    entry = tomllib.loads(external.local_lock_path().read_text())["external"][CPU]
    assert entry["sha256"] == sha and entry["url"].endswith(f"/{CPU}") and entry["first_fetched"]
    archive.files.clear()  # the archive is gone: the cached, recorded file still serves
    assert external.fetch(_pin()) == first


def test_cpu_and_cu92_builds_share_a_file_name_but_not_a_record(archive):
    cpu, gpu = external.fetch(_pin(CPU)), external.fetch(_pin(CU92))
    assert cpu.path.name == gpu.path.name and cpu.sha256 != gpu.sha256
    assert set(tomllib.loads(external.local_lock_path().read_text())["external"]) == {CPU, CU92}


def test_a_different_file_is_refused_naming_both_digests_and_the_reset(archive):
    known = external.fetch(_pin()).sha256
    for sub in external.cache_dir().iterdir():  # another machine state: no cached copy, the archive changed
        for f in sub.iterdir():
            f.unlink()
    archive.files[CPU] = b"a different torch wheel"
    with pytest.raises(UsageError) as exc:
        external.fetch(_pin())
    new = hashlib.sha256(b"a different torch wheel").hexdigest()
    message = str(exc.value)
    assert "\n" not in message and known in message and new in message
    assert f'delete the [external."{CPU}"] entry' in exc.value.fix and "versions.local.lock" in exc.value.fix
    assert tomllib.loads(external.local_lock_path().read_text())["external"][CPU]["sha256"] == known
    assert not [p for p in external.cache_dir().rglob("*") if p.is_file()], "the refused download is not kept"


def test_an_unreachable_archive_is_one_clear_error(archive, monkeypatch):
    port = archive.server_port
    archive.shutdown()
    archive.server_close()
    with pytest.raises(UsageError) as exc:
        external.fetch(_pin())
    assert f"cannot fetch http://127.0.0.1:{port}/{CPU}" in exc.value.problem
    assert external.ARCHIVE_VAR in exc.value.fix and "\n" not in str(exc.value)
    assert not external.local_lock_path().exists()


def test_a_missing_file_is_one_clear_error(archive):
    archive.files.clear()
    with pytest.raises(UsageError, match="cannot fetch .*cpu/torch-0.4.1.*Not Found"):
        external.fetch(_pin())


def test_the_build_context_installs_it_with_a_hash_and_the_labels_carry_it(archive, monkeypatch, tmp_path):
    monkeypatch.setenv("DLREPRO_CA_CERTS", "")
    house = tmp_path / "house"
    house.mkdir()
    (house / "torch-0.4.1-cp36-cp36m-linux_x86_64.whl").write_bytes(b"a wheelhouse copy: maybe another build")
    monkeypatch.setenv("DLREPRO_WHEELHOUSE", str(house))
    spec = images.ImageSpec("pytorch", "paper", "gpu")
    fetched = external.fetch_all(spec.lock.read_text())
    assert [f.pin.path for f in fetched] == [CU92]
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    counts = images.stage_context(spec, ctx, fetched)
    assert counts["wheels"] >= 1
    staged = (ctx / "lock" / "requirements.txt").read_text()
    assert staged.startswith(spec.lock.read_text())
    assert staged.endswith(f"torch==0.4.1 \\\n    --hash=sha256:{fetched[0].sha256}\n")
    wheel = ctx / "build-inputs" / "wheels" / "torch-0.4.1-cp36-cp36m-linux_x86_64.whl"
    assert wheel.read_bytes() == b"fake torch 0.4.1 cu92 wheel", "the trusted file replaces a same-named copy"
    labels = images.labels(spec, None, fetched)
    assert labels["org.dlrepro.external.torch"] == f"sha256:{fetched[0].sha256} {CU92}"
    assert labels["org.dlrepro.cuda"] == "9.2"
    assert images.tag(spec, None) == images.tag(spec, None), "the trusted digest is a label, not part of the tag"


class _Image:
    def __init__(self, label: str) -> None:
        self.labels, self.tags = {"org.dlrepro.external.torch": label}, ["dlrepro/pytorch:x"]
        self.id = "sha256:" + "0" * 64


def test_a_reused_image_with_another_trusted_file_is_refused(archive):
    spec = images.ImageSpec("pytorch", "paper", "cpu")
    sha = external.fetch(_pin()).sha256
    images.check_trusted(_Image(f"sha256:{sha} {CPU}"), external.recorded(), spec)
    with pytest.raises(UsageError, match="docker rmi"):
        images.check_trusted(_Image(f"sha256:{'1' * 64} {CPU}"), external.recorded(), spec)


def test_external_lines_parse_and_count_in_the_freeze_comparison():
    from images import lockfile

    text = Path(images.ImageSpec("pytorch", "paper").lock).read_text()
    assert external.pins_of(text) == [_pin()]
    freeze = "".join(f"{n}=={p['version']}\n" for n, p in lockfile.parse_lock(text).items())
    assert lockfile.freeze_drift(text, freeze) == ["torch: locked 0.4.1, installed nothing"]
    assert lockfile.freeze_drift(text, freeze + "torch==0.4.1\npip==21.3.1\n") == []
