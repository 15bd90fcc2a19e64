"""The in-image command line: `python -m bench run --request REQUEST.json --out RUN_DIR [--data DIR]`.

What every runner calls, inside a container or a framework's environment. It reads the run request
(bench/request.py) before NumPy or any framework loads, so the request's thread count is pinned
first. Host commands live elsewhere: `python -m campaign` (plan and run campaigns), `python -m
images` (build, lock and verify images), `python -m data`, `python -m analysis`.
Bad input ends with one line `error: <problem>; <fix>` and exit code 2. CPython 3.6-clean.
"""

import argparse
import sys
from pathlib import Path
from typing import List, Optional

from bench import request, threads
from bench.errors import UsageError, run_cli


def parse_args(argv: List[str]) -> argparse.Namespace:
    """Arguments of `run`: where the request is, where the run folder goes, where the data is mounted."""
    ap = argparse.ArgumentParser(prog="python -m bench run", description="Run one run request.")
    ap.add_argument("--request", type=Path, required=True, help="a request.json (bench/request.py)")
    ap.add_argument("--out", type=Path, required=True, help="the run folder to write (a new one)")
    ap.add_argument("--data", type=Path, default=None,
                    help="the prepared dataset folder, when it is not at the request's path (a container mount)")
    return ap.parse_args(argv)


def run(argv: List[str]) -> int:
    """`run --request R --out D [--data DIR]`: pin the request's threads, then run it."""
    if argv[0] != "run":
        raise UsageError(f"unknown command '{argv[0]}'",
                         "inside an image the only command is 'run'; host commands: python -m campaign")
    args = parse_args(argv[1:])
    threads.pin(request.read(args.request)["threads"])  # before the entrypoint imports NumPy
    from bench import entrypoint

    return entrypoint.main(args.request, args.out, args.data)


def main(argv: Optional[List[str]] = None) -> int:
    """Dispatch `run`; a UsageError becomes one line and exit code 2."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m bench run --request REQUEST.json --out RUN_DIR [--data DIR]")
        return 0
    return run_cli(run, argv)


if __name__ == "__main__":
    sys.exit(main())
