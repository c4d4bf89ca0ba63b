"""After a verdict stands: the drain and resume steps it makes (jobs.isolate.drain_plan, from the nodes'
states as Slurm has them now), printed for `--drain`, run when drain.apply is on. Each step run is written
to the run's drains.json and recorded in the history (`history node` lists them). No rights to drain costs
one line: the verdict and the exit status stand."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

from jobs.config.model import Config
from jobs.isolate.drain_plan import Step, argv_of, plan_steps
from jobs.isolate.reasons import Finding, Task, drains
from jobs.rundir.layout import RunDir
from jobs.rundir.records.drains import DRAINS, DrainRecord, DrainStep
from slurm.nodes import NodesUnavailable, node_states, run_scontrol
from slurm.steps import cluster_name, command_text

NO_RIGHTS_HINT = "draining and resuming nodes needs a Slurm operator (or root)"


@dataclass(frozen=True, slots=True)
class Acted:
    steps: list[DrainStep]
    refused: str = ""
    """Slurm's words when it refused a line (the later lines were not run)."""


def act_on_verdict(
    cfg: Config,
    run: RunDir | None,
    task: Task,
    findings: Sequence[Finding],
    passed: Sequence[str],
    show: bool,
    run_id: str = "",
) -> Acted | None:
    """Print (`show`) or run (drain.apply) the steps the verdict makes; None when neither was asked or
    Slurm could not say the nodes' states (one line said)."""
    apply = cfg.drain.apply
    if not (apply or show):
        return None
    run_id = run_id or (run.run_id if run is not None else "")
    hosts = sorted({finding.host for finding in findings if drains(finding.code)} | set(passed))
    try:
        states = node_states(hosts)
    except NodesUnavailable as error:
        print(f"collbench: cannot read the nodes' states ({error}); nothing drained or resumed", file=sys.stderr)
        return None
    steps = plan_steps(findings, passed, task, run_id, states, cfg.drain.resume)
    if not apply:
        print("\n".join(step_lines(steps, dry_run=True)), flush=True)
        return None
    acted = run_steps(steps)
    print("\n".join(done_lines(acted)), flush=True)
    if acted.refused:
        print(
            f"collbench: drain not applied: Slurm refused ({acted.refused}); {NO_RIGHTS_HINT}; the verdict "
            "stands (--drain prints the lines to run)",
            file=sys.stderr,
            flush=True,
        )
    record = DrainRecord(run_id=run_id, task=task, at=time.time(), steps=acted.steps)
    if run is not None and acted.steps:
        DRAINS.create(run.drains_file, record)
    if acted.steps and cfg.history.record:
        from jobs.history.node_actions import record_actions  # SQLAlchemy only where it is asked

        record_actions(cfg, cfg.history.cluster or cluster_name(), record)
    return acted


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


def run_steps(steps: Sequence[Step]) -> Acted:
    """Run each drain and resume in turn; once Slurm refuses one, the rest are not tried (same rights)."""
    done: list[DrainStep] = []
    refused = ""
    for step in steps:
        error = ""
        if step.action != "leave":
            error = refused or run_scontrol(argv_of(step))
            refused = refused or error
        ran = step.action != "leave" and not error
        done.append(DrainStep(step.host, step.action, list(step.codes), step.reason, step.why, ran, error))
    return Acted(done, refused)


def done_lines(acted: Acted) -> list[str]:
    words = {"drain": "DRAINED", "resume": "RESUMED", "leave": "LEFT"}
    lines = []
    for step in acted.steps:
        if step.action == "leave" or step.done:
            detail = step.reason if step.action == "drain" else step.why
            lines.append(f"{words[step.action]} {step.host}: {detail}")
    return lines
