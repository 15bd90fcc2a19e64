"""Where a lock's files come from (images/sources.py), with pip's configuration cleared as on a machine
whose pip knows only the package index: every lock says its source; a declared file is taken from a
local wheel folder, the cache or its index (a loopback PEP 503 index, images/simpleindex.py, stands in
for PyTorch's CPU wheel index), only when the lock accepts its sha256; a missing one is one line. The
slow test builds the PyTorch environment that way and imports torch."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.errors import UsageError
from images import envs, external, sources
from images.simpleindex import SimpleIndex
from tests.images.wheels import clear_pip, cleared_env, make_wheel, sha256, write_lock

REPO = Path(__file__).resolve().parents[2]
TORCH_LOCK = REPO / "images" / "pytorch" / "current" / "requirements.txt"
TORCH_WHEEL = "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"
PACKAGE_INDEX = "every file from the package index pip is set up with"


@pytest.fixture
def clean(monkeypatch, tmp_path) -> Path:
    """No local folders, an empty cache in tmp_path (returned), no index overrides."""
    clear_pip(monkeypatch)
    monkeypatch.setenv(external.CACHE_VAR, str(tmp_path / "cache"))
    monkeypatch.delenv("DLREPRO_TORCH_CPU_INDEX", raising=False)
    monkeypatch.delenv("DLREPRO_DEMO_INDEX", raising=False)
    return tmp_path / "cache"


@pytest.fixture
def demo(tmp_path, clean):
    """(lock, wheel, index): a lock taking a small wheel from a loopback index that serves it."""
    wheel = make_wheel(tmp_path / "served")
    with SimpleIndex([wheel.parent]) as index:
        yield write_lock(tmp_path / "lock", wheel, index.url), wheel, index


def _closed_port() -> int:
    with SimpleIndex([]) as index:
        port = index.server_port
    return port


CURRENT_LOCKS = sorted(str(p.relative_to(REPO)) for p in REPO.glob("images/*/current/requirements*.txt"))


@pytest.mark.parametrize("lock", CURRENT_LOCKS)
def test_every_current_lock_says_where_its_files_come_from(lock, clean):
    said = sources.describe(REPO / lock)
    if lock == "images/pytorch/current/requirements.txt":
        assert said == (f"{TORCH_WHEEL} from PyTorch's CPU wheel index (https://download.pytorch.org/whl/cpu/; "
                        "DLREPRO_TORCH_CPU_INDEX); everything else from the package index pip is set up with")
    else:
        assert said == PACKAGE_INDEX


def test_the_command_says_every_locks_source_in_one_line_each(clean):
    locks = [*REPO.glob("images/*/*/requirements*.txt"), REPO / "images" / "host" / "requirements.txt"]
    proc = subprocess.run([sys.executable, "-m", "images.sources"], capture_output=True, text=True, cwd=REPO,
                          env=cleared_env(), check=True)
    lines = proc.stdout.splitlines()
    assert len(lines) == len(locks) and {line.split(":")[0] for line in lines} == {
        str(p.relative_to(REPO)) for p in locks}
    assert [line for line in lines if not line.endswith(f": {PACKAGE_INDEX}")] == [
        f"images/pytorch/current/requirements.txt: {TORCH_WHEEL} from PyTorch's CPU wheel index "
        "(https://download.pytorch.org/whl/cpu/; DLREPRO_TORCH_CPU_INDEX); everything else from the package index "
        "pip is set up with",
        *[f"images/pytorch/paper/requirements{v}.txt: torch==0.4.1 from PyTorch's wheel archive "
          f"(https://download.pytorch.org/whl/{b}/torch-0.4.1-cp36-cp36m-linux_x86_64.whl; DLREPRO_TORCH_ARCHIVE), "
          "trusted on first use; everything else from the package index pip is set up with"
          for v, b in (("-gpu", "cu92"), ("", "cpu"))]]


def test_the_cpu_torch_file_is_the_one_the_lock_pins_by_hash():
    (item,) = sources.declared(TORCH_LOCK)
    assert (item.project, item.version, item.override) == ("torch", "2.13.0+cpu", "DLREPRO_TORCH_CPU_INDEX")
    assert item.accepted() == {"6746dbcbeb526eb61330b76b41ff1b4eb848951103a892eeb080dfa2b264667b"}
    assert sources.declared(TORCH_LOCK.with_name("requirements-gpu.txt")) == []  # the CUDA build: the index's own


def test_the_override_replaces_the_index(monkeypatch, clean):
    (item,) = sources.declared(TORCH_LOCK)
    assert item.page_url() == "https://download.pytorch.org/whl/cpu/torch/"
    monkeypatch.setenv("DLREPRO_TORCH_CPU_INDEX", "http://127.0.0.1:8123/mirror")
    assert item.page_url() == "http://127.0.0.1:8123/mirror/torch/"
    assert "(http://127.0.0.1:8123/mirror/; DLREPRO_TORCH_CPU_INDEX)" in sources.describe(TORCH_LOCK)


def test_a_declared_file_is_fetched_from_its_index_once_and_kept_by_its_hash(demo, clean, capsys):
    lock, wheel, index = demo
    (got,) = sources.fetch_all(lock)
    assert got == clean / sha256(wheel) / wheel.name
    assert got.read_bytes() == wheel.read_bytes()
    assert index.served == [wheel.name]
    assert f"fetching {wheel.name} from the demo index ({index.url}files/" in capsys.readouterr().err
    # The next build takes the cached copy: nothing fetched again.
    assert sources.fetch_all(lock) == [got]
    assert index.served == [wheel.name]
    assert sources.find_links_args([got]) == ["--find-links", str(got.parent)]


def test_a_local_wheel_folder_comes_before_the_index(demo, monkeypatch):
    lock, wheel, index = demo
    monkeypatch.setenv("DLREPRO_WHEELHOUSE", str(wheel.parent))
    assert sources.fetch_all(lock) == [wheel]
    assert index.served == []


def test_pips_own_find_links_count_as_a_local_folder(demo, monkeypatch, tmp_path):
    lock, wheel, index = demo
    conf = tmp_path / "pip.conf"
    conf.write_text(f"[global]\nfind-links = {wheel.parent}\n")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    assert sources.pip_find_links() == [wheel.parent]  # PIP_FIND_LINKS='' does not override a file
    assert sources.fetch_all(lock) == [wheel]
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "lock"))
    assert sources.pip_find_links() == [tmp_path / "lock"]  # a set one does
    assert index.served == []


def test_a_file_the_lock_does_not_accept_is_refused_and_not_kept(tmp_path, clean):
    locked = make_wheel(tmp_path / "locked")
    other = make_wheel(tmp_path / "other", body="another build")
    assert sha256(other) != sha256(locked)
    with SimpleIndex([other.parent]) as index:
        lock = write_lock(tmp_path / "lock", locked, index.url)
        before = sha256(lock)
        with pytest.raises(UsageError) as exc:
            sources.fetch_all(lock)
    assert str(exc.value) == (
        f"{index.url}files/demo_pkg-1.0%2Bcpu-py3-none-any.whl has sha256 {sha256(other)}, which {lock} does not "
        "accept for demo-pkg==1.0+cpu; point DLREPRO_DEMO_INDEX at an index serving the locked file, or put that "
        "file in a folder named by PIP_FIND_LINKS or DLREPRO_WHEELHOUSE")
    assert sha256(lock) == before
    assert not [p for p in clean.rglob("*") if p.is_file()]  # no partial or refused file left


def test_a_missing_file_is_one_line_naming_it_the_address_and_the_two_fixes(tmp_path, clean):
    wheel = make_wheel(tmp_path / "served")
    port = _closed_port()
    lock = write_lock(tmp_path / "lock", wheel, f"http://127.0.0.1:{port}/simple")
    with pytest.raises(UsageError) as exc:
        sources.fetch_all(lock)
    assert str(exc.value) == (
        f"demo_pkg-1.0+cpu-py3-none-any.whl (pinned by {lock}) is in no local wheel folder and "
        f"http://127.0.0.1:{port}/simple/demo-pkg/ does not give it ([Errno 111] Connection refused); set "
        "DLREPRO_DEMO_INDEX to a mirror of the demo index (a PEP 503 simple index), or put the file in a folder "
        "named by PIP_FIND_LINKS or DLREPRO_WHEELHOUSE")
    # An index that answers but lists no such file, or has no page for the project, says so.
    with SimpleIndex([make_wheel(tmp_path / "older", version="0.9").parent]) as index:
        lock = write_lock(tmp_path / "lock", wheel, index.url)
        with pytest.raises(UsageError, match=r"does not give it \(not listed there\); set DLREPRO_DEMO_INDEX "):
            sources.fetch_all(lock)
    with SimpleIndex([]) as index:
        lock = write_lock(tmp_path / "lock", wheel, index.url)
        with pytest.raises(UsageError, match=r"demo-pkg/ does not give it \(HTTP 404\); set DLREPRO_DEMO_INDEX "):
            sources.fetch_all(lock)


def test_a_sources_entry_the_lock_does_not_pin_is_refused(demo):
    lock, wheel, _ = demo
    lock.write_text(lock.read_text().replace("demo-pkg==1.0+cpu", "demo-pkg==1.1+cpu"))
    with pytest.raises(UsageError) as exc:
        sources.fetch_all(lock)
    assert str(exc.value) == (f"{lock.with_name('sources.toml')} names {wheel.name}, but {lock} pins no "
                              "demo-pkg==1.0+cpu with a hash; make the two agree (the lock decides; edit sources.toml)")


def test_make_envs_on_a_clean_machine_without_the_torch_index_is_one_line(tmp_path):
    # `make envs FRAMEWORKS=pytorch` runs this; before issue 27 pip failed deep into the build instead.
    port = _closed_port()
    root = tmp_path / "venvs"
    before = sha256(TORCH_LOCK)
    proc = subprocess.run([sys.executable, "-m", "images.envs", "pytorch"], capture_output=True, text=True, cwd=REPO,
                          env=cleared_env(DLREPRO_VENV_ROOT=str(root), DLREPRO_EXTERNAL_CACHE=str(tmp_path / "c"),
                                          DLREPRO_TORCH_CPU_INDEX=f"http://127.0.0.1:{port}/"))
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        f"error: {TORCH_WHEEL} (pinned by images/pytorch/current/requirements.txt) is in no local wheel folder and "
        f"http://127.0.0.1:{port}/torch/ does not give it ([Errno 111] Connection refused); set "
        "DLREPRO_TORCH_CPU_INDEX to a mirror of PyTorch's CPU wheel index (a PEP 503 simple index), or put the file "
        "in a folder named by PIP_FIND_LINKS or DLREPRO_WHEELHOUSE"]
    assert not [p for p in root.iterdir() if p.is_dir()]  # nothing built
    assert sha256(TORCH_LOCK) == before


def _machine_torch_folder() -> Path:
    """Where this machine's pip finds the locked torch wheel (its find-links), or skip."""
    for folder in sources.pip_find_links():
        if (folder / TORCH_WHEEL).is_file():
            return folder
    pytest.skip(f"{TORCH_WHEEL} is in none of this machine's pip find-links folders (pip config list): "
                "nothing to stand in for PyTorch's CPU wheel index")


