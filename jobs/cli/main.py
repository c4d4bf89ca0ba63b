"""The `collbench` command: its parser, every command's registered from its own module (run and submit:
run_command.py; status, wait, cancel, report, logs: run_readers.py; the rest one module each), and how
errors become exit statuses."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from collectives.results import ResultFormatError
from jobs.cli import nccl_flags
from jobs.cli.exit_codes import EXIT_OK, EXIT_UNAVAILABLE, EXIT_USAGE
from jobs.cli.options import Parser, command_parser, unknown_option_error, with_output_dir
from jobs.config.model import ConfigError
from jobs.launchers.outside import outside_launcher, refusal
from jobs.rundir.records.codec import RecordError
from slurm.submission import SlurmUnavailable, SubmissionFailed


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    args, extra = parser.parse_known_args(argv)
    # overrides may sit on either side of options: `run ranks=4 --format json bench.iters=5`
    loose = "overrides" if hasattr(args, "overrides") else "words" if hasattr(args, "words") else None
    if extra and loose and all("=" in token and not token.startswith("-") for token in extra):
        setattr(args, loose, getattr(args, loose) + extra)
    elif extra:
        command, name = command_parser(parser, argv)
        command.print_usage(sys.stderr)
        print(unknown_option_error(command, name, extra), file=sys.stderr)
        return EXIT_USAGE
    try:
        _refuse_under_outside_launcher(args)
        if loose:
            nccl_flags.apply(args, loose)  # the flags become overrides, ahead of the typed ones
        if getattr(args, "output_dir_override", None) and hasattr(args, "overrides"):
            args.overrides = with_output_dir(args.overrides, args.output_dir_override)
        return int(args.handler(args))
    except (ConfigError, FileNotFoundError, RecordError, ResultFormatError, SubmissionFailed) as error:
        print(f"collbench: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except SlurmUnavailable as error:
        print(f"collbench: error: {error}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    except KeyboardInterrupt:
        print("collbench: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `collbench logs ... | head`: the reader left; so do we, quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK


def _parser() -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = Parser(  # its subcommands are Parsers too (type(self))
        prog="collbench",
        description="Collective-communication benchmarks (nccl-tests style) over torch.distributed, "
        "locally or as Slurm jobs. Exit status: 0 passed, 1 failed or #wrong > 0, 2 bad input, "
        "3 Slurm unavailable, 4 (check only) the check could not run or settle, 5 (isolate, check) nothing confirmed "
        "bad but a node, rail or link inconclusive (drain nothing for it).",
    )
    parser.add_argument("--version", action="version", version=f"collbench {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    from jobs.cli.run_command import add_commands as add_run_commands
    from jobs.cli.run_readers import add_commands as add_reader_commands

    add_run_commands(commands)
    add_reader_commands(commands)
    from jobs.cli.check_command import add_command as add_check_command
    from jobs.cli.compare_command import add_command as add_compare_command
    from jobs.cli.config import add_command as add_config_command
    from jobs.cli.export import add_command as add_export_command
    from jobs.cli.history import add_command as add_history_command
    from jobs.cli.importer import add_command as add_import_command
    from jobs.cli.isolate_command import add_command
    from jobs.cli.rank_command import add_command as add_rank_command
    from jobs.cli.recheck_command import add_command as add_recheck_command
    from jobs.cli.scale_command import add_command as add_scale_command

    add_scale_command(commands)
    add_compare_command(commands)
    add_command(commands)
    add_check_command(commands)
    add_recheck_command(commands)
    add_history_command(commands)
    add_config_command(commands)  # after run and submit: it ends their --help with a pointer to it
    add_export_command(commands)
    add_import_command(commands)
    add_rank_command(commands)

    return parser


STARTING = ("run", "submit", "scale", "isolate", "check", "recheck")
"""The commands that start ranks or jobs: refused when this process is one rank of another launcher."""
READING_ACTIONS = ("status", "wait", "report")
"""scale's and isolate's first words that read a run or sweep rather than start one."""


def _refuse_under_outside_launcher(args: argparse.Namespace) -> None:
    """Refuse, before anything starts, a starting command that torchrun, srun or mpirun started once per
    rank: it would start a world per process (docs/launchers.md). `check --node` is each node's own check,
    started once per node by srun as a health check's program: it is left to run."""
    words = getattr(args, "words", None) or []
    if args.command not in STARTING or getattr(args, "node", False) or (words and words[0] in READING_ACTIONS):
        return
    found = outside_launcher(os.environ)
    if found is not None:
        raise ConfigError(refusal(args.command, found))


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("collbench")
    except metadata.PackageNotFoundError:
        return "(not installed)"


if __name__ == "__main__":
    sys.exit(main())
