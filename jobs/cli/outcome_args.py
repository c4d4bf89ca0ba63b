"""The options of a command that prints a run's outcome: --format, --min-busbw with --busbw-sizes, and a
wait's --timeout and --progress-every; parsed here, acted on by jobs.cli.outcome."""

from __future__ import annotations

import argparse

from jobs.inspect.report import Thresholds
from jobs.launchers.live import PLAIN_EVERY_S


def add_wait_args(command: argparse.ArgumentParser, action: str = "") -> None:
    """--timeout and --progress-every on a command that waits for a run (`action`: 'wait' where the
    command does more than wait, so its help says when they apply)."""
    when = f"{action}: " if action else ""
    command.add_argument("--timeout", type=float, default=None, metavar="S", help=f"{when}give up after S seconds")
    command.add_argument(
        "--progress-every",
        type=float,
        default=PLAIN_EVERY_S,
        metavar="S",
        help=f"{when}without a terminal, a progress line every S seconds (default {PLAIN_EVERY_S:g})",
    )


def add_output_args(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--format",
        choices=("table", "json", "csv", "nccl-tests-json"),
        default="table",
        help="what to print (default: table); nccl-tests-json: nccl-tests' -J document, one line per op",
    )
    command.add_argument(
        "--min-busbw", type=float, default=None, metavar="GBPS", help="fail (exit 1) where busbw is below GBPS"
    )
    command.add_argument(
        "--busbw-sizes",
        type=_size_range,
        default=(0, None),
        metavar="MIN:MAX",
        help="the sizes --min-busbw applies to, e.g. 1M:1G or 64M: (default: all)",
    )


def _size_range(text: str) -> tuple[int, int | None]:
    from collectives.sizes import parse_size

    low, sep, high = text.partition(":")
    try:
        if not sep:
            raise ValueError("no ':'")
        return (parse_size(low) if low else 0, parse_size(high) if high else None)
    except ValueError:
        message = f"{text!r} is not a size range; allowed: MIN:MAX such as 1M:1G, 64M: or :4K"
        raise argparse.ArgumentTypeError(message) from None


def thresholds(args: argparse.Namespace) -> Thresholds:
    low, high = args.busbw_sizes
    return Thresholds(min_busbw=args.min_busbw, min_size=low, max_size=high)


def check_tolerance(args: argparse.Namespace) -> None:
    if getattr(args, "against_history", False):
        from jobs.inspect.compare import Tolerance

        Tolerance.parse(args.tolerance, [])
