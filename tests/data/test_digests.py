"""Files with no published digest: kept on first download by their size, their sha256 recorded in the
local lock (data/digests.py), every later copy held to it; the digest reaches run.json and the report.

Everything goes over a loopback HTTP server, with spa-eng.zip files in manythings' real format.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

from analysis import analyze
from bench import prepared as bench_prepared
from bench import schema
from bench.errors import UsageError
from campaign import execute, plan
from data import digests
from data import download as dl
from data import manythings as mt
from data.__main__ import main
from data.manifest import FIRST_DOWNLOAD, Manifest, load_manifest
from data.paths import prepared_dir, raw_dir
from data.prepare import prepare
from tests.campaign.scriptrunner import ScriptRunner
from tests.data.fixtures import LoopbackServer, manifest_for, sha256, synthetic_files, write_manifest_toml

ZIP = mt.MANYTHINGS_ARCHIVE
FIRST_WORDS = "sha256 recorded on first download, size verified"


@pytest.fixture(scope="module")
def copy_a(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """The copy first downloaded: a synthetic spa-eng.zip in manythings' layout."""
    return synthetic_files(tmp_path_factory.mktemp("manythings"), "manythings")[ZIP]


@pytest.fixture(scope="module")
def copy_b(copy_a: bytes) -> bytes:
    """Another copy of the same size: the same members with other timestamps (a re-export upstream)."""
    source, out = zipfile.ZipFile(io.BytesIO(copy_a)), io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for info in source.infolist():
            stamped = zipfile.ZipInfo(info.filename, date_time=(2024, 6, 1, 12, 0, 0))
            stamped.compress_type, stamped.external_attr = info.compress_type, info.external_attr
            zf.writestr(stamped, source.read(info.filename))
    data = out.getvalue()
    assert len(data) == len(copy_a) and data != copy_a
    return data


