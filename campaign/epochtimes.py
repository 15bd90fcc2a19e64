"""Seconds per epoch of every framework on one workload, side by side, from one campaign's raw files.

    python -m campaign.epochtimes --campaign results/bench-lstm-imdb-20261123-120000 [--workload lstm-imdb]

`make bench-lstm` runs a fresh campaign (one repeat of each framework, quick profile) and then
this table. Every number is read from the runs' metrics.jsonl and run.json: epoch 1 is shown
apart because it carries one-off costs (graph building, compilation, allocator warm-up), and the
steady-state figure is the mean of the later epochs.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

from bench.errors import UsageError
from bench.schema import SchemaError, iter_run_dirs, read_metrics, read_run


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
    def steady(self) -> float | None:
        """Mean seconds of the epochs after the first (the first alone when there is only one)."""
        later = self.epochs[1:] or self.epochs
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


def table(rows: list[EpochTimes]) -> str:
    """A plain-text table: one line per framework, epochs in columns."""
    n = max((len(r.epochs) for r in rows), default=0)
    head = ["framework", *(f"epoch {i} s" for i in range(1, n + 1)), "steady s/epoch", "test acc", "threads", "run"]
    lines = [head]
    for r in rows:
        cells = [f"{t:.2f}" for t in r.epochs] + ["-"] * (n - len(r.epochs))
        steady = f"{r.steady:.2f}" if r.steady is not None else r.status
        acc = f"{r.test_accuracy:.4f}" if r.test_accuracy is not None else "-"
        lines.append([r.framework, *cells, steady, acc, r.threads, r.run_id])
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in lines)


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
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
