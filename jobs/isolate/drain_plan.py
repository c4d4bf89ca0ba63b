"""What a verdict does to Slurm's nodes: drain each node it named with a code that drains, resume each node
it passed that collbench itself drained for what this task can clear, and leave everything else as it is,
saying why. Pure: the nodes' states come in (slurm.nodes.node_states), the steps go out; the command runs
them (or prints them for a dry run). LBNL NHC's rule: a node is brought back only when its offline note
is the tool's own."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from jobs.config.tasks import TaskName
from jobs.isolate.reasons import Code, Finding, drain_reason, drains, own_drain
from slurm.evidence import NodeState
from slurm.nodes import drain_argv, resume_argv
from slurm.steps import command_text

Action = Literal["drain", "resume", "leave"]


@dataclass(frozen=True, slots=True)
class Step:
    host: str
    action: Action
    codes: tuple[Code, ...]
    """drain: the codes the reason carries; resume: the codes it was drained for; leave: what was found."""
    reason: str
    """drain: the reason set; resume and leave: the node's reason as it was."""
    why: str


def argv_of(step: Step) -> list[str]:
    """The scontrol line of a drain or a resume."""
    return drain_argv([step.host], step.reason) if step.action == "drain" else resume_argv([step.host])


def verdict_drains(findings: Sequence[Finding], task: TaskName, run_id: str) -> list[str]:
    """The drain lines the verdict alone asks for, as a reader prints them (it asks Slurm nothing: the run's
    command, with --drain or drain.apply, weighs them against the nodes' states)."""
    steps = plan_steps(findings, [], task, run_id, {}, resume=False, known=False)
    return [command_text(argv_of(step)) for step in steps if step.action == "drain"]


def plan_steps(
    findings: Sequence[Finding],
    passed: Sequence[str],
    task: TaskName,
    run_id: str,
    states: Mapping[str, NodeState],
    resume: bool = True,
    known: bool = True,
) -> list[Step]:
    """The steps for the nodes a verdict named (`findings`) and the nodes it passed, given their states
    (`known` false: states not asked, every named node drained as if idle)."""
    named: dict[str, list[Finding]] = {}
    for finding in findings:
        if drains(finding.code):
            named.setdefault(finding.host, []).append(finding)
    idle = {host: NodeState(host, "idle", "") for host in named} if not known else {}
    steps = [_for_named(host, found, task, run_id, states.get(host, idle.get(host))) for host, found in named.items()]
    if resume:
        steps += [step for host in passed if host not in named for step in _for_passed(host, task, states.get(host))]
    return steps


def _for_named(host: str, found: list[Finding], task: TaskName, run_id: str, state: NodeState | None) -> Step:
    codes = tuple(dict.fromkeys(finding.code for finding in found))
    figure = "; ".join(finding.figure for finding in found)
    if state is None:
        return Step(host, "leave", codes, "", f"Slurm does not know node {host}: nothing to drain")
    own = own_drain(state.reason)
    if state.out_of_service and own is None and state.reason:
        return Step(host, "leave", codes, state.reason, f"already {state.words} by someone else: left as it is")
    if own is not None and set(codes) <= set(own.codes) and state.out_of_service:
        return Step(host, "leave", codes, state.reason, f"already drained by collbench for {','.join(own.codes)}")
    merged = tuple(dict.fromkeys((*(own.codes if own and state.out_of_service else ()), *codes)))
    return Step(host, "drain", merged, drain_reason(merged, task, run_id, figure), f"{task} named it: {figure}")


def _for_passed(host: str, task: TaskName, state: NodeState | None) -> list[Step]:
    if state is None or not state.out_of_service:
        return []
    own = own_drain(state.reason)
    if own is None:
        words = f"{state.words} by someone else ({state.reason})" if state.reason else state.words
        return [Step(host, "leave", (), state.reason, f"passed, but {words}: only its owner resumes it")]
    if not own.cleared_by(task):
        return [
            Step(host, "leave", own.codes, state.reason,
                 f"passed, but drained by {own.task} for {','.join(own.codes)}, which a {task} pass does not clear")
        ]  # fmt: skip
    return [Step(host, "resume", own.codes, state.reason, f"{task} passed it; drained by collbench in {own.run_id}")]
