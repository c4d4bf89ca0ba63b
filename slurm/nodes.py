"""Nodes as Slurm holds them: each node's state and reason (sinfo, read as slurm.evidence reads it), and the
scontrol lines that drain and resume them and hold them in a maintenance reservation while they are checked
again. Each line is built apart from running it, so a dry run prints exactly what would run
(slurm.maintenance runs them). No torch."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from slurm import runner
from slurm.evidence import NodeState, parse_node_states, sinfo_argv
from slurm.hostlist import collect_hostlist


def node_states(hosts: Sequence[str]) -> dict[str, NodeState]:
    """Each host's state and reason as Slurm has them now (one sinfo); a host Slurm does not know is absent.
    slurm.runner's errors: SlurmFailed when sinfo refuses, SlurmUnavailable when Slurm is missing or silent."""
    if not hosts:
        return {}
    return {state.node: state for state in parse_node_states(runner.output(sinfo_argv(hosts)))}


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