@pytest.mark.slow
def test_a_clean_machine_builds_the_pytorch_environment_from_a_stand_in_torch_index(tmp_path):
    folder = _machine_torch_folder()
    lock_before = sha256(TORCH_LOCK)
    root = tmp_path / "venvs"
    with SimpleIndex([folder]) as index:
        env = cleared_env(DLREPRO_VENV_ROOT=str(root), DLREPRO_EXTERNAL_CACHE=str(tmp_path / "cache"),
                          DLREPRO_TORCH_CPU_INDEX=index.url)
        proc = subprocess.run([sys.executable, "-m", "images.envs", "--era", "current", "pytorch"],
                              capture_output=True, text=True, cwd=REPO, env=env, timeout=900)
        served = list(index.served)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert served == [TORCH_WHEEL]  # the torch file came from the stand-in index, nothing else did
    sha = envs.env_sha256(TORCH_LOCK, TORCH_LOCK.read_bytes())
    assert sha == hashlib.sha256(TORCH_LOCK.read_bytes()).hexdigest()  # sources.toml is no part of the identity
    python = root / f"pytorch-current-{sha[:12]}" / "bin" / "python"
    out = subprocess.run([str(python), "-c", "import json, torch; print(json.dumps(torch.__version__))"],
                         capture_output=True, text=True, env=env, check=True)
    assert json.loads(out.stdout) == "2.13.0+cpu"
    assert sha256(TORCH_LOCK) == lock_before
