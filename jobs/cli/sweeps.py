"""The `collbench scale` and `collbench compare` commands: sweeps over node counts, and regressions."""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import Any

from jobs.cli.against_history import add_against_history
from jobs.cli.html_output import add_html_option, html_target, write_html
from jobs.cli.nccl_flags import add_flags
from jobs.cli.options import RUNS_DIR, add_output_dir, with_output_dir
from jobs.config.model import ConfigError, derive, load_config
from jobs.inspect.compare import HEADER, LATENCY_TOLERANCE, Comparison, Tolerance, compare_rows, merge
from jobs.inspect.compare_noise import LATENCY_FACTOR, NOISE_Z, read_spreads
from jobs.inspect.compare_runs import not_comparable
from jobs.inspect.report import assess
from jobs.inspect.scale import RunAssessment, find_sweep, is_sweep, runs_by_nodes, scale_report, split_nodes
from jobs.launchers.base import Launcher, RunState
from jobs.launchers.registry import detached_launcher, launcher_of
from jobs.rundir.layout import RunDir, find_run
from jobs.rundir.sweep import Sweep
from jobs.rundir.writing import write_json_atomic
from slurm.submission import SubmissionFailed

SWEEP_ACTIONS = ("status", "wait", "report")


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    scale = commands.add_parser(
        "scale",
        help="one Slurm job per node count (nodes=[1,2,4,8] or nodes=1..16:x2); or: scale status|wait|report SWEEP",
    )
    scale.add_argument("words", nargs="*", metavar="KEY=VALUE | status|wait|report SWEEP")
    scale.add_argument("--config", metavar="NAME_OR_PATH", default=None, help="a Slurm config (name or path)")
    scale.add_argument("--dry-run", action="store_true", help="print every sbatch script; submit nothing")
    add_output_dir(scale, "status/wait/report", "sweep")
    scale.add_argument("--timeout", type=float, default=None, metavar="S", help="wait: give up after S seconds")
    scale.add_argument("--plot", metavar="FILE.png", help="report: busbw against node count (needs matplotlib)")
    add_html_option(scale, "wait/report: the sweep, its tables and curves per node count")
    add_flags(scale, taken_long=("--timeout",))  # scale's --timeout is wait's: nccl-tests' is -T alone here
    scale.set_defaults(handler=cmd_scale)

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


def cmd_scale(args: argparse.Namespace) -> int:
    if args.words and args.words[0] in SWEEP_ACTIONS:
        if len(args.words) != 2:
            raise ConfigError(f"usage: collbench scale {args.words[0]} SWEEP")
        if args.html and args.words[0] == "status":
            raise ConfigError("scale: --html goes with scale wait|report SWEEP")
        args.html_file = html_target(args.html)  # refused before the sweep is read or waited for
        sweep = find_sweep(args.words[1], args.output_dir or RUNS_DIR)
        return {"status": _status, "wait": _wait, "report": _report}[args.words[0]](sweep, args)
    if args.html:
        raise ConfigError("scale: --html goes with scale wait|report SWEEP, once its runs have results")
    return _start(args)


def _start(args: argparse.Namespace) -> int:
    counts, overrides = split_nodes(with_output_dir(args.words, args.output_dir))
    base = load_config(args.config, [*overrides, f"nodes={counts[0]}"])
    sweep_path = Sweep.new_path(base.output_dir)  # chosen first: every run's config names it, none creates it
    configs = {n: derive(base, nodes=n, output_dir=str(sweep_path)) for n in counts}  # all valid, or nothing runs
    launchers = {n: detached_launcher(cfg) for n, cfg in configs.items()}
    if args.dry_run:
        texts = {n: launchers[n].request(cfg).text for n, cfg in configs.items()}  # every count checked first
        for n, cfg in configs.items():
            print(f"# ---- nodes={n}: one job of {cfg.world_size} ranks")
            print(texts[n], end="")
        return 0
    # every check of every node count (output directory, the cluster, the history), or nothing is submitted
    requests = {n: launchers[n].prepare(cfg) for n, cfg in configs.items()}
    sweep = Sweep.create_at(sweep_path, counts, args.config, overrides)
    print(f"sweep {sweep.sweep_id}")
    print(f"sweep directory {sweep.path}", flush=True)
    refused: dict[int, SubmissionFailed] = {}
    for n, request in requests.items():
        try:
            started = launchers[n].start(request)
        except SubmissionFailed as error:  # one node count the cluster refuses must not sink the others
            refused[n] = error
            sweep.update_entry(n, error=str(error))
            print(f"nodes={n}: not submitted: {error}", file=sys.stderr)
            continue
        sweep.update_entry(n, run_dir=str(started.run.path), job_id=started.job_id)
        print(f"nodes={n}: job {started.job_id} run directory {started.run.path}", flush=True)
    if len(requests) == len(refused):  # nothing runs: leave no sweep behind
        shutil.rmtree(sweep.path, ignore_errors=True)
        raise SubmissionFailed(f"no node count was submitted, sweep directory removed: {next(iter(refused.values()))}")
    return 1 if refused else 0


