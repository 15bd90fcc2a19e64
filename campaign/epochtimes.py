"""Seconds per epoch of every framework on one workload, side by side, from one campaign's raw files.

    python -m campaign.epochtimes --campaign results/bench-lstm-imdb-20261123-120000 [--workload lstm-imdb]

`make bench-lstm` runs a fresh campaign (one repeat of each framework, the workload's bench profile) and then
this table. Every number is read from the runs' metrics.jsonl and run.json: epoch 1 is shown
apart because it carries one-off costs (graph building, compilation, allocator warm-up), and the
steady-state figure is the mean of the later epochs.

Ranking frameworks is a speed comparison, so it follows the kit's rule (analysis.decide): each
framework's steady epochs against the fastest one's get a 95 % interval of the ratio, and it is
called slower only when the whole interval lies above 1; otherwise it is "undecided", with the
noise and how many more steady epochs (more epochs, or REPEATS) would decide it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

from analysis.decide import Decision, Target, decide_two_samples
from bench.errors import UsageError
from bench.schema import SchemaError, iter_run_dirs, read_metrics, read_run

# "Slower than the fastest": the ratio of steady epoch times above 1. When two frameworks sit on the
# same speed, a difference under 2 % is not one this table sets out to rank: the pairs needed are
# then those that measure the ratio to ±2 %.
SLOWER = Target(">=", 1.0, tolerance=0.02)


@dataclass(frozen=True)
class EpochTimes:
    """One run's per-epoch training times and what it ran with."""

    framework: str
    status: str
    epochs: list[float]  # seconds per epoch, training only (evaluation excluded)
    test_accuracy: float | None
    threads: str
    run_id: str

    @property
    def steady_epochs(self) -> list[float]:
        """The epochs after the first (the first alone when there is only one)."""
        return self.epochs[1:] or self.epochs

    @property
    def steady(self) -> float | None:
        """Mean seconds of the steady epochs."""
        later = self.steady_epochs
        return statistics.fmean(later) if later else None


def collect(campaign: Path, workload: str) -> list[EpochTimes]:
    """The workload's runs in a campaign folder, fastest steady state first, failed runs last."""
    rows = []
    for run_dir in iter_run_dirs(campaign):
        try:
            record = read_run(run_dir)
        except SchemaError as exc:
            raise UsageError(f"{run_dir} is not a valid run ({exc})",
                             "delete the folder and rerun the campaign") from None
        if record["config"]["workload"] != workload:
            continue
        epochs = [m["epoch_time_s"] for m in read_metrics(run_dir)] if record["status"] == "ok" else []
        threads = record.get("device_used", {}).get("threads")
        if isinstance(threads, dict):  # frameworks report intra- and inter-op pools; intra-op is the one
            threads = threads.get("intra_op")
        rows.append(EpochTimes(
            framework=record["config"]["framework"],
            status=record["status"],
            epochs=epochs,
            test_accuracy=(record.get("results") or {}).get("test_accuracy"),
            threads=str(threads if threads is not None else "?"),
            run_id=record["run_id"],
        ))
    if not rows:
        raise UsageError(f"no {workload} runs in {campaign}",
                         "run 'make bench-lstm' (or a campaign with that workload)")
    return sorted(rows, key=lambda r: (r.steady is None, r.steady or 0.0, r.framework))


def compare(rows: list[EpochTimes]) -> dict[str, Decision]:
    """Each other framework's steady epochs against the fastest one's (rows[0], as collect sorts):
    the ratio of their geometric means with its 95 % interval (analysis.decide.decide_two_samples:
    Welch's t on log epoch times) and whether it is slower. The steady epochs of all of a
    framework's runs are pooled as one sample; epochs of one run share its process and machine
    state, so with a single run the interval shows the epoch-to-epoch noise, not the run-to-run."""
    pooled: dict[str, list[float]] = {}
    for r in rows:
        if r.status == "ok" and r.steady_epochs:
            pooled.setdefault(r.framework, []).extend(r.steady_epochs)
    if not pooled:
        return {}
    fastest = rows[0].framework
    return {name: decide_two_samples(times, pooled[fastest], SLOWER, unit="steady epochs")
            for name, times in pooled.items() if name != fastest}


def table(rows: list[EpochTimes], decisions: dict[str, Decision] | None = None) -> str:
    """A plain-text table: one line per framework, epochs in columns, and its steady epochs'
    ratio to the fastest framework's with the 95 % interval (compare) when there is one."""
    decisions = compare(rows) if decisions is None else decisions
    n = max((len(r.epochs) for r in rows), default=0)
    head = ["framework", *(f"epoch {i} s" for i in range(1, n + 1)), "steady s/epoch", "vs fastest [95 %]",
            "test acc", "threads", "run"]
    lines = [head]
    for r in rows:
        cells = [f"{t:.2f}" for t in r.epochs] + ["-"] * (n - len(r.epochs))
        steady = f"{r.steady:.2f}" if r.steady is not None else r.status
        acc = f"{r.test_accuracy:.4f}" if r.test_accuracy is not None else "-"
        lines.append([r.framework, *cells, steady, _versus(r, rows[0], decisions), acc, r.threads, r.run_id])
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in lines)


def _versus(row: EpochTimes, first: EpochTimes, decisions: dict[str, Decision]) -> str:
    if row.status != "ok" or not row.steady_epochs:
        return "-"
    if row.framework == first.framework:
        return "fastest"
    d = decisions.get(row.framework)
    if d is None or d.estimate is None:
        return "-"
    if d.low is None or d.high is None:
        return f"{d.estimate:.2f}"
    return f"{d.estimate:.2f} [{d.low:.2f}-{d.high:.2f}]"


def verdicts(rows: list[EpochTimes], decisions: dict[str, Decision]) -> list[str]:
    """One line per compared framework: its ratio to the fastest, interval, and slower / undecided."""
    if not decisions:
        return []
    out = [f"vs {rows[0].framework} (the fastest steady state): ratio of steady epoch times (geometric means), "
           "95 % interval; 'slower' only when the whole interval is above 1"]
    for name, d in decisions.items():
        verdict = d.verdict_text(meets="slower", misses="faster")
        out.append(f"  {name} / {rows[0].framework}: {d.interval_text()}: {verdict}")
    return out


def main(argv: list[str] | None = None) -> int:
    """Print the table for a campaign folder."""
    ap = argparse.ArgumentParser(prog="python -m campaign.epochtimes", description=__doc__.splitlines()[0])
    ap.add_argument("--campaign", type=Path, required=True, help="a campaign folder under results/")
    ap.add_argument("--workload", default="lstm-imdb")
    args = ap.parse_args(argv)
    try:
        rows = collect(args.campaign, args.workload)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    first = read_run(args.campaign / rows[0].run_id)
    config, data = first["config"], first["dataset"]
    print(f"{args.workload}: seconds per training epoch ({config['profile']} profile, "
          f"{data.get('train_examples', '?')} training examples, {data.get('source', 'real')} data, "
          f"device {config['device']}), one campaign: {args.campaign}")
    print("epoch 1 includes one-off costs (graph building, compilation); steady = mean of the later epochs")
    decisions = compare(rows)
    print(table(rows, decisions))
    lines = verdicts(rows, decisions)
    if lines:
        print()
        print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
