"""CLI: python -m analysis --campaign results/<name> [--campaign results/<other>] [--out reports/<name>]."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from analysis import NoRunsError, analyze
from bench.atomic import name_the_path
from bench.errors import UsageError, run_cli
from bench.names import is_plain


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


def default_out(campaigns: list[Path]) -> Path:
    """reports/<campaign folder names joined by '+'>; a UsageError where a folder's name is not a plain name
    (results/.. would put the report beside the repository's own files)."""
    for campaign in campaigns:
        if not is_plain(campaign.name):
            raise UsageError(f"cannot name a report after the campaign folder '{campaign}'",
                             "give the report folder with --out, or name the campaign folder itself (results/demo)")
    return Path("reports") / "+".join(c.name for c in campaigns)


def main(argv: list[str] | None = None) -> int:
    """Run the analysis; exit 0 when the report was written, 2 when there is nothing to analyse or the
    report cannot be written (one line naming the problem and the fix)."""
    return run_cli(_analyze, parse_args(argv))


def _analyze(args: argparse.Namespace) -> int:
    out = args.out if args.out is not None else default_out(args.campaign)
    try:
        result = analyze(args.campaign, out)
    except NoRunsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        name_the_path(exc, out)  # a full disk names no file: the report folder is where it filled up
        raise
    for problem in result.problems:
        print(f"warning: {problem}", file=sys.stderr)
    print(f"report written: {result.report_md} and {result.report_html} "
          f"({len(result.figures)} figures, tables in {out / 'tables'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
