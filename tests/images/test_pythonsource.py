"""images/pythonsource.py: which CPython 3.6.15 source `make base ERA=paper` builds from. python.org's files
are accepted only at their published digests (a small real file stands in for python.org's here, its digest
put in the table), a stand-in is trusted on first use in a local lock in tmp_path, and with neither given
python.org is tried (a loopback server, or a closed port). Also the base's record and labels."""

from __future__ import annotations

import hashlib
import json
import socket
import subprocess
import sys
import tomllib

import pytest

from bench.errors import UsageError
from images import envs, external, pythonsource
from tests.data.fixtures import LoopbackServer

XZ = "Python-3.6.15.tar.xz"
TGZ = "Python-3.6.15.tgz"
SHARED_STANDIN = envs.REPO_ROOT.parent / "shared" / "sources" / XZ
STANDIN_SHA = "71a43bd39bbd9090e0c9fd5962d77697732ed780a80ceadb949e3ba94905c345"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture(autouse=True)
def local(monkeypatch, tmp_path):
    """The local lock and the source cache in tmp_path; python.org a closed loopback port."""
    monkeypatch.setenv(external.LOCAL_LOCK_VAR, str(tmp_path / "versions.local.lock"))
    monkeypatch.setenv(pythonsource.CACHE_VAR, str(tmp_path / "cache"))
    monkeypatch.setenv(pythonsource.FTP_VAR, f"http://127.0.0.1:{_closed_port()}/ftp/python")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    return tmp_path


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture()
def published(monkeypatch, tmp_path):
    """A small file under python.org's .tar.xz name, its digest taken as the published one."""
    data = b"CPython 3.6.15 release tree (a small stand-in for the test)\n" * 100
    path = tmp_path / "dl" / XZ
    path.parent.mkdir()
    path.write_bytes(data)
    monkeypatch.setitem(pythonsource.PYTHON_ORG, XZ, _sha(data))
    return path


def test_python_orgs_file_at_its_published_digest_is_accepted(published):
    found = pythonsource.resolve(source=str(published))
    assert (found.path, found.sha256, found.kind) == (published, _sha(published.read_bytes()), "python.org")
    assert found.line() == f"{found.sha256}\tpython.org\t{XZ}\t{published}"


def test_python_orgs_file_with_one_byte_changed_is_refused_naming_both_digests(published):
    expected = _sha(published.read_bytes())
    data = bytearray(published.read_bytes())
    data[100] ^= 1
    published.write_bytes(bytes(data))
    with pytest.raises(UsageError) as caught:
        pythonsource.resolve(source=str(published))
    assert str(caught.value) == (
        f"{published} has sha256 {_sha(bytes(data))}, not python.org's {expected} for {XZ}; use python.org's "
        f"file unchanged, or name this one as a stand-in: PYTHON_STANDIN={published}")
    assert published.read_bytes() == bytes(data)  # the file is left as it was


@pytest.mark.skipif(not SHARED_STANDIN.is_file(), reason=f"needs the shared stand-in at {SHARED_STANDIN}")
def test_the_shared_stand_in_is_not_python_orgs_file():
    with pytest.raises(UsageError) as caught:
        pythonsource.resolve(source=str(SHARED_STANDIN))
    assert str(caught.value) == (
        f"{SHARED_STANDIN.resolve()} has sha256 {STANDIN_SHA}, not python.org's "
        f"6e28d7cdd6dd513dd190e49bca3972e20fcf455090ccf2ef3f1a227614135d91 for {XZ}; use python.org's file "
        f"unchanged, or name this one as a stand-in: PYTHON_STANDIN={SHARED_STANDIN}")


def test_a_file_not_named_as_python_orgs_is_refused_as_a_source(tmp_path):
    other = tmp_path / "cpython.tar.xz"
    other.write_bytes(b"x")
    with pytest.raises(UsageError) as caught:
        pythonsource.resolve(source=str(other))
    assert str(caught.value) == (
        f"PYTHON_SOURCE={other} is not one of python.org's files ({XZ}, {TGZ}); pass python.org's file under "
        f"its own name, or name this one as a stand-in: PYTHON_STANDIN={other}")


def test_a_stand_in_is_recorded_on_first_use_and_a_changed_one_refused_naming_both(local, capsys):
    lock = local / "versions.local.lock"
    lock.write_text('[external."cpu/torch-0.4.1-cp36-cp36m-linux_x86_64.whl"]\nsha256 = "' + "ab" * 32 + '"\n'
                    'url = "http://archive/cpu/torch.whl"\nfirst_fetched = "2026-11-01T00:00:00Z"\n')
    first = local / "repacked" / XZ
    first.parent.mkdir()
    first.write_bytes(b"a repacked CPython 3.6.15 tree\n")
    found = pythonsource.resolve(stand_in=str(first))
    assert (found.sha256, found.kind) == (_sha(first.read_bytes()), "stand-in")
    assert capsys.readouterr().err == (f"trusting the stand-in {first} on first use: sha256 {found.sha256} "
                                       "(recorded in versions.local.lock)\n")
    entries = tomllib.loads(lock.read_text())["external"]
    assert entries["stand-in/cpython-3.6.15-source"]["sha256"] == found.sha256
    assert entries["cpu/torch-0.4.1-cp36-cp36m-linux_x86_64.whl"]["sha256"] == "ab" * 32  # kept
    assert pythonsource.resolve(stand_in=str(first)) == found  # the same file again: accepted, not re-recorded
    assert capsys.readouterr().err == ""

    second = local / "other" / "Python-3.6.15.tgz"
    second.parent.mkdir()
    second.write_bytes(b"another CPython 3.6.15 tree\n")
    before = lock.read_text()
    with pytest.raises(UsageError) as caught:
        pythonsource.resolve(stand_in=str(second))
    assert str(caught.value) == (
        f"the stand-in {second} has sha256 {_sha(second.read_bytes())}, but versions.local.lock recorded "
        f"{found.sha256} for the first CPython 3.6.15 stand-in; name the file of that sha256 again, or delete the "
        f"[external.\"stand-in/cpython-3.6.15-source\"] entry from {lock} to trust this one")
    assert lock.read_text() == before


