"""bench/errors.py: run_cli's one line for a file system the user must fix; other OSErrors stay tracebacks."""

from __future__ import annotations

import errno

import pytest

from bench.errors import FILE_SYSTEM_ERRORS, file_system_error, run_cli


def test_an_os_error_the_user_cannot_fix_on_the_machine_is_not_hidden(tmp_path):
    # A missing file is the kit's bug or a wrong path given: its traceback says where.
    with pytest.raises(FileNotFoundError):
        run_cli(lambda argv: open(tmp_path / "missing").close(), [])


def test_the_mapped_errors_are_the_disk_and_permission_ones():
    assert set(FILE_SYSTEM_ERRORS) == {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES}
    assert file_system_error(OSError(errno.ENOENT, "No such file or directory", "x")) is None


def test_an_error_without_a_path_says_so(capsys):
    def full(argv):
        raise OSError(errno.ENOSPC, "No space left on device")

    assert run_cli(full, []) == 2
    assert capsys.readouterr().err == ("error: no space left on the device holding (a file whose name the system did "
                                       "not give); free some space there (df -h shows it), then run the same command "
                                       "again (finished work is kept)\n")
