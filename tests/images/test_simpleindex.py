"""images/simpleindex.py: a loopback PEP 503 index that pip itself installs from (with its configuration
cleared), and its command line, which prints its address first (what CI reads) and refuses a folder
that is not there in one line."""

from __future__ import annotations

import subprocess
import sys
import urllib.request
from pathlib import Path

from images.simpleindex import SimpleIndex
from tests.images.wheels import cleared_env, make_wheel, sha256

REPO = Path(__file__).resolve().parents[2]


def test_pip_downloads_a_file_by_its_hash_from_the_index(tmp_path):
    wheel = make_wheel(tmp_path / "wheels")
    reqs = tmp_path / "reqs.txt"
    reqs.write_text(f"demo-pkg==1.0+cpu --hash=sha256:{sha256(wheel)}\n")
    with SimpleIndex([wheel.parent]) as index:
        page = urllib.request.urlopen(f"{index.url}demo-pkg/", timeout=10).read().decode()
        pip = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-cache-dir", "--require-hashes"]
        proc = subprocess.run([*pip, "--index-url", index.url, "-d", str(tmp_path / "got"), "-r", str(reqs)],
                              capture_output=True, text=True, env=cleared_env())
    assert proc.returncode == 0, proc.stderr
    assert f'href="../files/demo_pkg-1.0%2Bcpu-py3-none-any.whl#sha256={sha256(wheel)}"' in page
    assert (tmp_path / "got" / wheel.name).read_bytes() == wheel.read_bytes()
    assert index.served == [wheel.name]


def test_the_command_prints_its_address_first_and_serves_until_stopped(tmp_path):
    wheel = make_wheel(tmp_path / "wheels")
    proc = subprocess.Popen([sys.executable, "-m", "images.simpleindex", str(wheel.parent)], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cleared_env())
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/")
        assert urllib.request.urlopen(url, timeout=10).read().decode().count('<a href="demo-pkg/">demo-pkg</a>') == 1
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_a_folder_that_is_not_there_is_one_line(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "images.simpleindex", str(tmp_path / "nowhere")], cwd=REPO,
                          capture_output=True, text=True, env=cleared_env())
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [f"error: no wheel folder to serve ({tmp_path / 'nowhere'}); name existing "
                                        "folders holding the wheels: python -m images.simpleindex DIR"]
