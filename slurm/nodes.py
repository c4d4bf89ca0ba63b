"""Nodes as Slurm holds them: each node's state and reason (sinfo), and the scontrol lines that drain and
resume them and hold them in a maintenance reservation while they are checked again. Each line is built
apart from running it, so a dry run prints exactly what would run. No torch."""

from __future__ import annotations

import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from slurm.hostlist import collect_hostlist

QUERY_TIMEOUT_S = 20.0
HELD_STATES = ("drain", "down", "fail")
"""sinfo's long state words of a node no job is given: drained, draining, down, fail, failing."""


@dataclass(frozen=True, slots=True)
class NodeState:
    host: str
    state: str
    """sinfo's long state (idle, mixed, allocated, drained, draining, down, ...), '*' and '~' flags removed."""
    reason: str
    """The reason set with the state ('' when none)."""

    @property
    def held(self) -> bool:
        """Drained, draining, down or failed: Slurm gives it no new job."""
        return any(self.state.startswith(word) for word in HELD_STATES)


class NodesUnavailable(RuntimeError):
    """sinfo or scontrol did not answer: Slurm's words."""


def sinfo_argv(hosts: Sequence[str]) -> list[str]:
    return ["sinfo", "-h", "-N", "-n", collect_hostlist(hosts), "-o", "%N|%T|%E"]


def parse_sinfo(text: str) -> dict[str, NodeState]:
    """sinfo -N's `%N|%T|%E` lines (a node once per partition) -> host -> its state and reason."""
    states: dict[str, NodeState] = {}
    for line in text.splitlines():
        host, _, rest = line.partition("|")
        state, _, reason = rest.partition("|")
        if host and state:
            reason = "" if reason.strip() == "none" else reason.strip()
            states[host] = NodeState(host, state.strip().rstrip("*~#!%$@^-"), reason)
    return states


def node_states(hosts: Sequence[str]) -> dict[str, NodeState]:
    """Each host's state and reason as Slurm has them now; a host Slurm does not know is absent."""
    if not hosts:
        return {}
    done = _run(sinfo_argv(hosts))
    if done.returncode != 0:
        raise NodesUnavailable(f"sinfo failed: {_words(done)}")
    return parse_sinfo(done.stdout)


def drain_argv(hosts: Iterable[str], reason: str) -> list[str]:
    return ["scontrol", "update", f"NodeName={collect_hostlist(hosts)}", "State=DRAIN", f"Reason={reason}"]


def resume_argv(hosts: Iterable[str]) -> list[str]:
    return ["scontrol", "update", f"NodeName={collect_hostlist(hosts)}", "State=RESUME"]


def reservation_argv(name: str, hosts: Iterable[str], user: str, minutes: int) -> list[str]:
    """A maintenance reservation of `hosts` for `user` alone, from now: a node resumed into it takes no user's
    job, so it can be checked again before it is handed back. IGNORE_JOBS: a node still draining holds one."""
    return [
        "scontrol", "create", "reservation", f"ReservationName={name}", f"Nodes={collect_hostlist(hosts)}",
        "StartTime=now", f"Duration={minutes}", f"Users={user}", "Flags=MAINT,IGNORE_JOBS",
    ]  # fmt: skip


def release_argv(name: str) -> list[str]:
    return ["scontrol", "delete", f"ReservationName={name}"]


def run_scontrol(argv: Sequence[str]) -> str:
    """Run one scontrol line: '' when done, else scontrol's words (no rights: 'Invalid user id')."""
    done = _run(list(argv))
    return "" if done.returncode == 0 else _words(done)


def _words(done: subprocess.CompletedProcess[str]) -> str:
    text = (done.stderr or done.stdout).strip().splitlines()
    return text[-1] if text else f"exit status {done.returncode}"


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=QUERY_TIMEOUT_S, check=False)
    except FileNotFoundError:
        return subprocess.CompletedProcess(argv, 127, "", f"{argv[0]}: command not found")
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(argv, 124, "", f"{argv[0]} did not answer within {QUERY_TIMEOUT_S:g} s")
