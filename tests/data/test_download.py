"""data/download.py and the CLI against a loopback HTTP server (no network)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from bench.errors import UsageError
from data import download as dl
from data.__main__ import main
from data.formats import read_idx
from data.manifest import load_manifest
from data.paths import prepared_dir, raw_dir
from data.prepare import prepare
from tests.data.fixtures import LoopbackServer, manifest_for, sha256, synthetic_raw, write_manifest_toml

DEAD = "http://127.0.0.1:9/"  # discard port: nothing listens, the connection is refused
ALL_DATASETS = "cifar10, cifar100, imdb, manythings, mnist, ptb, svhn, voc2012"


@pytest.fixture(scope="module")
def raw_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, bytes]]:
    return synthetic_raw(tmp_path_factory.mktemp("fixtures"))


@pytest.fixture
def server(raw_files: dict[str, dict[str, bytes]]):
    """Serves every fixture file at /a/<name> and, mirror-style, at /m/<dataset>/<name>."""
    files = {}
    for dataset, named in raw_files.items():
        for name, data in named.items():
            files[f"/a/{name}"] = data
            files[f"/m/{dataset}/{name}"] = data
    with LoopbackServer(files) as srv:
        yield srv


@pytest.fixture(autouse=True)
def _no_user_mirror(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(dl.MIRROR_ENV, raising=False)


def _get(dataset, root, manifest, **kw) -> Path:
    kw.setdefault("progress", False)
    kw.setdefault("timeout", 10)
    return dl.download(dataset, root, manifest=manifest, **kw)


def test_good_mirror_downloads_and_prepares(tmp_path, server, raw_files):
    manifest = manifest_for(raw_files, [server.url + "/a/"])
    for dataset in ("mnist", "imdb"):
        raw = _get(dataset, tmp_path, manifest)
        assert raw == raw_dir(tmp_path, dataset)
        assert sorted(p.name for p in raw.iterdir()) == sorted(raw_files[dataset])  # no .part left
        for name, data in raw_files[dataset].items():
            assert (raw / name).read_bytes() == data
        prepare(dataset, raw, prepared_dir(tmp_path, dataset), manifest=manifest, progress=False)

    with np.load(prepared_dir(tmp_path, "mnist") / "arrays.npz") as npz:
        assert npz["x_train"].shape == (120, 28, 28, 1) and npz["x_train"].dtype == np.uint8
        assert npz["y_test"].shape == (40,) and npz["y_test"].dtype == np.int64
        expected = read_idx(raw_dir(tmp_path, "mnist") / "train-labels-idx1-ubyte.gz")
        np.testing.assert_array_equal(npz["y_train"], expected)
    with np.load(prepared_dir(tmp_path, "imdb") / "arrays.npz") as npz:
        assert npz["x_train"].shape == (40, 500) and npz["x_train"].dtype == np.int32
        assert npz["len_test"].dtype == np.int32 and npz["y_train"].dtype == np.int64
        assert sorted(np.bincount(npz["y_train"])) == [20, 20]


def test_first_mirror_404_then_second(tmp_path, server, raw_files):
    manifest = manifest_for(raw_files, [server.url + "/missing/", server.url + "/a/"])
    _get("mnist", tmp_path, manifest)
    name = "train-images-idx3-ubyte.gz"
    assert (f"/missing/{name}", None, 404) in server.requests
    assert (f"/a/{name}", None, 200) in server.requests
    assert server.paths().index(f"/missing/{name}") < server.paths().index(f"/a/{name}")


def test_wrong_checksum_fails_and_marks_nothing_complete(tmp_path, server, raw_files):
    name = "t10k-labels-idx1-ubyte.gz"
    wrong = "0" * 64
    manifest = manifest_for(raw_files, [server.url + "/a/"], **{name: {"sha256": wrong}})
    with pytest.raises(UsageError) as err:
        _get("mnist", tmp_path, manifest)
    message = str(err.value)
    assert "\n" not in message
    assert f"mnist/{name}" in message and "sha256 mismatch" in message
    assert f"expected {wrong}" in message and f"got {sha256(raw_files['mnist'][name])}" in message
    assert "--mirror" in message
    folder = raw_dir(tmp_path, "mnist")
    assert not (folder / name).exists() and not (folder / (name + ".part")).exists()


def test_interrupted_download_leaves_part_and_resumes_with_range(tmp_path, server, raw_files):
    name = "train-images-idx3-ubyte.gz"
    data = raw_files["mnist"][name]
    manifest = manifest_for({"mnist": {name: data}}, [server.url + "/a/"])
    server.cut(after_bytes=1000)
    with pytest.raises(UsageError, match="interrupted"):
        _get("mnist", tmp_path, manifest, retries=0)
    part = raw_dir(tmp_path, "mnist") / (name + ".part")
    assert part.stat().st_size == 1000
    assert not (raw_dir(tmp_path, "mnist") / name).exists()

    _get("mnist", tmp_path, manifest, retries=0)
    assert (f"/a/{name}", "bytes=1000-", 206) in server.requests
    assert not part.exists()
    assert sha256((raw_dir(tmp_path, "mnist") / name).read_bytes()) == sha256(data)


def test_interruption_is_resumed_within_one_call(tmp_path, server, raw_files):
    name = "train-images-idx3-ubyte.gz"
    manifest = manifest_for({"mnist": {name: raw_files["mnist"][name]}}, [server.url + "/a/"])
    server.cut(after_bytes=700, times=2)
    _get("mnist", tmp_path, manifest, retries=2)
    assert [r for _, r, _ in server.requests] == [None, "bytes=700-", "bytes=1400-"]
    assert (raw_dir(tmp_path, "mnist") / name).read_bytes() == raw_files["mnist"][name]


def test_server_ignoring_range_restarts_from_zero(tmp_path, server, raw_files):
    name = "train-images-idx3-ubyte.gz"
    data = raw_files["mnist"][name]
    manifest = manifest_for({"mnist": {name: data}}, [server.url + "/a/"])
    folder = raw_dir(tmp_path, "mnist")
    folder.mkdir(parents=True)
    (folder / (name + ".part")).write_bytes(data[:500])
    server.ignore_range = True
    _get("mnist", tmp_path, manifest)
    assert server.requests == [(f"/a/{name}", "bytes=500-", 200)]
    assert (folder / name).read_bytes() == data


def test_corrupt_part_is_fetched_again_from_the_start(tmp_path, server, raw_files):
    name = "train-labels-idx1-ubyte.gz"
    data = raw_files["mnist"][name]
    manifest = manifest_for({"mnist": {name: data}}, [server.url + "/a/"])
    folder = raw_dir(tmp_path, "mnist")
    folder.mkdir(parents=True)
    (folder / (name + ".part")).write_bytes(b"\xff" * 100)  # wrong bytes from an earlier source
    _get("mnist", tmp_path, manifest)
    assert [r for _, r, _ in server.requests] == ["bytes=100-", None]
    assert (folder / name).read_bytes() == data


def test_complete_file_is_reverified_and_skipped(tmp_path, server, raw_files):
    manifest = manifest_for(raw_files, [server.url + "/a/"])
    _get("imdb", tmp_path, manifest)
    count = len(server.requests)
    _get("imdb", tmp_path, manifest)
    assert len(server.requests) == count
    # A final file that does not verify is replaced.
    archive = raw_dir(tmp_path, "imdb") / "aclImdb_v1.tar.gz"
    archive.write_bytes(b"not the archive")
    _get("imdb", tmp_path, manifest)
    assert archive.read_bytes() == raw_files["imdb"]["aclImdb_v1.tar.gz"]


def test_user_mirror_is_tried_first(tmp_path, server, raw_files, monkeypatch):
    manifest = manifest_for(raw_files, [DEAD])
    _get("imdb", tmp_path, manifest, mirror=server.url + "/m/")
    assert server.paths() == ["/m/imdb/aclImdb_v1.tar.gz"]
    # The same through the environment variable.
    monkeypatch.setenv(dl.MIRROR_ENV, server.url + "/m")
    _get("mnist", tmp_path / "env", manifest)
    assert "/m/mnist/train-images-idx3-ubyte.gz" in server.paths()


def test_local_folder_mirror(tmp_path, raw_files):
    mirror = tmp_path / "site"
    (mirror / "imdb").mkdir(parents=True)
    (mirror / "imdb" / "aclImdb_v1.tar.gz").write_bytes(raw_files["imdb"]["aclImdb_v1.tar.gz"])
    _get("imdb", tmp_path / "root", manifest_for(raw_files, [DEAD]), mirror=str(mirror))
    assert (raw_dir(tmp_path / "root", "imdb") / "aclImdb_v1.tar.gz").is_file()


def test_all_sources_failing_names_urls_and_fix(tmp_path, server, raw_files):
    manifest = manifest_for(raw_files, [server.url + "/nope/", DEAD])
    with pytest.raises(UsageError) as err:
        _get("imdb", tmp_path, manifest)
    message = str(err.value)
    assert "\n" not in message
    assert f"{server.url}/nope/aclImdb_v1.tar.gz (HTTP 404" in message
    assert f"{DEAD}aclImdb_v1.tar.gz (" in message
    assert "--mirror" in message and "DLREPRO_MIRROR" in message


def test_candidate_urls_order(monkeypatch):
    spec = load_manifest().get("mnist").file("train-images-idx3-ubyte.gz")
    urls = dl.candidate_urls("mnist", spec, mirror="https://example.org/data/")
    assert urls[0] == "https://example.org/data/mnist/train-images-idx3-ubyte.gz"
    assert urls[1:] == list(spec.urls)
    monkeypatch.setenv(dl.MIRROR_ENV, "https://env.example/")
    assert dl.candidate_urls("mnist", spec)[0] == "https://env.example/mnist/train-images-idx3-ubyte.gz"


def test_progress_goes_to_stderr(tmp_path, server, raw_files, capsys, monkeypatch):
    monkeypatch.setattr(dl._Meter, "INTERVAL_S", 0.0)
    name = "train-images-idx3-ubyte.gz"
    _get("mnist", tmp_path, manifest_for({"mnist": {name: raw_files["mnist"][name]}}, [server.url + "/a/"]),
         progress=True)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "%)" in captured.err and "MB" in captured.err and "sha256 verified" in captured.err


# ---------------------------------------------------------------- CLI


def test_cli_unknown_dataset(capsys):
    assert main(["download", "--datasets", "mnist", "x"]) == 2
    assert capsys.readouterr().err == f"error: unknown dataset 'x'; choose from: {ALL_DATASETS}\n"
    assert main(["synthetic", "--datasets", "x"]) == 2
    assert capsys.readouterr().err == f"error: unknown dataset 'x'; choose from: {ALL_DATASETS}\n"


def test_cli_with_an_empty_dataset_list_does_nothing(tmp_path, capsys):
    # What a make target passes when all its workloads generate their data in the run (bench/generated.py).
    for command in ("download", "synthetic", "prepare"):
        assert main([command, "--datasets", "--root", str(tmp_path / "data")]) == 0
        assert "no dataset to download or prepare" in capsys.readouterr().out
    assert not (tmp_path / "data").exists()


def test_cli_download_with_mirror(tmp_path, server, raw_files, capsys):
    manifest = write_manifest_toml(tmp_path / "m.toml", manifest_for(raw_files, [DEAD]))
    root = tmp_path / "data"
    argv = ["download", "--datasets", "imdb", "--manifest", str(manifest), "--root", str(root), "-q"]
    assert main(argv + ["--mirror", server.url + "/m"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"imdb: {prepared_dir(root, 'imdb')} (real, 40 train / 20 test")
    assert (prepared_dir(root, "imdb") / "meta.json").is_file()
    assert main(["list", "--manifest", str(manifest), "--root", str(root)]) == 0
    assert "downloaded 1/1; prepared: real" in capsys.readouterr().out


def test_cli_network_failure_is_one_line(tmp_path, raw_files, capsys):
    manifest = write_manifest_toml(tmp_path / "m.toml", manifest_for(raw_files, [DEAD]))
    argv = ["download", "--datasets", "mnist", "--manifest", str(manifest), "--root", str(tmp_path), "-q"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("error: could not download mnist/train-images-idx3-ubyte.gz")
    assert f"{DEAD}train-images-idx3-ubyte.gz" in err and "--mirror" in err
    assert not os.listdir(raw_dir(tmp_path, "mnist"))
