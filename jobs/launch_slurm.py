"""The Slurm launcher: the same RankJob, submitted through submitit; waiting reads the run directory."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jobs.config import Config
from jobs.rank_job import RankJob
from jobs.rundir import RunDir
from slurm import submission
from slurm.states import StateInfo, state_info

POLL_S = 1.0


def slurm_request(cfg: Config, run_path: Path) -> submission.SlurmRequest:
    return submission.build_request(cfg.slurm, cfg.nodes, cfg.timeouts.job_min, RunDir(run_path).submitit_dir)


def dry_run_script(cfg: Config) -> str:
    """The sbatch script `submit` would hand to Slurm; the run id is only chosen at submission."""
    placeholder = Path(cfg.output_dir).expanduser().absolute() / "RUN_ID"
    return slurm_request(cfg, placeholder).script()


def submit_run(cfg: Config, config_plain: dict[str, Any], run: RunDir) -> str:
    """Submit the run's ranks as one Slurm job; returns its job id."""
    job_id = submission.submit(slurm_request(cfg, run.path), RankJob(config=config_plain, run_dir=str(run.path)))
    run.update_meta(job_id=job_id)
    return job_id


@dataclass(frozen=True, slots=True)
class JobState:
    job_id: str
    slurm_state: str
    info: StateInfo


def current_state(run: RunDir) -> JobState:
    job_id = str(run.read_meta()["job_id"])
    slurm_state = submission.job_state(job_id)
    return JobState(job_id=job_id, slurm_state=slurm_state, info=state_info(slurm_state))


def wait_for_job(run: RunDir, timeout_s: float | None = None) -> JobState:
    """Poll Slurm until the job reaches a final state (or the timeout passes)."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        state = current_state(run)
        if state.info.final or (deadline is not None and time.monotonic() >= deadline):
            return state
        time.sleep(POLL_S)
