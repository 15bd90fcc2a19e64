"""The one error type users see: a problem and the fix, printed as a single line.

Standard library only, CPython 3.6-clean: the host tooling and the entrypoint inside every image
raise it the same way, and every command line reports it through run_cli.
"""

import sys


class UsageError(Exception):
    """Bad input from the user. str() is one line that names the problem and the fix."""

    def __init__(self, problem: str, fix: str) -> None:
        super().__init__(f"{problem}; {fix}")
        self.problem = problem
        self.fix = fix


def run_cli(command, argv):
    """Run a command-line entry `command(argv) -> exit code`: a UsageError becomes one line
    `error: <problem>; <fix>` on stderr and exit code 2, Ctrl-C exit code 130."""
    try:
        return command(argv)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted; run the same command again to resume (finished work is kept)", file=sys.stderr)
        return 130