@pytest.fixture(autouse=True)
def _no_user_mirror(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(dl.MIRROR_ENV, raising=False)


def _manifest(server: LoopbackServer, size: int, *prefixes: str) -> dict:
    """spa-eng.zip with no published digest, only its size, served from each /<prefix>/ in turn."""
    mirrors = [f"{server.url}/{p}/" for p in prefixes or ("a",)]
    return manifest_for({"manythings": {ZIP: b""}}, mirrors, **{ZIP: {"sha256": FIRST_DOWNLOAD, "size": size}})


def _get(root: Path, manifest: dict) -> Path:
    return dl.download("manythings", root, manifest=manifest, progress=False, timeout=10)


def _lock(root: Path) -> Path:
    return digests.lock_path(Path(root) / "raw")


# ---------------------------------------------------------------- the manifest


def test_shipped_entry_is_first_download_with_the_published_size():
    spec = load_manifest().get("manythings").file(ZIP)
    assert spec.sha256 == FIRST_DOWNLOAD and spec.first_download and not spec.pinned
    assert spec.size == 2_638_744
    assert spec.urls[0] == "https://storage.googleapis.com/download.tensorflow.org/data/spa-eng.zip"


def test_first_download_needs_a_size():
    with pytest.raises(UsageError) as err:
        Manifest.from_dict({"manythings": {"files": [{"name": ZIP, "sha256": FIRST_DOWNLOAD}]}})
    message = str(err.value)
    assert "\n" not in message and "has sha256 'first-download' but no size" in message and "size = <bytes>" in message
    with pytest.raises(UsageError, match="no valid sha256; give 64 hex digits"):
        Manifest.from_dict({"manythings": {"files": [{"name": ZIP, "sha256": "unverified", "size": 1}]}})


# ---------------------------------------------------------------- download


def test_first_download_is_size_checked_recorded_and_then_held(tmp_path, copy_a, copy_b, capsys):
    with LoopbackServer({f"/a/{ZIP}": copy_a}) as server:
        manifest = _manifest(server, len(copy_a))
        raw = _get(tmp_path, manifest)
        assert (raw / ZIP).read_bytes() == copy_a and sorted(p.name for p in raw.iterdir()) == [ZIP]
        entry = json.loads(_lock(tmp_path).read_text())["files"][f"manythings/{ZIP}"]
        assert entry["sha256"] == sha256(copy_a) and entry["size"] == len(copy_a)
        assert entry["source_url"] == f"{server.url}/a/{ZIP}" and entry["recorded_at"].endswith("+00:00")
        err = capsys.readouterr().err  # said even with progress off
        assert f"manythings/{ZIP}: sha256 recorded on first download: {sha256(copy_a)}" in err
        assert str(_lock(tmp_path)) in err

        # Present and matching the record: nothing fetched, nothing recorded again.
        before = (len(server.requests), _lock(tmp_path).read_text())
        _get(tmp_path, manifest)
        assert (len(server.requests), _lock(tmp_path).read_text()) == before

        # Upstream re-exports the file: same size, other bytes. Refused, naming both digests.
        (raw / ZIP).unlink()
        server.files[f"/a/{ZIP}"] = copy_b
        with pytest.raises(UsageError) as refused:
            _get(tmp_path, manifest)
    message = str(refused.value)
    assert "\n" not in message
    assert f"recorded {sha256(copy_a)}, got {sha256(copy_b)}" in message
    assert str(_lock(tmp_path)) in message and "python -m data forget manythings" in message
    assert (raw / ZIP).exists() is False and list(raw.iterdir()) == []
    assert digests.recorded(_lock(tmp_path), "manythings", ZIP) == sha256(copy_a)


def test_wrong_size_is_refused_and_the_next_source_tried(tmp_path, copy_a):
    other = mt.spa_eng_zip_bytes(77)  # a real spa-eng.zip of another size (like manythings.org's export)
    assert len(other) != len(copy_a)
    with LoopbackServer({f"/bad/{ZIP}": other, f"/a/{ZIP}": copy_a}) as server:
        _get(tmp_path, _manifest(server, len(copy_a), "bad", "a"))
        assert server.paths() == [f"/bad/{ZIP}", f"/a/{ZIP}"]
    assert digests.recorded(_lock(tmp_path), "manythings", ZIP) == sha256(copy_a)


def test_only_wrong_sizes_record_nothing(tmp_path, copy_a):
    other = mt.spa_eng_zip_bytes(77)
    with LoopbackServer({f"/bad/{ZIP}": other}) as server:
        with pytest.raises(UsageError) as err:
            _get(tmp_path, _manifest(server, len(copy_a), "bad"))
    message = str(err.value)
    assert "\n" not in message
    assert f"size mismatch: expected {len(copy_a)} bytes, got {len(other)}" in message and "not recorded" in message
    assert not _lock(tmp_path).exists() and list(raw_dir(tmp_path, "manythings").iterdir()) == []


def test_file_already_present_is_a_first_download(tmp_path, copy_a):
    raw = raw_dir(tmp_path, "manythings")
    raw.mkdir(parents=True)
    (raw / ZIP).write_bytes(copy_a)
    with LoopbackServer({}) as server:
        _get(tmp_path, _manifest(server, len(copy_a)))
        assert server.requests == []
    entry = digests.read(_lock(tmp_path))[f"manythings/{ZIP}"]
    assert entry["sha256"] == sha256(copy_a) and entry["source_url"] == (raw / ZIP).resolve().as_uri()


def test_file_already_present_of_another_size_is_fetched_again(tmp_path, copy_a):
    raw = raw_dir(tmp_path, "manythings")
    raw.mkdir(parents=True)
    (raw / ZIP).write_bytes(copy_a[:-10])
    with LoopbackServer({f"/a/{ZIP}": copy_a}) as server:
        _get(tmp_path, _manifest(server, len(copy_a)))
    assert (raw / ZIP).read_bytes() == copy_a
    assert digests.recorded(_lock(tmp_path), "manythings", ZIP) == sha256(copy_a)


def test_interrupted_first_download_resumes_then_records(tmp_path, copy_a):
    with LoopbackServer({f"/a/{ZIP}": copy_a}) as server:
        manifest = _manifest(server, len(copy_a))
        server.cut(after_bytes=1000)
        with pytest.raises(UsageError, match="interrupted"):
            dl.download("manythings", tmp_path, manifest=manifest, progress=False, timeout=10, retries=0)
        assert (raw_dir(tmp_path, "manythings") / f"{ZIP}.part").stat().st_size == 1000
        assert not _lock(tmp_path).exists()
        _get(tmp_path, manifest)
        assert server.requests[-1] == (f"/a/{ZIP}", "bytes=1000-", 206)
    assert digests.recorded(_lock(tmp_path), "manythings", ZIP) == sha256(copy_a)


def test_cli_download_list_and_forget(tmp_path, copy_a, copy_b, capsys):
    with LoopbackServer({f"/a/{ZIP}": copy_a}) as server:
        manifest = write_manifest_toml(tmp_path / "m.toml", _manifest(server, len(copy_a)))
        common = ["--root", str(tmp_path / "data"), "--manifest", str(manifest)]
        assert main(["download", "--datasets", "manythings", "-q", *common]) == 0
        assert f"sha256 recorded on first download: {sha256(copy_a)}" in capsys.readouterr().err
        assert main(["list", *common]) == 0
        assert f"{ZIP}: {FIRST_WORDS}: {sha256(copy_a)}" in capsys.readouterr().out

        server.files[f"/a/{ZIP}"] = copy_b
        assert main(["forget", "manythings", *common]) == 0
        said = capsys.readouterr().out
        assert f"forgot the sha256 recorded on first download for {ZIP}" in said
        assert not (raw_dir(tmp_path / "data", "manythings") / ZIP).exists()
        assert main(["download", "--datasets", "manythings", "-q", "--no-prepare", *common]) == 0
    assert digests.recorded(_lock(tmp_path / "data"), "manythings", ZIP) == sha256(copy_b)


def test_unreadable_lock_is_one_line(tmp_path, copy_a):
    _lock(tmp_path).parent.mkdir(parents=True)
    _lock(tmp_path).write_text("{not json")
    with LoopbackServer({f"/a/{ZIP}": copy_a}) as server:
        with pytest.raises(UsageError) as err:
            _get(tmp_path, _manifest(server, len(copy_a)))
    assert "\n" not in str(err.value) and "cannot be read as JSON" in str(err.value)


# ---------------------------------------------------------------- prepare


def test_prepare_holds_the_raw_file_to_the_recorded_digest(tmp_path, copy_a, copy_b):
    raw = tmp_path / "raw" / "manythings"
    raw.mkdir(parents=True)
    (raw / ZIP).write_bytes(copy_a)
    manifest = {"manythings": {"files": [{"name": ZIP, "sha256": FIRST_DOWNLOAD, "size": len(copy_a)}]}}
    with pytest.raises(UsageError) as err:
        prepare("manythings", raw, tmp_path / "out", manifest=manifest, progress=False)
    assert "none was recorded on first download" in str(err.value) and "python -m data download" in str(err.value)

    digests.record(digests.lock_for(raw), "manythings", ZIP, sha256(copy_a), len(copy_a), "test")
    meta = bench_prepared.read_meta(prepare("manythings", raw, tmp_path / "out", manifest=manifest, progress=False))
    assert meta["raw_files"] == {ZIP: sha256(copy_a)} and meta["raw_verification"] == {ZIP: FIRST_WORDS}

    (raw / ZIP).write_bytes(copy_b)
    with pytest.raises(UsageError) as err:
        prepare("manythings", raw, tmp_path / "out", manifest=manifest, progress=False)
    message = str(err.value)
    assert "\n" not in message and sha256(copy_a) in message and sha256(copy_b) in message
    assert str(digests.lock_for(raw)) in message and "python -m data forget manythings" in message


# ---------------------------------------------------------------- into run.json and the report


def test_recorded_digest_reaches_run_json_and_the_report(tmp_path, copy_a):
    data_root = tmp_path / "data"
    with LoopbackServer({f"/a/{ZIP}": copy_a}) as server:
        raw = _get(data_root, _manifest(server, len(copy_a)))
        manifest = _manifest(server, len(copy_a))
    prepare("manythings", raw, prepared_dir(data_root, "manythings"), manifest=manifest, progress=False)

    # Plan and run one real campaign run; the runner's process dies, so the host writes run.json from
    # the request with the entrypoint's own constructor (bench.schema.run_record).
    runner = ScriptRunner("crash")
    campaign = tmp_path / "results" / "mt"
    matrix = plan.build_matrix(["pytorch"], ["seq2seq-manythings"], "cpu", "smoke", 1, "real")
    runs = plan.plan(matrix, runner, "mt", campaign, data_root, threads=1)
    assert runs[0].request["data"]["raw_files"] == {ZIP: {"sha256": sha256(copy_a), "verified": FIRST_WORDS}}
    execute.execute(runs, runner, campaign, 30)
    record = schema.read_run(campaign / runs[0].run_id)
    assert record["dataset"]["raw_files"] == {ZIP: {"sha256": sha256(copy_a), "verified": FIRST_WORDS}}

    md = analyze(campaign, tmp_path / "report").report_md.read_text(encoding="utf-8")
    row = next(line for line in md.splitlines() if f"| {ZIP} |" in line)
    assert f"| {sha256(copy_a)} | {FIRST_WORDS} |" in row and "| manythings | real |" in row


def test_forget_refuses_a_dataset_with_published_digests(tmp_path, capsys):
    assert main(["forget", "mnist", "--root", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "every file of mnist has a published sha256" in err
