"""The payload's CPython 3.6 gate (images/compat.py): the core passes, planted 3.7+ code fails."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from images import compat

REPO = Path(__file__).resolve().parents[2]


def _gate(*paths: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "images.compat", *map(str, paths)], cwd=REPO, capture_output=True,
                          text=True, timeout=300)


def test_the_payload_core_is_cpython_3_6_code():
    files = {str(p.relative_to(REPO)) for p in compat.core_files()}
    assert {"bench/entrypoint.py", "bench/request.py", "bench/schema/run.py", "bench/prepared.py", "bench/monitor.py",
            "bench/modelplan.py", "bench/frameworks/common.py", "bench/__main__.py"} <= files
    assert "bench/frameworks/pytorch/paper.py" in files and "bench/frameworks/capabilities.py" in files
    assert not [f for f in files if Path(f).stem.startswith("current")]  # Python 3.11 only
    proc = _gate()
    assert proc.returncode == 0, proc.stdout
    assert f"{len(files)} files, 0 violations" in proc.stderr


# Each plants one construct CPython 3.6 or the paper era's NumPy 1.14 cannot run; the gate names it.
PLANTED = {
    "future annotations": ("from __future__ import annotations\n", "'__future__.annotations' member requires !2, 3.7"),
    "dataclass": ("import dataclasses\n", "'dataclasses' module requires !2, 3.7"),
    "walrus": ("if (n := 3):\n    pass\n", "not CPython 3.6 syntax"),
    "builtin generic": ("def f(x: list[int]) -> None:\n    pass\n", "builtin generic type annotation"),
    "text= keyword": ("import subprocess\nsubprocess.run(['true'], text=True)\n", "'subprocess.run(text)'"),
    "datetime.UTC": ("import datetime\nnow = datetime.datetime.now(datetime.UTC)\n", "'datetime.UTC' member"),
    "importlib.metadata": ("from importlib import metadata\n", "'importlib.metadata' module requires !2, 3.8"),
    "a framework": ("import torch\n", "imports torch: the payload core may use only"),
    "numpy's new generator": ("import numpy as np\nrng = np.random.default_rng(0)\n", "NumPy >= 1.17"),
}


@pytest.mark.parametrize("planted", PLANTED, ids=list(PLANTED))
def test_a_planted_construct_fails_the_gate(tmp_path, planted):
    code, message = PLANTED[planted]
    path = tmp_path / "planted.py"
    path.write_text(code)
    proc = _gate(path)
    assert proc.returncode == 1
    assert message in proc.stdout, proc.stdout


def test_a_construct_planted_in_a_copy_of_the_payload_is_found(tmp_path):
    payload = shutil.copytree(REPO / "bench", tmp_path / "bench", ignore=shutil.ignore_patterns("__pycache__"))
    with open(payload / "schema" / "run.py", "a") as fh:
        fh.write("\n\ndef newer(rows: dict[str, int]) -> None:\n    pass\n")
    for current in ("pytorch/current.py", "keras/current_optimizers.py"):  # the 3.11-only modules
        with open(payload / "frameworks" / current, "a") as fh:
            fh.write("\n\ndef exempt(rows: dict[str, int]) -> None:\n    pass\n")
    with open(payload / "frameworks" / "theano" / "paper.py", "a") as fh:  # its framework's packages only
        fh.write("\nimport scipy.linalg\nimport torch\n")
    found = compat.violations(compat.core_files(payload))
    assert len(found) == 2 and found[0].startswith(f"{payload / 'frameworks' / 'theano' / 'paper.py'}:"), found
    assert "imports torch" in found[0], found
    assert found[1].startswith(f"{payload / 'schema' / 'run.py'}: builtin generic"), found
