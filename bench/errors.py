"""The one error type users see: a problem and the fix, printed as a single line.

Standard library only, CPython 3.6-clean: the host tooling and the entrypoint inside every image
raise it the same way, and every command line reports it through run_cli. A full disk, a read-only
file system or a missing permission is the machine's problem, not the kit's: run_cli turns those
OSErrors (FILE_SYSTEM_ERRORS) into the same one line, naming the path and the fix, where it would
otherwise print a traceback.
"""

import errno
import sys
from typing import Optional

# Every file the kit marks complete is written whole or not at all (bench/atomic.py, data/fsutil.py), so
# after any of these the same command picks up where it stopped.
_AGAIN = "then run the same command again (finished work is kept)"
# errno -> (problem, fix); {path} is the file or folder the operating system named.
FILE_SYSTEM_ERRORS = {
    errno.ENOSPC: ("no space left on the device holding {path}", "free some space there (df -h shows it), " + _AGAIN),
    errno.EDQUOT: ("disk quota exceeded on the device holding {path}", "free some space within the quota, " + _AGAIN),
    errno.EROFS: ("{path} is on a read-only file system", "make it writable or work in a writable copy, " + _AGAIN),
    errno.EACCES: ("permission denied: {path}", "give this user access to it (chown or chmod), " + _AGAIN),
}


class UsageError(Exception):
    """Bad input from the user. str() is one line that names the problem and the fix."""

    def __init__(self, problem: str, fix: str) -> None:
        super().__init__(f"{problem}; {fix}")
        self.problem = problem
        self.fix = fix


def file_system_error(exc: OSError) -> Optional[UsageError]:
    """The UsageError for an OSError the user fixes on the machine (FILE_SYSTEM_ERRORS), naming the path the
    operating system gave (or saying it gave none); None for any other OSError."""
    if exc.errno not in FILE_SYSTEM_ERRORS:
        return None
    problem, fix = FILE_SYSTEM_ERRORS[exc.errno]
    path = "(a file whose name the system did not give)" if exc.filename is None else exc.filename
    return UsageError(problem.format(path=path), fix)


def run_cli(command, argv):
    """Run a command-line entry `command(argv) -> exit code`: a UsageError, or an OSError of
    FILE_SYSTEM_ERRORS, becomes one line `error: <problem>; <fix>` on stderr and exit code 2, Ctrl-C
    exit code 130."""
    try:
        return command(argv)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        usage = file_system_error(exc)
        if usage is None:
            raise
        print(f"error: {usage}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted; run the same command again to resume (finished work is kept)", file=sys.stderr)
        return 130
