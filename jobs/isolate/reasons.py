"""The reason codes: one short, stable word for each verdict about a node, carried in the drain reason, the
JSON, the history and the Prometheus labels (docs/check.md lists them). A drain reason collbench writes is
`collbench:<codes> by <task> run=<run id> <figure>`; the prefix marks the drain as collbench's own, so a
later pass resumes only what collbench itself drained, and only once a check as wide as the one that
drained it passes the node."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import get_args

from jobs.config.tasks import TASK_NAMES, TASKS, TaskName
from jobs.rundir.records.findings import Code, Finding

__all__ = ["CODES", "Code", "Finding", "OwnDrain", "ReasonCode", "drain_reason", "drains", "own_drain"]


@dataclass(frozen=True, slots=True)
class ReasonCode:
    code: Code
    drains: bool
    """Whether a node named with it is drained (a slow link and a check that could not run never drain)."""
    meaning: str


REASON_CODES: dict[Code, ReasonCode] = {
    code.code: code
    for code in (
        ReasonCode("slow_node", True, "the node is slow with most of its partners (or, alone, under its floor)"),
        ReasonCode(
            "slow_rail", True, "one rail of the node (its NIC, cable or switch port) is slow, its others healthy"
        ),
        ReasonCode("slow_link", False, "a link between nodes or switches is slow; both ends are healthy otherwise"),
        ReasonCode("node_stopped", True, "the node's ranks died, hung or did not answer within the budget"),
        ReasonCode("setup_failed", True, "the node's ranks failed to set up (rendezvous, process group, device)"),
        ReasonCode("fabric_failed", True, "a fabric requirement failed on the node (transport, GPUDirect, port)"),
        ReasonCode("wrong_result", True, "the node's ranks returned wrong elements"),
        ReasonCode("not_run", False, "the check could not run or settle: nothing to blame the node for"),
    )
}
CODES: tuple[Code, ...] = get_args(Code)
SCOPE: dict[TaskName, int] = {name: spec.drain_scope for name, spec in TASKS.items()}
"""How much of a node a task sees (TaskSpec.drain_scope): a node-local check sees no NIC, so its pass resumes
only what a node-local check drained; check and isolate see the node, its rails and its links; a sweep
judges no node."""

PREFIX = "collbench:"
REASON_CHARS = 200
"""Slurm keeps a reason whole; a short one stays readable in sinfo -R."""
_OWN = re.compile(rf"^{PREFIX}(?P<codes>[a-z_]+(?:,[a-z_]+)*) by (?P<task>[a-z-]+) run=(?P<run_id>\S+)")


@dataclass(frozen=True, slots=True)
class OwnDrain:
    """What a drain reason of collbench's own says: its codes, the task that drained it and the run."""

    codes: tuple[Code, ...]
    task: TaskName
    run_id: str

    def cleared_by(self, task: TaskName) -> bool:
        """Whether a pass of `task` clears this drain: one at least as wide as the task that drained it."""
        return SCOPE[task] >= SCOPE[self.task]


def drain_reason(codes: tuple[Code, ...], task: TaskName, run_id: str, figure: str) -> str:
    """The reason a drain carries; no double quote (it goes inside Reason="...")."""
    head = f"{PREFIX}{','.join(codes)} by {task} run={run_id}"
    text = f"{head} {figure}".replace('"', "'").strip()
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 3] + "..."


def own_drain(reason: str) -> OwnDrain | None:
    """The codes, task and run of a reason collbench wrote; None for anybody else's (or no) reason."""
    found = _OWN.match(reason.strip())
    if found is None:
        return None
    codes = tuple(code for code in CODES if code in found["codes"].split(","))
    task = next((task for task in TASK_NAMES if task == found["task"]), None)
    if not codes or task is None:
        return None
    return OwnDrain(codes, task, found["run_id"])


def drains(code: Code) -> bool:
    return REASON_CODES[code].drains
