"""The step launcher: the ranks as one `srun` job step inside the allocation this process already holds
(an `salloc` shell, a batch script), on its nodes or a subset, never a new job. The same RankEntry as
every launcher, read by submitit's own task entry point; srun is this process's child, so the run ends
with it (`detached` False, as the local launcher); its step id (JOB.STEP) is the run's job id."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from jobs.config.model import Config, ConfigError, Rendezvous
from jobs.launchers.base import Request, Started
from jobs.launchers.children import POLL_S, ChildLauncher
from jobs.launchers.entry import RankEntry
from jobs.launchers.runs import start_new_run
from jobs.rundir.layout import RunDir
from slurm.hostlist import BadHostlist, collect_hostlist
from slurm.rendezvous import PORT_BASE, PORT_SPAN
from slurm.runner import SlurmUnavailable, require
from slurm.steps import (
    Allocation,
    NotInAllocation,
    StepRefused,
    cancel_step,
    command_text,
    current_allocation,
    srun_argv,
    step_hosts,
    step_id_of,
    step_running,
)

STEP_START_S = 60.0
"""How long srun may take to say its step id before the start counts as refused."""
CANCEL_WAIT_S = 15.0


def allocation_or_refuse() -> Allocation:
    try:
        return current_allocation(os.environ)
    except NotInAllocation as error:
        raise ConfigError(str(error)) from None


def hosts_for(cfg: Config, allocation: Allocation) -> list[str]:
    """The allocation's nodes this config runs on (slurm.nodelist, less slurm.exclude), `nodes` of them."""
    try:
        hosts = step_hosts(allocation, cfg.slurm)
    except (ValueError, BadHostlist) as error:
        raise ConfigError(str(error)) from None
    if len(hosts) < cfg.nodes:
        raise ConfigError(
            f"nodes: {cfg.nodes}, but allocation {allocation.job_id} offers {len(hosts)} node(s) "
            f"({collect_hostlist(hosts) if hosts else 'none'}); allowed: 1-{len(hosts)}"
        )
    return hosts[: cfg.nodes]


class StepLauncher(ChildLauncher[list[str]]):
    name = "slurm-step"

    def __init__(self) -> None:
        self.steps: dict[RunDir, subprocess.Popen[bytes]] = {}
        """The steps this process started: srun, its child."""

    def check_here(self, cfg: Config) -> None:
        hosts_for(cfg, allocation_or_refuse())
        require("srun")

    def build_request(self, cfg: Config, run_path: Path) -> Request[list[str]]:
        cfg = _with_port(cfg)
        allocation = allocation_or_refuse()
        command = [sys.executable, "-u", "-m", "submitit.core._submit", str(RunDir(run_path).submitit_dir)]
        argv = srun_argv(cfg.slurm, hosts_for(cfg, allocation), command, cfg.slurm.job_name)
        text = f"# one job step of allocation {allocation.job_id}:\n{command_text(argv)}\n"
        return Request(cfg=cfg, run_path=run_path, text=text, payload=argv)

    def start(self, request: Request[list[str]]) -> Started:
        cfg = request.cfg
        allocation = allocation_or_refuse()

        def launch(public: dict[str, Any], run: RunDir) -> str:
            entry = RankEntry(config=public, run_dir=str(run.path))
            _pickle(entry, run.submitit_dir / f"{allocation.submitit_job_id(os.environ)}_submitted.pkl")
            step = _start_srun(request.payload, run)
            step_id = _await_step_id(step, run)
            self.steps[run] = step
            run.update_meta(job_id=step_id, master_port=cfg.rendezvous.master_port)
            return step_id

        run, step_id = start_new_run(cfg, request.run_path, launch)
        hosts = collect_hostlist(hosts_for(cfg, allocation))
        return Started(run, step_id, (f"step {step_id} on {hosts}", f"run directory {run.path}"))

    def alive(self, run: RunDir) -> bool:
        step = self.steps.get(run)
        if step is not None:
            return step.poll() is None
        return bool(step_running(run.read_meta().job_id))

    def started_here(self, run: RunDir) -> bool:
        return run in self.steps

    def cancel(self, run: RunDir) -> str:
        step_id = run.read_meta().job_id
        problem = cancel_step(step_id)
        step = self.steps.get(run)
        if step is not None:
            _end(step)
        if problem and step is None:
            raise SlurmUnavailable(f"scancel {step_id} failed: {problem}")
        return f"step {step_id} (the allocation stays)"

    def log_locations(self, run: RunDir) -> list[Path]:
        return [*sorted(run.logs_dir.glob("rank-*.log")), run.step_stderr]


def _with_port(cfg: Config) -> Config:
    """A rendezvous port of the step's own: every step of one allocation would derive the same one."""
    if cfg.rendezvous.master_port:
        return cfg
    port = PORT_BASE + random.randrange(PORT_SPAN)
    return replace(cfg, rendezvous=Rendezvous(master_addr=cfg.rendezvous.master_addr, master_port=port))


def _pickle(entry: RankEntry, path: Path) -> None:
    from submitit.core.utils import DelayedSubmission

    path.parent.mkdir(parents=True, exist_ok=True)
    DelayedSubmission(entry).dump(path)


def _start_srun(argv: list[str], run: RunDir) -> subprocess.Popen[bytes]:
    run.step_stderr.parent.mkdir(parents=True, exist_ok=True)
    with run.step_stderr.open("ab") as err, (run.submitit_dir / "srun.out").open("ab") as out:
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err)


def _await_step_id(step: subprocess.Popen[bytes], run: RunDir) -> str:
    """The step id srun prints once the step is created; StepRefused with srun's words if it ends or
    waits for longer than STEP_START_S first."""
    deadline = time.monotonic() + STEP_START_S
    while time.monotonic() < deadline:
        step_id = step_id_of(_lines(run.step_stderr))
        if step_id:
            return step_id
        if step.poll() is not None:
            break
        time.sleep(POLL_S)
    _end(step)
    words = [line.removeprefix("srun: error: ").strip() for line in _lines(run.step_stderr) if "error" in line]
    said = "; ".join(dict.fromkeys(words)) or f"no step within {STEP_START_S:g} s"
    raise StepRefused(f"srun did not start the step: {said}")


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []


def _end(step: subprocess.Popen[bytes]) -> None:
    """srun ended: terminated (it cancels its step), killed if it lingers."""
    if step.poll() is None:
        step.terminate()
    try:
        step.wait(CANCEL_WAIT_S)
    except subprocess.TimeoutExpired:
        step.kill()
        step.wait()