def _by_launcher(runs: list[RunDir]) -> dict[str, tuple[Launcher[Any], list[RunDir]]]:
    """The runs grouped by the launcher that started them: each launcher is asked once for all of its runs."""
    groups: dict[str, tuple[Launcher[Any], list[RunDir]]] = {}
    for run in runs:
        name = str(run.read_meta().launcher)
        groups.setdefault(name, (launcher_of(run), []))[1].append(run)
    return groups


def _states(runs: list[RunDir]) -> dict[RunDir, RunState]:
    found: dict[RunDir, RunState] = {}
    for launcher, members in _by_launcher(runs).values():
        found.update(zip(members, launcher.describe(members), strict=True))
    return found


def _status(sweep: Sweep, args: argparse.Namespace) -> int:
    print(f"sweep {sweep.sweep_id}")
    entries = sweep.entries()
    states = _states([RunDir(Path(e.run_dir)) for e in entries if e.run_dir])
    for entry in entries:
        if not entry.run_dir:
            print(f"{entry.nodes:>6} node(s)  not submitted: {entry.error}")
            continue
        run = RunDir(Path(entry.run_dir))
        print(f"{entry.nodes:>6} node(s)  job {entry.job_id!s:<8} {states[run].said:<12} {run.path}")
    return 0


def _wait(sweep: Sweep, args: argparse.Namespace) -> int:
    """Every run of the sweep watched at once (one Slurm query per poll for all of them), then the report."""
    for launcher, runs in _by_launcher(list(runs_by_nodes(sweep).values())).values():
        if any(waited.still_running for waited in launcher.wait(runs, args.timeout, None)):
            print(f"collbench: sweep {sweep.sweep_id} is still running after {args.timeout:g} s", file=sys.stderr)
            return 1
    return _report(sweep, args, record=True)


def _report(sweep: Sweep, args: argparse.Namespace, record: bool = False) -> int:
    """The sweep's report; `record` (wait, which has seen every run end): also into scale.txt and scale.json,
    once: a later wait on the finished sweep reads it as report does and writes nothing."""
    states = _states(list(runs_by_nodes(sweep).values()))  # every run's state in one question

    def judged(run: RunDir) -> RunAssessment:
        outcome, state = assess(run), states[run]
        return RunAssessment(outcome.rows, outcome.problems, state.said, state.state.is_final)

    report = scale_report(sweep, judged)
    text = "\n".join(report.lines()) + "\n"
    if record and not sweep.report_json.exists():
        sweep.report_file.write_text(text, encoding="utf-8")
        write_json_atomic(sweep.report_json, report.to_plain())
    print(text, end="")
    print(f"# Sweep directory: {sweep.path}")
    if args.plot:
        from jobs.inspect.plot import plot_scaling

        plot_scaling(report.per_nodes, Path(args.plot), f"collbench {sweep.sweep_id}")
        print(f"collbench: plot written to {args.plot}", file=sys.stderr)
    code = 0 if report.complete else 1
    if args.html_file is not None:
        from jobs.inspect.html.sweep_page import render_sweep_page

        page = render_sweep_page(report, sweep.read(), sweep.path, code, args.html_file.parent)
        write_html(args.html_file, page)
    return code


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
