"""The `collbench` command."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from jobs.config import Config, ConfigError, load_config, to_yaml
from jobs.report import RunOutcome, finalize
from jobs.rundir import RunDir, find_run
from jobs.schema import to_plain

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except ConfigError as error:
        print(f"collbench: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except FileNotFoundError as error:
        print(f"collbench: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("collbench: interrupted", file=sys.stderr)
        return 130


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="collbench",
        description="Collective-communication benchmarks (nccl-tests style) over torch.distributed, "
        "locally or as Slurm jobs.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser("run", help="run the sweep now and print its tables")
    _add_config_args(run)
    run.add_argument("--dry-run", action="store_true", help="print the resolved config; launch nothing")
    run.set_defaults(handler=_cmd_run)

    report = commands.add_parser("report", help="print a finished run's tables from its directory")
    report.add_argument("run", metavar="RUN", help="run directory, run id, or Slurm job id")
    report.add_argument("--output-dir", default="runs", help="where to look up run and job ids (default: runs)")
    report.set_defaults(handler=_cmd_report)
    return parser


def _add_config_args(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--config", metavar="NAME_OR_PATH", default=None, help="a name from cluster_configs/ or a YAML path"
    )
    command.add_argument(
        "overrides", nargs="*", metavar="KEY=VALUE", help="overrides, e.g. ranks=4 bench.max_bytes=64M"
    )


def _cmd_run(args: argparse.Namespace) -> int:
    cfg = load_config(args.config, args.overrides)
    if args.dry_run:
        print(to_yaml(cfg), end="")
        return EXIT_OK
    if cfg.launcher != "local":
        raise ConfigError(f"launcher: {cfg.launcher!r} is not run here; use collbench submit for Slurm")
    from jobs.launch_local import start_local, watch_local

    run = _new_run(cfg)
    job = start_local(cfg, to_plain(cfg), run)
    print(f"collbench: {cfg.world_size} local ranks, run directory {run.path}", file=sys.stderr)
    watch_local(job, run)
    return _print_outcome(finalize(run), run)


def _new_run(cfg: Config) -> RunDir:
    run = RunDir.create(cfg.output_dir, cfg.launcher)
    run.config_file.write_text(to_yaml(cfg), encoding="utf-8")
    run.update_meta(run_id=run.run_id, launcher=cfg.launcher, world_size=cfg.world_size, nodes=cfg.nodes)
    return run


def _cmd_report(args: argparse.Namespace) -> int:
    run = find_run(args.run, args.output_dir)
    return _print_outcome(finalize(run), run)


def _print_outcome(outcome: RunOutcome, run: RunDir) -> int:
    print(run.table_file.read_text(encoding="utf-8"), end="")
    print(f"# Run directory: {run.path}")
    for problem in outcome.problems:
        print(f"collbench: FAILED: {problem}", file=sys.stderr)
    return outcome.exit_code


if __name__ == "__main__":
    sys.exit(main())
