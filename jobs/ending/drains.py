"""What a verdict does to Slurm's nodes once it stands: the drain and resume steps it makes (jobs.isolate.drain_plan,
weighed against the nodes' states as Slurm has them now), each run in turn through slurm.maintenance, and the
steps run written to the run's drains.json, once. No rights to drain is a refused step with Slurm's words,
never an error: the verdict and its exit status stand. The history record is the caller's (contract 6)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from jobs.config.tasks import TaskName
from jobs.isolate.drain_plan import Step, argv_of, plan_steps
from jobs.isolate.reasons import Finding, drains
from jobs.rundir.layout import RunDir
from jobs.rundir.records.drains import DRAINS, DrainRecord, DrainStep
from slurm.maintenance import apply
from slurm.nodes import node_states
from slurm.steps import command_text

NO_RIGHTS_HINT = "draining and resuming nodes needs a Slurm operator (or root)"


@dataclass(frozen=True, slots=True)
class Acted:
    steps: list[DrainStep]
    refused: str = ""
    """Slurm's words when it refused a line (the later lines were not run)."""


def verdict_steps(
    task: TaskName, findings: Sequence[Finding], passed: Sequence[str], run_id: str, resume: bool
) -> list[Step]:
    """The steps the verdict makes on the nodes it names (one sinfo); slurm.runner's SlurmError when Slurm
    cannot say the nodes' states."""
    hosts = sorted({finding.host for finding in findings if drains(finding.code)} | set(passed))
    return plan_steps(findings, passed, task, run_id, node_states(hosts), resume)


def run_steps(steps: Sequence[Step]) -> Acted:
    """Run each drain and resume in turn; once Slurm refuses one, the rest are not tried (same rights)."""
    done: list[DrainStep] = []
    refused = ""
    for step in steps:
        error = ""
        if step.action != "leave":
            error = refused or apply(argv_of(step))
            refused = refused or error
        ran = step.action != "leave" and not error
        done.append(DrainStep(step.host, step.action, list(step.codes), step.reason, step.why, ran, error))
    return Acted(done, refused)


def apply_steps(steps: Sequence[Step], run: RunDir | None, task: TaskName, run_id: str) -> tuple[Acted, DrainRecord]:
    """The steps run, and what was done written to the run's drains.json (when there is a run and a step)."""
    acted = run_steps(steps)
    record = DrainRecord(run_id=run_id, task=task, at=time.time(), steps=acted.steps)
    if run is not None and acted.steps:
        DRAINS.create(run.drains_file, record)
    return acted, record


def step_lines(steps: Sequence[Step], dry_run: bool) -> list[str]:
    """The scontrol line of each drain and resume (what would run), and a comment for each node left."""
    head = "# drain and resume (nothing runs: drain.apply=true or --apply runs them)" if dry_run else ""
    lines = [head] if head and steps else []
    for step in steps:
        if step.action == "leave":
            lines.append(f"# leave {step.host}: {step.why}")
        else:
            lines.append(f"{command_text(argv_of(step))}  # {step.why}")
    return lines


def done_lines(acted: Acted) -> list[str]:
    words = {"drain": "DRAINED", "resume": "RESUMED", "leave": "LEFT"}
    lines = []
    for step in acted.steps:
        if step.action == "leave" or step.done:
            detail = step.reason if step.action == "drain" else step.why
            lines.append(f"{words[step.action]} {step.host}: {detail}")
    return lines


def refusal_line(acted: Acted) -> str:
    """The one line said when Slurm refused a step, '' when it refused none."""
    if not acted.refused:
        return ""
    return (
        f"collbench: drain not applied: Slurm refused ({acted.refused}); {NO_RIGHTS_HINT}; the verdict stands "
        "(--drain prints the lines to run)"
    )
