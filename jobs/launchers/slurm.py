"""The Slurm launcher: the same RankEntry, submitted through submitit as one job; waiting is the watcher's."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from jobs.config.model import Config, ConfigError
from jobs.launchers.base import Launcher, Request, RunState, Started, WaitResult
from jobs.launchers.entry import RankEntry
from jobs.launchers.live import Live
from jobs.launchers.runs import start_new_run
from jobs.launchers.watcher import Watcher, node_health, state_of
from jobs.rundir.layout import RunDir
from jobs.rundir.records.slurm import JobFacts
from slurm import submission
from slurm.evidence import nodes_of
from slurm.runner import SlurmError
from slurm.states import JobState


def slurm_request(cfg: Config, run_path: Path, python: str = sys.executable) -> submission.SlurmRequest:
    """The job's request; its batch script first files away any earlier attempt (jobs.rundir.attempts)."""
    begin_attempt = f"{shlex.quote(python)} -m jobs.rundir.attempts {shlex.quote(str(run_path))}"
    return submission.build_request(
        cfg.slurm, cfg.nodes, cfg.timeouts.job_min, RunDir(run_path).submitit_dir, python, [begin_attempt]
    )


def check_cluster_can_run(cfg: Config) -> None:
    """Slurm's partitions, accounts and QOS against the request: bad input before sbatch, never a job that
    waits forever."""
    from slurm.preflight import RequestRefused

    try:
        submission.preflight(cfg.slurm, cfg.nodes, cfg.timeouts.job_min)
    except RequestRefused as error:
        raise ConfigError(str(error)) from None


class SlurmLauncher(Launcher[submission.SlurmRequest]):
    name = "slurm"
    detached = True

    def check_can_start(self, cfg: Config) -> None:
        submission.check_available()
        check_cluster_can_run(cfg)

    def build_request(self, cfg: Config, run_path: Path) -> Request[submission.SlurmRequest]:
        request = slurm_request(cfg, run_path)
        return Request(cfg=cfg, run_path=run_path, text=request.script(), payload=request)

    def start(self, request: Request[submission.SlurmRequest]) -> Started:
        def submit(public: dict[str, object], run: RunDir) -> str:
            job_id = submission.submit(request.payload, RankEntry(config=public, run_dir=str(run.path)))
            run.update_meta(job_id=job_id)
            return job_id

        run, job_id = start_new_run(request.cfg, request.run_path, submit)
        return Started(run, job_id, (f"job {job_id}", f"run directory {run.path}"))

    def describe(self, runs: Sequence[RunDir]) -> list[RunState]:
        ids = [_job_id(run) for run in runs]
        records = submission.query_jobs(ids)
        return [state_of(records[job_id]) for job_id in ids]

    def wait(self, runs: Sequence[RunDir], timeout_s: float | None, live: Live | None) -> list[WaitResult]:
        return Watcher(runs, live).wait(timeout_s)

    def cancel(self, run: RunDir) -> str:
        job_id = _job_id(run)
        submission.cancel(job_id)
        return f"job {job_id}"

    def log_locations(self, run: RunDir) -> list[Path]:
        job_id = _job_id(run)
        ranks = sorted(run.logs_dir.glob("rank-*.log"))
        return [*ranks, *(run.submitit_dir / f"{job_id}_0_log.{ext}" for ext in ("out", "err"))]

    def facts_now(self, run: RunDir) -> JobFacts:
        """As Slurm says now; where it cannot say (no Slurm here: a run directory copied off the cluster, or a
        controller down), what the run directory kept, said on stderr: a reader renders from the directory,
        and the verdict in it does not need the scheduler."""
        try:
            return self.facts(run, self.describe([run])[0])
        except SlurmError as error:
            print(f"collbench: {error}; the job's state is what {run.path} kept", file=sys.stderr)
            return JobFacts.read(run)

    def facts(self, run: RunDir, state: RunState) -> JobFacts:
        """What wait kept, brought up to date with what Slurm says now (state, nodes, and while the job
        runs its nodes' health: one sinfo), in memory only."""
        facts = JobFacts.read(run)
        if state.state is not JobState.UNKNOWN:  # Slurm's word now: a job the first wait saw FAILED may end NODE_FAIL
            facts.state = state.words
        facts.nodes = facts.nodes or state.nodes
        if state.state is JobState.RUNNING:
            for node in node_health(nodes_of(facts.nodes)).values():
                if node.unhealthy:
                    facts.unhealthy.setdefault(node.node, f"Slurm marks it {node.describe()}")
        return facts


def _job_id(run: RunDir) -> str:
    job_id = run.read_meta().job_id
    if not job_id:
        raise ConfigError(f"run {run.run_id} has no Slurm job id in {run.meta_file}; it was never submitted")
    return job_id
