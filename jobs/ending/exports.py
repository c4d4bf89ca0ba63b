"""The config's `exports` section at the end of every run: the run's Prometheus metrics written to a
node_exporter textfile and/or pushed to a Pushgateway, by whoever writes the run's final files
(jobs.ending.finish.finish_run), right after the run goes into the history, as
`collbench export prometheus` does by hand. An export that fails costs one line naming the command that
catches up; the run, its files and its exit status are left as they are."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from pathlib import Path

from jobs.config.schema import ConfigError
from jobs.ending import prometheus_delivery
from jobs.inspect.exports import prometheus
from jobs.inspect.report import OutcomeOnce, RunOutcome
from jobs.rundir.layout import RunDir
from jobs.rundir.records.codec import RecordError
from jobs.rundir.records.config import load_run_config


def _stderr(line: str) -> None:
    print(f"collbench: {line}", file=sys.stderr, flush=True)


def export_ended_run(
    run: RunDir, say: Callable[[str], None] = _stderr, outcome_of: Callable[[], RunOutcome] | None = None
) -> bool:
    """Export the ended `run` as its config's `exports` section says; True when everything asked for was
    done (or nothing was asked). Never raises for the export's sake. `outcome_of`: the run's outcome, read
    once by the caller for everything a run's end does (else read here, once)."""
    try:
        exports = load_run_config(run).exports
    except (RecordError, ConfigError, OSError) as error:
        say(f"exports: {run.run_id} not exported: {error}")
        return False
    if not exports.any:
        return True
    done = True
    path = shlex.quote(str(run.path))
    try:
        metrics = prometheus.run_metrics(run, outcome=(outcome_of or OutcomeOnce(run))())
    except (prometheus.ExportError, RecordError, OSError) as error:
        say(f"exports: {run.run_id} not exported ({error}); `collbench export prometheus {path}` exports it later")
        return False
    if exports.prometheus_textfile:
        textfile = exports.prometheus_textfile
        try:
            prometheus_delivery.write_textfile(Path(textfile).expanduser(), metrics.registry)
        except (prometheus.ExportError, RecordError, OSError) as error:
            done = False
            say(
                f"exports: {run.run_id} not written to {textfile} ({error}); "
                f"`collbench export prometheus {path} --textfile {shlex.quote(textfile)}` writes it later"
            )
    if exports.pushgateway:
        url = exports.pushgateway
        try:
            prometheus_delivery.push(url, metrics, exports.timeout_s)
        except (prometheus.ExportError, RecordError, OSError) as error:
            done = False
            say(
                f"exports: {run.run_id} not pushed ({error}); "
                f"`collbench export prometheus {path} --pushgateway {shlex.quote(url)}` pushes it later"
            )
    return done
