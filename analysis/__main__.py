"""CLI: python -m analysis --campaign results/<name> [--campaign results/<other>] [--out reports/<name>]."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from analysis import NoRunsError, analyze


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line arguments; --campaign is a list; --out defaults to reports/<campaign folder name(s)>."""
    ap = argparse.ArgumentParser(
        prog="python -m analysis",
        description="Turn a campaign's runs into tables, figures and a reproduction report.",
    )
    ap.add_argument("--campaign", type=Path, required=True, action="append",
                    help="campaign folder, e.g. results/demo; give it more than once (e.g. a CPU and a GPU "
                         "campaign) to analyse them together")
    ap.add_argument("--out", type=Path, default=None,
                    help="report folder (default: reports/<campaign name>, names joined by '+' for several)")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run the analysis; exit 0 when the report was written, 2 when there is nothing to analyse."""
    args = parse_args(argv)
    name = "+".join(c.name for c in args.campaign)
    out = args.out if args.out is not None else Path("reports") / name
    try:
        result = analyze(args.campaign, out)
    except NoRunsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for problem in result.problems:
        print(f"warning: {problem}", file=sys.stderr)
    print(f"report written: {result.report_md} and {result.report_html} "
          f"({len(result.figures)} figures, tables in {out / 'tables'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
