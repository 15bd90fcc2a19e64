"""The paper-era base `make base ERA=paper` makes (images/base/make-paper-base.sh), on a real Docker engine
(slow). The test makes it through the same make target, from $PYTHON_STANDIN or else the stand-in a CI clone
has beside the repository (../shared/sources/Python-3.6.15.tar.xz); with unchanged inputs that reuses the
tagged image in about a second, so CI builds the base once. It then checks the image: CPython 3.6.15 with
ssl, sqlite3, ctypes and a working venv + pip, bullseye's apt sources, and labels that say the same as
/etc/dlrepro/base.json."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from images import envs, external, pythonsource

# In the paper-image stage (make test-paper), after CI's `make base ERA=paper`: this reuses that base by its tag.
pytestmark = [pytest.mark.slow, pytest.mark.paper_image]

SHARED_STANDIN = envs.REPO_ROOT.parent / "shared" / "sources" / "Python-3.6.15.tar.xz"
PROBE = r"""
import ctypes, json, platform, sqlite3, ssl, subprocess, sys, venv
venv.create("/tmp/venv", with_pip=True)
pip = subprocess.run(["/tmp/venv/bin/python", "-m", "pip", "--version"], check=True, stdout=subprocess.PIPE)
print(json.dumps({"python": platform.python_version(), "openssl": ssl.OPENSSL_VERSION,
                  "sqlite": sqlite3.sqlite_version, "ctypes": ctypes.sizeof(ctypes.c_void_p),
                  "pip": pip.stdout.decode().split()[1], "record": json.load(open("/etc/dlrepro/base.json")),
                  "sources": open("/etc/apt/sources.list").read()}))
"""


@pytest.fixture(scope="module")
def paper_base(engine, tmp_path_factory):
    """(the image, its source file): made (or reused by its inputs' tag) through `make base ERA=paper`."""
    standin = os.environ.get(pythonsource.STANDIN_VAR) or str(SHARED_STANDIN)
    if not os.path.isfile(standin):
        pytest.fail(f"no CPython 3.6.15 source to make the paper base from: set {pythonsource.STANDIN_VAR} or put "
                    f"the stand-in at {SHARED_STANDIN}")
    # The build's trust on first use goes to a scratch lock: tests never write the repository's.
    env = {**os.environ, pythonsource.STANDIN_VAR: "", pythonsource.SOURCE_VAR: "",
           external.LOCAL_LOCK_VAR: str(tmp_path_factory.mktemp("lock") / "versions.local.lock")}
    subprocess.run(["make", "--no-print-directory", "base", "ERA=paper", f"PYTHON_STANDIN={standin}"],
                   cwd=envs.REPO_ROOT, env=env, check=True, stdout=subprocess.PIPE)
    return engine.images.get("dlrepro/base:paper"), standin


def test_the_paper_base_runs_cpython_3_6_15_with_ssl_sqlite_ctypes_and_venv(engine, paper_base):
    image, _ = paper_base
    out = json.loads(engine.containers.run(image.id, ["python3.6", "-c", PROBE], remove=True))
    assert out["python"] == "3.6.15"
    assert out["openssl"].startswith("OpenSSL 1.1.1") and out["ctypes"] == 8 and out["sqlite"].startswith("3.")
    assert out["pip"]  # ensurepip's bundled pip, what images/common/install-lock.sh starts from
    assert "bullseye main" in out["sources"]  # the paper Dockerfile installs framework packages from them
    assert image.labels["org.dlrepro.debian-version"] == out["record"]["debian_version"]


def test_its_labels_and_base_json_agree_and_name_the_source(engine, paper_base):
    image, standin = paper_base
    record = json.loads(engine.containers.run(image.id, ["cat", "/etc/dlrepro/base.json"], remove=True))
    assert {f"org.dlrepro.{pythonsource.LABELS[k]}": v for k, v in record.items()} == {
        k: v for k, v in image.labels.items() if k != "org.dlrepro.base-inputs"}
    assert (record["era"], record["debian_release"], record["python"], record["pgo"]) == (
        "paper", "bullseye", "3.6.15", "no")
    assert record["debian_version"].startswith("11.") and record["cc"].startswith("gcc (Debian 10.")
    assert (record["source"], record["source_sha256"], record["source_kind"]) == (
        os.path.basename(standin), external.file_sha256(standin), "stand-in")
    assert "--enable-shared" in record["configure"] and "stand-in" in record["departs_from"]
    tags = [t for t in image.tags if t.startswith("dlrepro/base:paper-")]
    assert tags == [f"dlrepro/base:paper-{image.labels['org.dlrepro.base-inputs']}"]
    assert image.attrs["Config"]["Cmd"] == ["python3"] and "LANG=C.UTF-8" in image.attrs["Config"]["Env"]
