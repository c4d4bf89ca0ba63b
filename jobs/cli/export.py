"""`collbench export prometheus RUN_OR_SWEEP`: a run's (or a sweep's runs') figures as Prometheus metrics,
printed, written as a node_exporter textfile, and/or pushed to a Pushgateway (jobs/inspect/exports/
prometheus.py builds them; docs/exports.md lists them), each row with the results history's baseline
(jobs/history/export_baseline.py). Reads the run directory and the history only."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from jobs.config.model import ConfigError
from jobs.rundir.layout import RunDir, find_run

if TYPE_CHECKING:
    from jobs.inspect.exports.prometheus import Baselines


def add_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    export = commands.add_parser("export", help="a run's figures in another tool's format (export prometheus ...)")
    formats = export.add_subparsers(dest="export_format", required=True, metavar="FORMAT")
    prom = formats.add_parser(
        "prometheus",
        help="Prometheus metrics: stdout, a node_exporter textfile, and/or a Pushgateway",
        description="A run's (or every run of a sweep's) figures as Prometheus metrics, named collbench_* in "
        "base units. Without --textfile or --pushgateway they are printed. Exit status: 0, or 2 with one line "
        "for a bad run, a textfile that cannot be written or a Pushgateway that does not answer or refuses; "
        "the run directory is only read. Each row carries the results history's baseline of comparable runs "
        "(an isolate run each node's drift from its own past): --db, --no-history.",
    )
    prom.add_argument("run", metavar="RUN_OR_SWEEP", help="Slurm job id, run id, run directory or sweep directory")
    prom.add_argument("--output-dir", default="runs", help="where to look up job, run and sweep ids (default: runs)")
    prom.add_argument("--textfile", metavar="PATH.prom", help="write node_exporter's textfile here (atomically)")
    prom.add_argument("--pushgateway", metavar="URL", help="push to this Pushgateway, one group per cluster and config")
    prom.add_argument("--cluster", help="the cluster label (default: SLURM_CLUSTER_NAME as rank 0 saw it, or local)")
    prom.add_argument(
        "--config-label",
        "--config-name",  # its first spelling, kept: --config is a YAML file everywhere else, this is a label
        dest="config_label",
        metavar="LABEL",
        help="the config label (default: task-backend-<nodes>n<ranks>r-<the history's config fingerprint>)",
    )
    prom.add_argument("--timeout", type=float, default=10.0, metavar="S", help="Pushgateway timeout (default 10 s)")
    history = prom.add_mutually_exclusive_group()
    history.add_argument(
        "--db",
        dest="history_url",
        metavar="URL",
        default=None,
        help="the results history whose baseline each row carries (default: the run's history.url); one that "
        "is not there or does not answer: exported without those series, said in one line",
    )
    history.add_argument(
        "--no-history", action="store_true", help="leave the history's baseline series out (the history is not read)"
    )
    prom.set_defaults(handler=cmd_prometheus)


def _runs(ref: str, output_dir: str) -> list[RunDir]:
    from jobs.inspect.scale import find_sweep, is_sweep, runs_by_nodes

    if is_sweep(ref, output_dir):
        sweep = find_sweep(ref, output_dir)
        runs = [run for _, run in sorted(runs_by_nodes(sweep).items()) if run.meta_file.is_file()]
        if not runs:
            raise ConfigError(f"sweep {str(sweep.path)!r} has no run directory to export yet")
        return runs
    return [find_run(ref, output_dir)]


def _baselines(args: argparse.Namespace) -> Baselines | None:
    """Where each row's history baseline comes from: --db, else each run's own history.url; none with
    --no-history."""
    if args.no_history:
        return None
    from jobs.history.export_baseline import HistoryBaselines

    return HistoryBaselines(args.history_url)


def cmd_prometheus(args: argparse.Namespace) -> int:
    from jobs.ending import prometheus_delivery
    from jobs.inspect.exports import prometheus
    from jobs.rundir.records.codec import RecordError

    try:
        runs = _runs(args.run, args.output_dir)
        baselines = _baselines(args)
        if args.textfile is None and args.pushgateway is None:
            registry = prometheus.registry_of(runs, args.cluster, args.config_label, baselines)
            print(prometheus.exposition(registry), end="")
            return 0
        if args.textfile is not None:
            registry = prometheus.registry_of(runs, args.cluster, args.config_label, baselines)
            prometheus_delivery.write_textfile(Path(args.textfile), registry)
            print(f"collbench: metrics of {len(runs)} run(s) written to {args.textfile}", file=sys.stderr)
        if args.pushgateway is not None:
            for run in runs:
                metrics = prometheus.run_metrics(run, args.cluster, args.config_label, baselines=baselines)
                prometheus_delivery.push(args.pushgateway, metrics, args.timeout)
                group = ", ".join(f"{k}={v}" for k, v in metrics.grouping_key.items())
                print(f"collbench: {run.run_id} pushed to {args.pushgateway} (job=collbench, {group})", file=sys.stderr)
    except (prometheus.ExportError, RecordError) as error:
        raise ConfigError(str(error)) from None
    return 0
