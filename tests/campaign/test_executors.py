"""The executors are found in their folder (campaign/executors/<name>.py), not listed by hand."""

from __future__ import annotations

import pytest

from bench.errors import UsageError
from campaign import executors


def test_the_executors_are_local_and_the_modules_of_their_folder():
    assert executors.names() == ("local", "kubernetes", "slurm")


def test_an_executor_module_on_the_package_path_is_one_more_executor(tmp_path, monkeypatch):
    """One more module is one more EXECUTOR choice, with no list edited; an unknown name's one line lists it."""
    (tmp_path / "pbs.py").write_text('"""A toy executor."""\n', encoding="utf-8")
    (tmp_path / "_helper.py").write_text('"""A helper module: not an executor."""\n', encoding="utf-8")
    monkeypatch.setattr(executors, "__path__", [*executors.__path__, str(tmp_path)])
    assert executors.check_name("pbs") == "pbs"
    with pytest.raises(UsageError, match=r"^unknown executor 'lsf'; choose from: local, kubernetes, pbs, slurm "
                                         r"\(EXECUTOR=\.\.\.\)$"):
        executors.check_name("lsf")
