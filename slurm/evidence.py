"""What Slurm itself says about how a job's tasks and nodes ended: srun's and slurmstepd's messages in
the batch script's stderr, the nodes' states, and whether a node's slurmd still answers. No torch.

srun writes one line per task that ends badly, in the order it learns of them:

    srun: error: n2: task 3: Killed
    srun: launch/slurm: _step_signal: Terminating StepId=1.0
    slurmstepd-n1: error: *** STEP 1.0 ON n1 CANCELLED AT 2026-12-03T08:00:52 ***
    srun: error: n1: tasks 0-1: Terminated

Task ends reported before srun starts tearing the step down (--kill-on-bad-exit, a cancel, a requeue)
are causes; those after it are srun's own doing.

Who tore the step down matters: srun's own `_step_signal: Terminating StepId` (or `Force Terminated`) with
no `*** JOB ... CANCELLED` line is srun ending the step after a task exited badly (--kill-on-bad-exit),
and slurmstepd then writes a `*** STEP ... CANCELLED` line of its own: that is srun's clean-up, not a
cancel. A cancel, a time limit, a preemption or a requeue is Slurm's doing, and slurmstepd says so for
the whole job: `*** JOB 7 ON n1 CANCELLED AT ... [DUE TO TIME LIMIT|PREEMPTION|JOB REQUEUE] ***`.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Iterable
from dataclasses import dataclass

from slurm.hostlist import BadHostlist, collect_hostlist, expand_hostlist

_TASK_END = re.compile(r"^srun: error: (?P<host>[^:\s]+): tasks? (?P<tasks>[\d,\-]+): (?P<how>.+?)\s*$")
_TEARDOWN = re.compile(
    r"_step_signal: Terminating|Job step aborted|forcing job termination|\*\*\* (STEP|JOB) \S+ ON \S+ CANCELLED"
)
_SRUN_ENDS_STEP = re.compile(r"^srun: .*(?:_step_signal: Terminating|Force Terminated) StepId=(?P<step>\S+)")
_CANCELLED = re.compile(
    r"\*\*\* (?P<what>STEP|JOB) (?P<id>\S+) ON (?P<host>\S+) CANCELLED AT (?P<at>\S+)"
    r"(?: DUE TO (?P<why>[^*]+?))? \*\*\*"
)


@dataclass(frozen=True, slots=True)
class TaskEnd:
    """One task's bad end as srun reported it."""

    task: int
    host: str
    how: str
    """srun's words: 'Killed', 'Terminated', 'Exited with exit code 1', 'Segmentation fault', ..."""
    before_teardown: bool
    """srun reported it before it began ending the step: a cause, not a consequence."""
    order: int
    """Position among srun's reports (0 first)."""


@dataclass(frozen=True, slots=True)
class StepEvidence:
    task_ends: dict[int, TaskEnd]
    """Task (rank) -> its first reported end."""
    cancelled: str
    """Slurm's cancel of the job, from slurmstepd's line, with its reason ('cancelled at T due to time limit',
    'due to job requeue', ...), or ''. A step cancelled by srun's own clean-up is not one (srun_ended_step)."""
    srun_ended_step: str = ""
    """srun's own words when it ended the step itself ('Terminating StepId=15.0'), before any cancel of
    the job by Slurm: --kill-on-bad-exit after a task exited badly; '' when it did not."""

    def bad_exits(self) -> list[TaskEnd]:
        """The task ends srun reported before it began ending the step: what made it end the step."""
        return sorted((end for end in self.task_ends.values() if end.before_teardown), key=lambda end: end.order)


def _task_numbers(spec: str) -> list[int]:
    numbers: list[int] = []
    for part in spec.split(","):
        low, _, high = part.partition("-")
        if low.isdigit() and (not high or high.isdigit()):
            numbers += range(int(low), int(high or low) + 1)
    return numbers


def read_step_messages(lines: Iterable[str]) -> StepEvidence:
    """srun's task ends and slurmstepd's cancel notice from the batch script's stderr."""
    ends: dict[int, TaskEnd] = {}
    torn_down = False
    cancelled = srun_ended = ""
    order = 0
    for raw in lines:
        line = raw.rstrip("\n")
        if not line.startswith(("srun:", "slurmstepd")):
            continue
        match = _TASK_END.match(line)
        if match:
            for task in _task_numbers(match.group("tasks")):
                if task not in ends:
                    ends[task] = TaskEnd(task, match.group("host"), match.group("how"), not torn_down, order)
            order += 1
            continue
        srun_ends = _SRUN_ENDS_STEP.search(line)
        if srun_ends and not (srun_ended or cancelled):
            srun_ended = f"Terminating StepId={srun_ends.group('step')}"
        stop = _CANCELLED.search(line)
        if stop and not cancelled and _slurm_cancel(stop, srun_ended):
            why = stop.group("why")
            cancelled = f"cancelled at {stop.group('at')}" + (f" due to {why.strip().lower()}" if why else "")
        if _TEARDOWN.search(line):
            torn_down = True
    return StepEvidence(task_ends=ends, cancelled=cancelled, srun_ended_step=srun_ended)


