"""The `collbench scale` command: one Slurm job per node count, and the sweep's status, wait and report."""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import Any

from jobs.cli.html_output import add_html_option, html_target, write_html
from jobs.cli.nccl_flags import add_flags
from jobs.cli.options import RUNS_DIR, add_output_dir, with_output_dir
from jobs.config.model import ConfigError, derive, load_config
from jobs.inspect.report import assess
from jobs.inspect.scale import RunAssessment, find_sweep, runs_by_nodes, scale_report, split_nodes
from jobs.launchers.base import Launcher, RunState
from jobs.launchers.registry import detached_launcher, launcher_of
from jobs.rundir.layout import RunDir
from jobs.rundir.sweep import Sweep
from jobs.rundir.writing import write_json_atomic
from slurm.submission import SubmissionFailed

SWEEP_ACTIONS = ("status", "wait", "report")


def add_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
