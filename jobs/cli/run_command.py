"""`collbench run` and `collbench submit`: a sweep started by the config's launcher, waited for and
rendered (run), or submitted as a Slurm job and left (submit); --dry-run prints the resolved config or the
exact sbatch script."""

from __future__ import annotations

import argparse
import sys

from jobs.cli import nccl_flags
from jobs.cli.exit_codes import EXIT_OK
from jobs.cli.options import add_output_dir_override
from jobs.cli.outcome import held_to_history, wait_and_render
from jobs.cli.outcome_args import add_output_args, check_tolerance
from jobs.config.model import load_config, to_yaml
from jobs.launchers.registry import detached_launcher, launcher_for


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from jobs.cli.against_history import add_against_history

    run = commands.add_parser("run", help="run the sweep and print its tables (a Slurm config: submit and wait)")
    _add_config_args(run, "print the resolved config; launch nothing")
    add_output_args(run)
    add_against_history(run)
    run.set_defaults(handler=_cmd_run)

    submit = commands.add_parser("submit", help="submit the sweep as a Slurm job and return at once")
    _add_config_args(submit, "print the exact sbatch script; submit nothing")
    submit.set_defaults(handler=_cmd_submit)


def _add_config_args(command: argparse.ArgumentParser, dry_run_help: str) -> None:
    command.add_argument(
        "--config", metavar="NAME_OR_PATH", default=None, help="a name from cluster_configs/ or a YAML path"
    )
    add_output_dir_override(command)
    command.add_argument("--dry-run", action="store_true", help=dry_run_help)
    command.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="e.g. ranks=4 bench.max_bytes=64M")
    nccl_flags.add_flags(command)


def _cmd_run(args: argparse.Namespace) -> int:
    cfg = load_config(args.config, args.overrides)
    check_tolerance(args)  # bad input is said before the run starts
    launcher = launcher_for(cfg)
    if args.dry_run:
        launcher.request(cfg)  # refused here whatever the real start would refuse short of asking Slurm or the history
        print(to_yaml(cfg), end="")
        return EXIT_OK
    started = launcher.launch(cfg)
    for line in started.lines:
        print(f"collbench: {line}", file=sys.stderr, flush=True)
    return wait_and_render(started.run, None, args, held_to_history(args), launcher)


def _cmd_submit(args: argparse.Namespace) -> int:
    cfg = load_config(args.config, args.overrides)
    launcher = detached_launcher(cfg)
    if args.dry_run:
        print(launcher.request(cfg).text, end="")
        return EXIT_OK
    for line in launcher.launch(cfg).lines:
        print(line, flush=True)
    return EXIT_OK