def test_both_or_a_missing_file_are_refused(tmp_path):
    with pytest.raises(UsageError, match=r"^both PYTHON_SOURCE and PYTHON_STANDIN are given; give one of them$"):
        pythonsource.resolve(source="a", stand_in="b")
    with pytest.raises(UsageError) as caught:
        pythonsource.resolve(stand_in=str(tmp_path / "absent.tar.xz"))
    assert str(caught.value) == (f"PYTHON_STANDIN={tmp_path / 'absent.tar.xz'} is not a file; give the path of "
                                 "a CPython 3.6.15 source tarball")


def test_without_a_source_and_without_python_org_one_line_names_both_variables(local):
    ftp = pythonsource.os.environ[pythonsource.FTP_VAR]
    result = subprocess.run([sys.executable, "-m", "images.pythonsource", "resolve"], cwd=envs.REPO_ROOT,
                            capture_output=True, text=True,
                            env={**pythonsource.os.environ, "PYTHON_SOURCE": "", "PYTHON_STANDIN": ""})
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (
        f"error: no CPython 3.6.15 source given and python.org is not reachable ({ftp}/3.6.15/{XZ}: [Errno 111] "
        f"Connection refused; {ftp}/3.6.15/{TGZ}: [Errno 111] Connection refused); pass python.org's "
        f"{XZ} or .tgz as PYTHON_SOURCE=<path>, or another copy as PYTHON_STANDIN=<path> (trusted on first use)\n")
    assert not any((local / "cache").glob("*"))


@pytest.fixture()
def python_org(monkeypatch):
    """A loopback python.org (tests.data.fixtures) serving a small .tgz whose digest is taken as the published one."""
    with LoopbackServer({f"/ftp/python/3.6.15/{TGZ}": b"a small CPython 3.6.15 tgz\n"}) as server:
        monkeypatch.setitem(pythonsource.PYTHON_ORG, TGZ, _sha(server.files[f"/ftp/python/3.6.15/{TGZ}"]))
        monkeypatch.setenv(pythonsource.FTP_VAR, f"{server.url}/ftp/python/")
        yield server


def test_python_org_is_fetched_into_the_cache_at_its_digest_and_reused(python_org, local):
    found = pythonsource.resolve()
    assert (found.path, found.kind) == (local / "cache" / TGZ, "python.org")
    python_org.files.clear()  # a second build needs no network
    assert pythonsource.resolve() == found


def test_a_fetched_file_of_another_digest_is_refused_and_not_kept(python_org, local):
    changed = b"a changed tgz\n"
    python_org.files[f"/ftp/python/3.6.15/{TGZ}"] = changed
    with pytest.raises(UsageError) as caught:
        pythonsource.resolve()
    url = f"{python_org.url}/ftp/python/3.6.15/{TGZ}"
    assert str(caught.value) == (
        f"{url} has sha256 {_sha(changed)}, not python.org's {pythonsource.PYTHON_ORG[TGZ]} for "
        f"{TGZ}; fetch it again, or pass a copy as PYTHON_SOURCE=<path> (or PYTHON_STANDIN=<path>)")
    assert not any((local / "cache").iterdir())


def test_the_record_and_the_labels_say_the_same_and_how_the_base_departs(tmp_path):
    fields = {"debian_release": "bullseye", "debian_version": "11.11", "source": XZ, "source_sha256": STANDIN_SHA,
              "source_kind": "stand-in", "configure": "--build=x86_64-linux-gnu --enable-shared", "pgo": "no",
              "cc": "gcc (Debian 10.2.1-6) 10.2.1 20210110"}
    out = tmp_path / "etc" / "base.json"
    subprocess.run([sys.executable, "-m", "images.pythonsource", "record", str(out)]
                   + [f"{k}={v}" for k, v in fields.items()], cwd=envs.REPO_ROOT, check=True)
    record = json.loads(out.read_text())
    assert record == {**fields, "era": "paper", "python": "3.6.15", "departs_from": (
        f"CPython 3.6.15 built here from a stand-in for python.org's file ({XZ}, sha256 {STANDIN_SHA}, not "
        "python.org's bytes) on Debian 11.11 bullseye with gcc (Debian 10.2.1-6) 10.2.1 20210110, without PGO, "
        "vs. python:3.6.15-slim-buster's Debian 10 buster and PGO build (--enable-optimizations)")}
    labels = subprocess.run([sys.executable, "-m", "images.pythonsource", "labels", str(out)], cwd=envs.REPO_ROOT,
                            check=True, capture_output=True, text=True).stdout.splitlines()
    assert labels[0] == 'LABEL org.dlrepro.base-era="paper"'
    assert 'LABEL org.dlrepro.python-configure="--build=x86_64-linux-gnu --enable-shared"' in labels
    assert len(labels) == 11


def test_a_record_missing_a_field_is_refused():
    with pytest.raises(UsageError, match=r"^the base record lacks cc, configure, debian_release, debian_version, "
                                          r"pgo, source, source_kind, source_sha256; pass every field to 'record'$"):
        pythonsource.base_record({})
