"""The kinds of run and what differs between them: one name each, one registry of data.

A kind is what a run is, from its config to its exit status: the sweep (`collbench run/submit`), isolate's
rounds of node groups (`collbench isolate`), the check of an allocation (`collbench check`: isolate's rounds
in plan mode check) and the check of one node alone (`collbench check --node`: a local sweep). Config.task,
run.json's task and a drain reason's task are all a TaskName. The registry sits in the config layer, the
lowest, so that every layer above reads it; what it names in a higher layer (the rank code) it names by
its dotted path, resolved where it runs, so this module imports nothing above it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

TaskName = Literal["sweep", "isolate", "check", "check-node"]
TASK_NAMES: tuple[TaskName, ...] = get_args(TaskName)

VerdictFile = Literal["isolate", "check"]
"""A final file beside summary.json: isolate.json and isolate-matrix.csv (isolate), check/ (check)."""
ExitRule = Literal["run", "rounds", "node-line"]
"""How the exit status is read: the run's own (run: failed ranks, wrong results); the worst of the run's and
the isolate verdict's (rounds); the one line of check --node, OK 0, FAIL 1, UNKNOWN cannot-run (node-line)."""

CHECK_PLAN_MODE = "check"
"""isolate.mode of a check run: the whole allocation, then random pairs (jobs.isolate.check_plan)."""


@dataclass(frozen=True, slots=True)
class TaskSpec:
    """What one kind of run does differently from the others."""

    name: TaskName
    rank_entry: str
    """module:function every rank runs (jobs.runtime.rank_tasks), called with a RankWork."""
    in_rounds: bool
    """The ranks measure isolate's rounds of node groups: a restart runs them all again, the rows are rounds
    (no nccl-tests JSON), and the isolate verdict judges the nodes."""
    verdict_files: tuple[VerdictFile, ...]
    """What the end writes beside summary.json and table.txt, in order."""
    exit_rule: ExitRule
    command: str
    """The command that starts it (`run` or `submit` by launcher for a sweep)."""
    page_kind: str
    """How the run's page and verdict name it."""
    size_key: str
    """The key that sets the largest size it measures ('' for the bench's: bench.sizes or bench.max_bytes)."""
    plan_mode: str = ""
    """The isolate.mode its rounds are planned in ('' for any but this task's own)."""
    drain_scope: int = -1
    """How much of a node it sees (jobs.isolate.reasons): -1 judges no node, 0 the node alone, 1 the node, its
    rails and its links; a pass clears only what a task of no wider scope drained."""
    seed_per_allocation: bool = False
    """Its plan mixes each allocation's job id into isolate.seed (jobs.isolate.check_plan.seed_for), so the seed
    is an accident of scheduling and the config's fingerprint holds it at its default."""


TASKS: dict[TaskName, TaskSpec] = {
    spec.name: spec
    for spec in (
        TaskSpec(
            name="sweep",
            rank_entry="jobs.runtime.rank_tasks:sweep",
            in_rounds=False,
            verdict_files=(),
            exit_rule="run",
            command="",
            page_kind="run",
            size_key="",
        ),
        TaskSpec(
            name="isolate",
            rank_entry="jobs.runtime.rank_tasks:rounds",
            in_rounds=True,
            verdict_files=("isolate",),
            exit_rule="rounds",
            command="collbench isolate",
            page_kind="isolate",
            size_key="isolate.sizes",
            drain_scope=1,
        ),
        TaskSpec(
            name="check",
            rank_entry="jobs.runtime.rank_tasks:rounds",
            in_rounds=True,
            verdict_files=("isolate", "check"),
            exit_rule="rounds",
            command="collbench check",
            page_kind="check",
            size_key="check.sizes",
            plan_mode=CHECK_PLAN_MODE,
            drain_scope=1,
            seed_per_allocation=True,
        ),
        TaskSpec(
            name="check-node",
            rank_entry="jobs.runtime.rank_tasks:sweep",
            in_rounds=False,
            verdict_files=(),
            exit_rule="node-line",
            command="collbench check --node",
            page_kind="run",
            size_key="check.local_sizes",
            drain_scope=0,
        ),
    )
}


def kind_of(task: TaskName, plan_mode: str) -> TaskName:
    """The kind of a run from its task and isolate.mode: task isolate in plan mode check is a check (so
    configs and format-3 run.json files written before task check read as what they ran)."""
    return "check" if task == "isolate" and plan_mode == CHECK_PLAN_MODE else task
