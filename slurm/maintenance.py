"""Node maintenance, run through Slurm: the drain and resume lines slurm.nodes builds, and a re-check's reservation of
its nodes (the nodes of a partition, idle partners for them, a maintenance reservation of them all with the
drained ones resumed into it, one command in an allocation of it, the reservation released). Slurm's refusal of
a line comes back as its words: the caller says what it leaves as it was. No torch."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from slurm import runner
from slurm.hostlist import collect_hostlist
from slurm.nodes import drain_argv, release_argv, reservation_argv, resume_argv
from slurm.runner import SlurmFailed, SlurmUnavailable


class Refused(RuntimeError):
    """Slurm refused a step of holding nodes for a re-check: which, and Slurm's words."""


def apply(argv: Sequence[str]) -> str:
    """Run one scontrol line: '' when done, else Slurm's words (no rights: 'Invalid user id'; or that Slurm
    is missing or did not answer)."""
    try:
        runner.run(argv)
    except SlurmFailed as error:
        return error.words
    except SlurmUnavailable as error:
        return str(error)
    return ""


def drain(hosts: Iterable[str], reason: str) -> str:
    """Drain `hosts` with `reason`: '' when done, else Slurm's words."""
    return apply(drain_argv(hosts, reason))


def partition_nodes(partition: str) -> list[str]:
    """Every node of `partition` ('' the default one), sorted; slurm.runner's errors when sinfo cannot say."""
    return sorted(set(runner.output(["sinfo", "-h", "-N", *_where(partition), "-o", "%N"]).split()))


def idle_nodes(partition: str, besides: Iterable[str], count: int) -> list[str]:
    """Up to `count` idle nodes of `partition`, none of `besides`, by name; [] when sinfo refuses."""
    try:
        said = runner.output(["sinfo", "-h", "-N", *_where(partition), "-t", "idle", "-o", "%N"])
    except SlurmFailed:
        return []
    return sorted(set(said.split()) - set(besides))[:count]


def _where(partition: str) -> list[str]:
    return ["-p", partition] if partition else []


@dataclass(frozen=True, slots=True)
class MaintenanceReservation:
    """A re-check's reservation: drained nodes resumed into a maintenance reservation of their own and their
    partners', named `name`, for `user` alone, for `minutes`."""

    targets: tuple[str, ...]
    partners: tuple[str, ...]
    name: str
    user: str
    minutes: int

    @property
    def hosts(self) -> list[str]:
        return [*self.targets, *self.partners]

    def lines(self) -> tuple[list[str], list[str], list[str]]:
        """The reservation, resume and release lines, in the order they run."""
        reserve = reservation_argv(self.name, self.hosts, self.user, self.minutes)
        return reserve, resume_argv(self.targets), release_argv(self.name)

    def allocation_argv(self, partition: str, minutes: int, immediate_s: int, command: Sequence[str]) -> list[str]:
        """salloc of every node of the reservation, running `command`; salloc gives up after
        `immediate_s` (a partner that turned busy since it was picked)."""
        where = [f"--partition={partition}"] if partition else []
        return [
            "salloc", f"--reservation={self.name}", *where, f"--nodelist={collect_hostlist(self.hosts)}",
            f"--nodes={len(self.hosts)}", f"--time={minutes}", f"--immediate={immediate_s}",
            "--job-name=collbench-recheck", *command,
        ]  # fmt: skip


@contextlib.contextmanager
def reserved(reservation: MaintenanceReservation) -> Iterator[None]:
    """The targets resumed into the reservation for the block, the reservation released after it whatever
    happens. Refused (nothing resumed, or nothing re-checked) when Slurm refuses the reservation or the resume."""
    reserve, resume, release = reservation.lines()
    error = apply(reserve)
    if error:
        raise Refused(f"the reservation was refused ({error}); nothing resumed")
    try:
        error = apply(resume)
        if error:
            raise Refused(f"Slurm refused the resume ({error}); nothing re-checked")
        yield
    finally:
        apply(release)


def run_in_allocation(argv: Sequence[str]) -> int:
    """salloc's line run, its command's output on this terminal: the command's exit status (salloc's own
    when it allocated nothing)."""
    return runner.attached(argv)
