"""`launcher: external` (run.json): a run whose ranks another launcher started, each `collbench rank`
(torchrun, srun, mpirun, a Kubernetes TrainJob; run.json's `external` says which). collbench starts
nothing and owns no process of it: what it can know is in the run directory. The run has ended when rank 0's
final files are there (summary.json and table.txt: rank 0 writes them as the run ends) or when every rank
has recorded its end; its state is then its ranks' statuses (COMPLETED, CANCELLED, FAILED), as for a local
run. Until then it is RUNNING as far as collbench can tell: a world killed from outside leaves its statuses
as they were (`collbench status` shows each rank's last heartbeat). Cancel says who owns the ranks.

`new_external_run` makes its run directory, on rank 0, as every launcher's start does (config.yaml, then
run.json)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from jobs.config.model import Config, ConfigError
from jobs.inspect.report import read_statuses
from jobs.launchers.base import RunState, WaitResult
from jobs.launchers.children import POLL_S, ended_state
from jobs.launchers.live import Live
from jobs.launchers.recorded import RecordedLauncher
from jobs.launchers.run_end import end_run
from jobs.launchers.runs import new_run, public_config
from jobs.launchers.world_place import WorldPlace
from jobs.rundir.layout import RunDir
from jobs.rundir.records.rank import RankState
from jobs.rundir.records.run import LauncherName
from slurm.hostlist import collect_hostlist
from slurm.states import JobState

NAME = "external"

OWNERS = {
    "torchrun": "torchrun owns them: stop torchrun (or the TrainJob, PyTorchJob or JobSet that runs it)",
    "env": "the launcher that set RANK and WORLD_SIZE owns them: stop it",
    "slurm": "Slurm's job step owns them: scancel JOBID.STEPID",
    "mpi": "mpirun owns them: stop mpirun",
    "pmix": "the PMIx launcher owns them: stop it",
}
"""Who to stop an external run with, by run.json's `external`."""


def new_external_run(cfg: Config, place: WorldPlace) -> RunDir:
    """The run directory of a world `place`'s launcher started, under output_dir: config.yaml (the config
    every rank runs), run.json (launcher external, who started it, its world and rendezvous)."""
    run = new_run(cfg, public_config(cfg), RunDir.new_path(cfg.output_dir, NAME))
    run.update_meta(
        launcher=LauncherName.EXTERNAL,
        external=place.launcher,
        nodes=place.nnodes,
        job_id=place.run_id,
        master_addr=place.master_addr,
        master_port=place.master_port,
    )
    return run


class ExternalLauncher(RecordedLauncher):
    """A run started by another launcher: read from its run directory, never started, waited for by its
    files, cancelled by whoever started it."""

    name = NAME
    detached = False
    recorded_by = "`collbench rank` records for a run another launcher started"

    def describe(self, runs: Sequence[RunDir]) -> list[RunState]:
        return [_state(run) for run in runs]

    def wait(self, runs: Sequence[RunDir], timeout_s: float | None, live: Live | None) -> list[WaitResult]:
        """Until every run has ended (its files say so) or the timeout passes; a run whose ranks have all
        recorded their end without rank 0's final files (rank 0 failed) gets them here, once."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        results = []
        for run in runs:
            state = _state(run)
            while not state.state.is_final and (deadline is None or time.monotonic() < deadline):
                time.sleep(POLL_S)
                state = _state(run)
            if state.state.is_final:
                end_run(run)
            results.append(WaitResult(state=state, ranks_ended=state.state.is_final))
        return results

    def cancel(self, run: RunDir) -> str:
        started_by = run.read_meta().external or "another launcher"
        raise ConfigError(
            f"run {run.run_id} was started by {started_by}, not by collbench, which cannot stop its ranks; "
            f"{OWNERS.get(started_by, started_by + ' owns them')}"
        )

    def log_locations(self, run: RunDir) -> list[Path]:
        return sorted(run.logs_dir.glob("rank-*.log"))


def _state(run: RunDir) -> RunState:
    job_id = run.read_meta().job_id
    hosts = _hostlist(run)
    if (run.summary_file.exists() and run.table_file.exists()) or _every_rank_ended(run):
        return ended_state(run, job_id, hosts)
    return RunState(job_id, JobState.RUNNING, words="RUNNING (as its ranks' status files say)", nodes=hosts)


def _every_rank_ended(run: RunDir) -> bool:
    statuses = read_statuses(run)
    world = run.read_meta().world_size
    return len(statuses) == world and all(s.state is not RankState.RUNNING for s in statuses.values())


def _hostlist(run: RunDir) -> str:
    hosts = sorted({status.host for status in read_statuses(run).values()})
    return collect_hostlist(hosts) if hosts else ""
