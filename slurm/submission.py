"""Building a Slurm request from the config, apart from submitting it, so a dry run can print
the exact sbatch script; then submitting, querying and cancelling through Slurm's own commands."""

from __future__ import annotations

import contextlib
import math
import os
import re
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from slurm import runner
from slurm.evidence import parse_node_addresses, slurmd_answers
from slurm.queue import (
    JobRecord,
    attempts_argv,
    parse_attempt_states,
    parse_sacct,
    parse_squeue,
    sacct_argv,
    squeue_argv,
    unknown,
    with_accounted_end,
)
from slurm.runner import SlurmFailed
from slurm.runner import SlurmUnavailable as SlurmUnavailable  # where the CLI and the launchers have found it
from slurm.settings import SlurmSettings


class SubmissionFailed(ValueError):
    """sbatch refused the job: the request is bad input (exit 2)."""


@dataclass(frozen=True, slots=True)
class SlurmRequest:
    """Everything needed to submit: submitit's SlurmExecutor parameters, its folder and python."""

    parameters: dict[str, Any]
    folder: Path
    python: str

    @property
    def command(self) -> str:
        # What submitit's SlurmExecutor runs on every task (its _submitit_command_str).
        return " ".join([self.python, "-u -m submitit.core._submit", shlex.quote(str(self.folder))])

    def script(self) -> str:
        """The sbatch script, exactly as submitit will write it for this request."""
        from submitit.slurm.slurm import _make_sbatch_string

        return str(_make_sbatch_string(command=self.command, folder=self.folder, **self.parameters))


def build_request(
    settings: SlurmSettings,
    nodes: int,
    time_min: float,
    folder: Path,
    python: str | None = None,
    setup_first: Sequence[str] = (),
) -> SlurmRequest:
    """submitit parameters from the config's slurm section; empty settings are left to Slurm.
    `setup_first` runs in the batch script before the config's own setup lines."""
    limit_min = max(1, math.ceil(time_min))
    params: dict[str, Any] = {
        "job_name": settings.job_name,
        "nodes": nodes,
        "ntasks_per_node": settings.resolved_tasks_per_node(),
        "time": limit_min,
        "signal_delay_s": warning_ahead_s(limit_min),
        "srun_args": (["--kill-on-bad-exit=1"] if settings.kill_on_bad_exit else []) + list(settings.srun_args),
    }
    optional = {
        "partition": settings.partition,
        "account": settings.account,
        "qos": settings.qos,
        "mem": settings.mem,
        "constraint": settings.constraint,
        "exclude": settings.exclude,
        "nodelist": settings.nodelist,
        "cpus_per_task": settings.cpus_per_task,
        "gpus_per_node": settings.gpus_per_node or None,
        "exclusive": True if settings.exclusive else None,
        "setup": [*setup_first, *settings.setup] or None,
        "additional_parameters": {"requeue" if settings.requeue else "no-requeue": True, **settings.sbatch_extra},
    }
    params.update({key: value for key, value in optional.items() if value not in (None, "")})
    return SlurmRequest(parameters=params, folder=folder.expanduser().absolute(), python=python or sys.executable)


WARNING_AHEAD_S = 90
"""submitit's own lead for Slurm's warning (SIGUSR2) before the time limit, for jobs of 15 minutes or more."""


def warning_ahead_s(time_min: int) -> int:
    """How long before the time limit Slurm warns the job (sbatch --signal=USR2@N): submitit's 90 s, but at
    most a tenth of a short job's limit (and at least 5 s), so that a 1-minute job is not warned at its start,
    while its ranks are still importing torch and a SIGUSR2 would end them before they can record a stop."""
    return int(min(WARNING_AHEAD_S, max(5, time_min * 60 / 10)))


def check_available() -> None:
    """Raise SlurmUnavailable unless sbatch exists and the controller answers, within seconds."""
    runner.require("sbatch", "squeue", "scancel")
    try:
        said = runner.output(["scontrol", "ping"])
    except SlurmFailed as error:
        raise SlurmUnavailable(f"Slurm's controller is not reachable: {error.words}") from None
    if "DOWN" in said:
        raise SlurmUnavailable(f"Slurm's controller is not reachable: {said.strip().splitlines()[0]}")


def preflight(settings: SlurmSettings, nodes: int, time_min: float) -> None:
    """Raise preflight.RequestRefused when the cluster could never run this request."""
    from slurm.preflight import check_request

    check_request(settings, nodes, time_min)


