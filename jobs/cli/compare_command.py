"""The `collbench compare` command: busbw of a candidate run or sweep against a baseline, row by row with
both sides' noise, or one run against its history (--against-history)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from jobs.cli.against_history import add_against_history
from jobs.cli.html_output import add_html_option, html_target, write_html
from jobs.config.model import ConfigError
from jobs.inspect.compare import HEADER, LATENCY_TOLERANCE, Comparison, Tolerance, compare_rows, merge
from jobs.inspect.compare_noise import LATENCY_FACTOR, NOISE_Z, read_spreads
from jobs.inspect.compare_runs import not_comparable
from jobs.inspect.report import assess
from jobs.inspect.scale import find_sweep, is_sweep, runs_by_nodes
from jobs.rundir.layout import RunDir, find_run
from jobs.rundir.sweep import Sweep
from jobs.rundir.writing import write_json_atomic


def add_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    compare = commands.add_parser(
        "compare",
        help="busbw of a candidate run (or sweep) against a baseline; or: compare RUN --against-history",
    )
    compare.add_argument("baseline", metavar="BASELINE", help="run or sweep: directory or id")
    compare.add_argument(
        "candidate", metavar="CANDIDATE", nargs="?", help="run or sweep: directory or id (not with --against-history)"
    )
    compare.add_argument("--tolerance", default="5%", help="allowed busbw drop (default 5%%)")
    compare.add_argument(
        "--band-tolerance",
        action="append",
        default=[],
        metavar="SIZE:TOL",
        help="a looser tolerance up to a size, e.g. 64K:20%% (repeatable)",
    )
    compare.add_argument(
        "--latency-tolerance",
        default=LATENCY_TOLERANCE,
        metavar="TOL",
        help=f"the least tolerance of a latency-bound row: under {LATENCY_FACTOR:g}x its op's fastest time "
        f"(default {LATENCY_TOLERANCE.replace('%', '%%')}; 0 turns it off)",
    )
    compare.add_argument("--output-dir", default="runs", help="where to look up ids (default: runs)")
    compare.add_argument(
        "--output",
        "--json",
        dest="output",
        metavar="FILE",
        help="also write every compared row and the verdict, as JSON",
    )
    add_against_history(compare, tolerance=False)
    add_html_option(compare, "the comparison, every row and both sides' curves")
    compare.set_defaults(handler=cmd_compare)


def cmd_compare(args: argparse.Namespace) -> int:
    tolerance = Tolerance.parse(args.tolerance, args.band_tolerance, args.latency_tolerance)
    if args.html and args.against_history:
        raise ConfigError(
            "compare: --html goes with compare BASELINE CANDIDATE; a run against its history: "
            "collbench report RUN --against-history --html FILE"
        )
    html = html_target(args.html)  # refused before either side is read
    if args.against_history:
        if args.candidate is not None:
            raise ConfigError(
                f"compare --against-history: give one run or sweep, not two ({args.baseline} {args.candidate}): "
                "its baseline is the history's"
            )
        return _compare_with_history(args, tolerance)
    if args.candidate is None:
        raise ConfigError("compare: give BASELINE and CANDIDATE, or one run with --against-history")
    sweeps = [is_sweep(ref, args.output_dir) for ref in (args.baseline, args.candidate)]
    if sweeps[0] != sweeps[1]:
        raise ConfigError("compare: give two runs or two sweeps, not one of each")
    if sweeps[0]:
        result = _compare_sweeps(
            find_sweep(args.baseline, args.output_dir), find_sweep(args.candidate, args.output_dir), tolerance
        )
        names = (args.baseline, args.candidate)
    else:
        base, cand = find_run(args.baseline, args.output_dir), find_run(args.candidate, args.output_dir)
        from jobs.rundir.attempts import notes

        for side, run in (("baseline", base), ("candidate", cand)):
            for line in notes(run):
                print(f"collbench: {side}: {line}", file=sys.stderr)
        result = _compare_runs(base, cand, tolerance)
        names = (base.run_id, cand.run_id)
    print(
        f"# collbench compare: baseline {names[0]}, candidate {names[1]}; tolerance {tolerance.describe()}; "
        f"a regression also exceeds {NOISE_Z:g} standard errors of the runs' noise"
    )
    for note in result.notes:  # what is not comparable, before any row or count
        print(f"# note: {note}")
    print(HEADER)
    for line in result.lines():
        print(line)
    print(
        f"# {len(result.rows)} row(s) compared, {len(result.regressions)} regression(s), "
        f"{len(result.incomplete)} incomplete"
    )
    if args.output:
        write_json_atomic(Path(args.output), {"baseline": names[0], "candidate": names[1], **result.to_plain()})
    for regression in result.regressions:
        print(f"collbench: REGRESSION: {regression}", file=sys.stderr)
    for incomplete in result.incomplete:
        print(f"collbench: INCOMPLETE: {incomplete}", file=sys.stderr)
    if not result.rows:
        print("collbench: FAILED: nothing comparable between the two", file=sys.stderr)
    if html is not None:
        from jobs.inspect.html.compare_page import render_compare_page

        page = render_compare_page(result, names, tolerance.describe(), result.exit_code, _compare_command(args))
        write_html(html, page)
    return result.exit_code


def _compare_command(args: argparse.Namespace) -> str:
    """The comparison as it was asked for (its --html left out)."""
    import shlex

    bands = [word for band in args.band_tolerance for word in ("--band-tolerance", band)]
    words = ["collbench", "compare", args.baseline, args.candidate, "--tolerance", args.tolerance, *bands]
    return shlex.join([*words, "--latency-tolerance", args.latency_tolerance])


def _compare_runs(base: RunDir, cand: RunDir, tolerance: Tolerance, label: str = "") -> Comparison:
    """Two runs, row by row with their noise; nothing where the runs measure different things."""
    differ = not_comparable(base, cand, f"{label}: " if label else "")
    if differ:
        return Comparison(notes=[differ])
    return compare_rows(
        assess(base).rows, assess(cand).rows, tolerance, label, spreads=(read_spreads(base), read_spreads(cand))
    )


def _compare_sweeps(base: Sweep, cand: Sweep, tolerance: Tolerance) -> Comparison:
    base_runs, cand_runs = runs_by_nodes(base), runs_by_nodes(cand)
    parts = []
    for nodes in sorted(set(base_runs) | set(cand_runs)):
        if nodes not in base_runs or nodes not in cand_runs:
            side = "baseline" if nodes in base_runs else "candidate"
            parts.append(Comparison(notes=[f"{nodes} node(s) only in the {side}, not compared"]))
            continue
        parts.append(_compare_runs(base_runs[nodes], cand_runs[nodes], tolerance, f"{nodes}n"))
    return merge(parts)


def _compare_with_history(args: argparse.Namespace, tolerance: Tolerance) -> int:
    """`compare RUN --against-history`: the run (or each run of a sweep) against the median of the last healthy
    runs of its config and node count in the history; reads the runs, writes nothing into them."""
    from jobs.cli.against_history import held_lines, held_words, say_held
    from jobs.history.held import hold_run

    if is_sweep(args.baseline, args.output_dir):
        runs = list(runs_by_nodes(find_sweep(args.baseline, args.output_dir)).values())
    else:
        runs = [find_run(args.baseline, args.output_dir)]
    code, plain = 0, []
    for run in runs:
        words = held_words(tolerance)
        held = hold_run(run, assess(run), tolerance.for_size, words, args.history_url, tolerance.latency)
        print("\n".join(held_lines(held)), flush=True)
        say_held(held, prefix=f"{held.run_id}: " if len(runs) > 1 else "")
        code = max(code, held.judgement.exit_code)
        plain.append(held.to_plain())
    if args.output:
        write_json_atomic(Path(args.output), {"against_history": plain})
    return code
