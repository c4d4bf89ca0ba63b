"""A run's Prometheus metrics (jobs.inspect.exports.prometheus) delivered: written as a node_exporter
textfile, or PUT to a Pushgateway. Called at a run's end (jobs.ending.exports) and by
`collbench export prometheus`; the readers only build the metrics."""

from __future__ import annotations

import os
import urllib.error
from pathlib import Path

from prometheus_client import CollectorRegistry, push_to_gateway, write_to_textfile

from jobs.config.exports_settings import url_problem
from jobs.inspect.exports.prometheus import JOB, ExportError, RunMetrics


def write_textfile(path: Path, registry: CollectorRegistry) -> None:
    """node_exporter's textfile collector reads *.prom: written to a temporary name beside it, then renamed
    (prometheus_client's write_to_textfile), so the collector never reads half a file."""
    if path.suffix != ".prom":
        raise ExportError(f"--textfile {str(path)!r}: node_exporter's textfile collector reads only *.prom files")
    folder = path.parent
    if not folder.is_dir():
        raise ExportError(f"--textfile {str(path)!r}: {str(folder)!r} is not a directory")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ExportError(f"--textfile {str(path)!r}: {str(folder)!r} is not writable")
    try:
        write_to_textfile(str(path), registry)
    except OSError as error:
        raise ExportError(
            f"--textfile {str(path)!r}: cannot write in {str(folder)!r}: {error.strerror or error}"
        ) from None


def push(url: str, metrics: RunMetrics, timeout_s: float = 10.0) -> None:
    """PUT the run's metrics to the Pushgateway under job=collbench and its cluster and config: the group's
    series are replaced whole."""
    problem = url_problem(url)
    if problem:
        raise ExportError(f"--pushgateway {url!r} {problem}; allowed: http(s)://HOST[:PORT][/PATH]")
    try:
        push_to_gateway(url, job=JOB, registry=metrics.registry, grouping_key=metrics.grouping_key, timeout=timeout_s)
    except urllib.error.HTTPError as error:
        said = error.read().decode(errors="replace").strip().splitlines()
        raise ExportError(
            f"--pushgateway {url!r} refused the push: HTTP {error.code} {error.reason}"
            + (f": {said[0]}" if said else "")
        ) from None
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise ExportError(f"--pushgateway {url!r} does not answer: {reason}") from None