def _slurm_cancel(line: re.Match[str], srun_ended: str) -> bool:
    """A cancel line that is Slurm's: the whole job's, one with a reason, or a step's that srun did not end."""
    return line.group("what") == "JOB" or bool(line.group("why")) or not srun_ended


def signal_of(how: str) -> str:
    """srun's words for a task's end -> the signal or exit it means, for people ('Killed' -> 'SIGKILL')."""
    words = {
        "Killed": "SIGKILL",
        "Terminated": "SIGTERM",
        "Segmentation fault": "SIGSEGV",
        "Aborted": "SIGABRT",
        "Bus error": "SIGBUS",
        "Out Of Memory": "out of memory",
    }
    for word, meaning in words.items():
        if how.startswith(word):
            return meaning
    return how


# --------------------------------------------------------------------------------------------- nodes

BAD_NODE_STATES = ("DOWN", "FAIL", "NOT_RESPONDING", "POWERED_DOWN", "POWERING_DOWN", "REBOOT")
OUT_OF_SERVICE_STATES = ("drain", "down", "fail")
"""sinfo's long state words of a node no job is given: drained, draining, down, fail, failing."""
STATE_FLAGS = "*~#!%$@^-"
"""What sinfo appends to a state word: * not responding, ~ powered off, # powering up, ..."""


@dataclass(frozen=True, slots=True)
class NodeState:
    node: str
    state: str
    """sinfo's long state, such as 'idle', 'down*', 'mixed*' (a trailing * means not responding)."""
    reason: str
    """The reason set with the state ('' when none)."""

    @property
    def unhealthy(self) -> bool:
        upper = self.state.upper()
        return upper.endswith("*") or any(word in upper for word in BAD_NODE_STATES)

    @property
    def words(self) -> str:
        """The state without sinfo's flags: 'drained' for 'drained*'."""
        return self.state.rstrip(STATE_FLAGS)

    @property
    def out_of_service(self) -> bool:
        """Drained, draining, down or failed: Slurm gives it no new job."""
        return any(self.words.lower().startswith(word) for word in OUT_OF_SERVICE_STATES)

    def describe(self) -> str:
        words = self.state.rstrip("*")
        responding = " and not responding" if self.state.endswith("*") else ""
        why = f" ({self.reason})" if self.reason else ""
        return f"{words}{responding}{why}"


def sinfo_argv(nodes: Iterable[str]) -> list[str]:
    """Each node's state and reason, a line each (a node once per partition it is in)."""
    return ["sinfo", "-h", "-N", "-n", collect_hostlist(nodes), "-o", "%N|%T|%E"]


def parse_node_states(text: str) -> list[NodeState]:
    """`sinfo -h -N -o '%N|%T|%E'` output -> one NodeState per line; a reason keeps any '|' of its own, and
    sinfo's 'none' is ''."""
    states = []
    for line in text.splitlines():
        parts = line.strip().split("|", 2)
        if len(parts) >= 2 and parts[0]:
            reason = parts[2].strip() if len(parts) > 2 else ""
            states.append(NodeState(parts[0], parts[1].strip(), "" if reason == "none" else reason))
    return states


def nodes_of(hostlist: str) -> list[str]:
    try:
        return expand_hostlist(hostlist) if hostlist else []
    except BadHostlist:
        return []


def slurmd_answers(address: str, port: int, timeout_s: float = 2.0) -> bool:
    """Whether a node's slurmd accepts a TCP connection: the controller's own test of a node, from here."""
    try:
        with socket.create_connection((address, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def parse_node_addresses(text: str) -> dict[str, str]:
    """`scontrol -o show node` lines -> node name -> NodeAddr."""
    found = {}
    for line in text.splitlines():
        name = re.search(r"\bNodeName=(\S+)", line)
        addr = re.search(r"\bNodeAddr=(\S+)", line)
        if name and addr:
            found[name.group(1)] = addr.group(1)
    return found