def submit(request: SlurmRequest, job: Callable[[], Any]) -> str:
    """Submit `job` to run on every task; returns the Slurm job id. sbatch's own stderr is caught, so
    a refusal is one line that carries sbatch's words."""
    import submitit
    from submitit.core.utils import FailedJobError

    executor = submitit.SlurmExecutor(folder=request.folder, python=request.python)
    executor.update_parameters(**request.parameters)
    failure: BaseException | None = None
    with _stderr_caught() as said:
        try:
            submitted = executor.submit(job)
        except (FailedJobError, subprocess.CalledProcessError) as error:
            failure = error
        caught = said()
    if failure is None:
        sys.stderr.write(caught)  # sbatch's warnings, if any, still reach the user
        return str(submitted.job_id)
    words = [line.removeprefix("sbatch: error: ").strip() for line in caught.splitlines() if line.strip()]
    words = list(dict.fromkeys(w.removeprefix("Batch job submission failed: ") for w in words))
    text = "; ".join(words) or str(failure).strip().splitlines()[-1]
    if runner.unreachable(text):
        raise SlurmUnavailable(f"sbatch could not reach Slurm's controller: {text}")
    raise SubmissionFailed(f"sbatch refused the job: {text}")


@contextlib.contextmanager
def _stderr_caught() -> Iterator[Callable[[], str]]:
    """What child processes write to fd 2 meanwhile (submitit runs sbatch with our stderr)."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield lambda: (sink.seek(0), sink.read().decode("utf-8", "replace"))[1]
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def query_jobs(job_ids: Sequence[str]) -> dict[str, JobRecord]:
    """Every job's state and nodes in at most two calls, however many jobs: one squeue for all of them
    (the controller: current), then one sacct for those it no longer lists (accounting: lags a moment,
    but remembers finished jobs) and for those it shows COMPLETING (accounting has their end already:
    'COMPLETING (NODE_FAIL)'). A job neither knows is UNKNOWN; a controller that does not answer leaves
    every job to accounting."""
    ids = list(dict.fromkeys(job_ids))
    if not ids:
        return {}
    found = parse_squeue(_said(squeue_argv(ids)))
    missing = [job_id for job_id in ids if job_id not in found]
    completing = [job_id for job_id in ids if job_id in found and found[job_id].state == "COMPLETING"]
    if missing or completing:
        said = parse_sacct(_said(sacct_argv(missing + completing)))
        found.update({k: v for k, v in said.items() if k in missing})
        found.update({k: with_accounted_end(found[k], said.get(k)) for k in completing})
    return {job_id: found.get(job_id) or unknown(job_id) for job_id in ids}


def job_state(job_id: str) -> str:
    """One job's state word (see query_jobs)."""
    return query_jobs([job_id])[job_id].state


def attempt_state(job_id: str, number: int) -> str:
    """The state Slurm's accounting gave attempt `number` (from 0) of a requeued job; '' when it cannot say."""
    try:
        states = parse_attempt_states(runner.output(attempts_argv(job_id)))
    except runner.SlurmError:
        return ""
    return states[number] if number < len(states) else ""


def unanswering_nodes(nodes: list[str]) -> list[str]:
    """The nodes whose slurmd does not accept a connection from here (what slurmctld tests too)."""
    if not nodes:
        return []
    shown = _said(["scontrol", "-o", "show", "node", ",".join(nodes)])
    port = re.search(r"^SlurmdPort\s*=\s*(\d+)", _said(["scontrol", "show", "config"]), re.M)
    if not shown or not port:
        return []
    addresses = parse_node_addresses(shown)
    slurmd_port = int(port.group(1))
    with ThreadPoolExecutor(max_workers=min(32, len(addresses) or 1)) as pool:
        answered = list(pool.map(lambda address: slurmd_answers(address, slurmd_port), addresses.values()))
    return sorted(node for node, ok in zip(addresses, answered, strict=True) if not ok)


def cancel(job_id: str) -> None:
    try:
        runner.run(["scancel", job_id])
    except SlurmFailed as error:
        raise SlurmUnavailable(f"scancel {job_id} failed: {error.words}") from None


def _said(argv: list[str]) -> str:
    """A query's answer, '' when Slurm answered that it cannot say (a controller down: accounting may)."""
    try:
        return runner.output(argv)
    except SlurmFailed:
        return ""
