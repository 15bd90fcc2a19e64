"""Where a run's ranks meet and how it runs them (bench/collectives, bench/dataparallel): the loopback
address, a free port on it, the socket settings that keep Gloo and NCCL on it, the rank processes
(run_ranks).

A run starts its ranks itself, on this machine, as spawned processes; they meet over TCP on 127.0.0.1
(containers run without a network but with loopback). Each rank returns a JSON-able dict that lands in
<results>/rank<r>.json, which the run gathers. Framework-free, standard library only, CPython 3.6-clean.
"""

import collections
import datetime
import json
import multiprocessing
import multiprocessing.connection
import os
import socket
import time
import traceback
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

from bench import atomic

HOST = "127.0.0.1"
# Gloo and NCCL open their own sockets after the rendezvous: on the loopback interface, so a run
# needs no network (a value the caller set wins).
SOCKET_ENV = {"GLOO_SOCKET_IFNAME": "lo", "NCCL_SOCKET_IFNAME": "lo"}
# A rank waits this long for the others at the rendezvous, at a barrier and in a collective before it fails.
TIMEOUT = datetime.timedelta(minutes=10)
# How ranks start: a fresh interpreter each (a forked one would inherit the parent's framework state).
START_METHOD = "spawn"
# A failed rank's message is kept this short in its result file.
MESSAGE_LIMIT = 2000

# What run_ranks gathered: every rank's result dict (by rank) and the perf_counter at which the last rank had
# started (its arguments sent: a large shard of data takes a while).
Gathered = collections.namedtuple("Gathered", ["results", "started"])


class RanksFailed(RuntimeError):
    """A rank of run_ranks failed (or never wrote its result): str() names the failed ranks and the message of
    the first to fail. `failed`: the failed ranks in the order they were seen to fail (ranks ended because of
    it last); `results`: {rank: result dict} of the ranks that wrote one (a failed rank's has "error" and
    "error_type")."""

    def __init__(self, message: str, failed: List[int], results: Dict[int, dict]) -> None:
        super().__init__(message)
        self.failed = failed
        self.results = results

    def raised(self, error_type: str) -> bool:
        """Whether a failed rank raised an exception of the class named `error_type`."""
        return any(r.get("error_type") == error_type for r in self.results.values())


def free_port() -> int:
    """A TCP port on the loopback address that nothing listens on now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def pin_sockets() -> None:
    """Point Gloo's and NCCL's sockets at the loopback interface, in this process and the ranks it starts
    (values already set win)."""
    for name, value in SOCKET_ENV.items():
        os.environ.setdefault(name, value)


def context():
    """The multiprocessing context the ranks start in; a synchronisation object shared with them (a Barrier)
    must come from it."""
    return multiprocessing.get_context(START_METHOD)


def run_ranks(target: Callable[..., dict], args: Sequence[tuple], results: Path, name: str,
              env: Optional[Dict[str, str]] = None) -> Gathered:
    """Run len(args) rank processes, rank r calling target(r, *args[r]) (a module-level function: the ranks
    are spawned), which returns its JSON-able result; wait for all of them and return the results gathered
    from results/rank<r>.json. When a rank fails the others cannot finish their collectives: they are ended
    and RanksFailed is raised, naming the ranks (`name`, e.g. "data-parallel") and the first failed rank's
    message. `env`: variables the ranks start with (this process's environment is as it was afterwards);
    Gloo's and NCCL's sockets are pinned to loopback (pin_sockets)."""
    results = Path(results)
    results.mkdir(parents=True, exist_ok=True)
    for rank in range(len(args)):  # a file left from before must not pass for this run's result
        stale = _result_file(results, rank)
        if stale.exists():
            stale.unlink()
    pin_sockets()
    procs = _start(target, args, results, env or {})
    started = time.perf_counter()
    failed = _wait(procs)
    found = {r: json.loads(_result_file(results, r).read_text()) for r in range(len(procs))
             if _result_file(results, r).exists()}
    if failed or len(found) < len(procs):
        raise RanksFailed(_failure_message(name, failed, found), failed, found)
    return Gathered([found[r] for r in range(len(procs))], started)


def _result_file(results: Path, rank: int) -> Path:
    return results / f"rank{rank}.json"


def _start(target: Callable[..., dict], args: Sequence[tuple], results: Path, env: Dict[str, str]) -> list:
    """Start one spawned process per rank with `env` set in the environment it inherits, restored after."""
    saved = {k: os.environ.get(k) for k in env}
    ctx = context()
    procs = []
    try:
        os.environ.update(env)
        for rank, rank_args in enumerate(args):
            proc = ctx.Process(target=_rank_main, args=(target, rank, tuple(rank_args), str(results)),
                               name=f"rank{rank}")
            proc.start()
            procs.append(proc)
    except BaseException:
        _end(procs)
        raise
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return procs


def _wait(procs: list) -> List[int]:
    """Wait for every rank; once one fails, end the others. Return the failed ranks, first seen first."""
    failed = []
    running = list(procs)
    while running:
        multiprocessing.connection.wait([p.sentinel for p in running])
        for proc in [p for p in running if not p.is_alive()]:
            running.remove(proc)
            if proc.exitcode != 0:
                failed.append(procs.index(proc))
        if failed and running:
            _end(running)
            failed += [procs.index(p) for p in running if p.exitcode != 0]
            running = []
    return failed


def _end(procs: list) -> None:
    """Terminate the processes still running and wait for them."""
    for proc in procs:
        if proc.is_alive():
            proc.terminate()
    for proc in procs:
        proc.join()


def _failure_message(name: str, failed: List[int], found: Dict[int, dict]) -> str:
    """'<name> rank(s) 0, 1 failed: <the first failed rank's error>'."""
    errors = [found[r]["error"] for r in failed if found.get(r, {}).get("error")]
    errors += [f["error"] for r, f in sorted(found.items()) if f.get("error") and r not in failed]
    return "{} rank(s) {} failed: {}".format(name, ", ".join(map(str, sorted(failed))) or "?",
                                             errors[0] if errors else "see the log")


def _rank_main(target: Callable[..., dict], rank: int, args: tuple, results: str) -> None:
    """A rank process: run target(rank, *args) and write its result, or its error, to results/rank<rank>.json;
    a failed rank exits 1 (its traceback printed once, to the run's log)."""
    path = _result_file(Path(results), rank)
    try:
        result = target(rank, *args)
    except BaseException as exc:
        traceback.print_exc()
        atomic.write_text(path, json.dumps({"rank": rank, "error": f"rank {rank}: {type(exc).__name__}: {exc}"
                                            [:MESSAGE_LIMIT], "error_type": type(exc).__name__}))
        raise SystemExit(1) from None
    atomic.write_text(path, json.dumps(result))

