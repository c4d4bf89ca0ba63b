"""Nodes as Slurm holds them: each node's state and reason (sinfo, read as slurm.evidence reads it), and the
scontrol lines that drain and resume them and hold them in a maintenance reservation while they are checked
again. Each line is built apart from running it, so a dry run prints exactly what would run. No torch."""

from __future__ import annotations

import subprocess
from collections.abc import Iterable, Sequence

from slurm.evidence import NodeState, parse_node_states, sinfo_argv
from slurm.hostlist import collect_hostlist

QUERY_TIMEOUT_S = 20.0


class NodesUnavailable(RuntimeError):
    """sinfo or scontrol did not answer: Slurm's words."""


def node_states(hosts: Sequence[str]) -> dict[str, NodeState]:
    """Each host's state and reason as Slurm has them now; a host Slurm does not know is absent."""
    if not hosts:
        return {}
    done = _run(sinfo_argv(hosts))
    if done.returncode != 0:
        raise NodesUnavailable(f"sinfo failed: {_words(done)}")
    return {state.node: state for state in parse_node_states(done.stdout)}


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
