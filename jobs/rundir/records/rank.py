"""A rank's own records: status/rank-N.json (how it is, or how it ended) and heartbeat/rank-N.json
(how far it has got), written by the rank itself, read by status, wait, report and the postmortem."""

from __future__ import annotations

from dataclasses import dataclass, field

from jobs.rundir.records.codec import Format, Plain
from jobs.rundir.records.kinds import Word


class RankState(Word):
    """A rank's state in its status file. The first end recorded stands."""

    RUNNING = "running"
    OK = "ok"
    """Finished its sweep."""
    FAILED = "failed"
    """Raised an error (with it and its traceback)."""
    STOPPED = "stopped"
    """Ended by a signal: cancelled, preempted, out of time."""


@dataclass(frozen=True, slots=True)
class SetupSpan:
    """The process group's set-up on one rank (NCCL: the communicator, created eagerly)."""

    started: float
    """Epoch seconds when the rank entered init_process_group."""
    done: float
    seconds: float
    connect_s: float = 0.0
    """The rank's first collective after the set-up (a 1-element all_reduce, to its end on the device):
    since NCCL 2.22 the communicator makes its connections there, not in the set-up; on gloo the first
    call's own cost. 0.0: not recorded (the rank failed before it, or a status of format 3 or older)."""


@dataclass(frozen=True, slots=True)
class SignalNotice:
    """Slurm's warning before a time limit or a preemption: the rank went on."""

    signal: str
    at: float


class SetupProbe(Word):
    """What a rank found at the rendezvous address once its process group set-up had failed."""

    UNRESOLVED = "unresolved"
    """The name does not resolve."""
    UNREACHABLE = "unreachable"
    """No route to the address (or the network is unreachable)."""
    REFUSED = "refused"
    """The host answers, but nothing listens on the port."""
    SILENT = "silent"
    """No answer at all within the probe's wait: a firewall dropping the packets, or a host that is down."""
    ANSWERS = "answers"
    """The rendezvous answers (or is this rank's own store): the set-up waited for ranks that never came."""


@dataclass(frozen=True, slots=True)
class SetupFailure:
    """A rank's process group set-up that failed (init_process_group): where it tried to meet the others."""

    address: str
    """The rendezvous address it was given (rendezvous.master_addr, or the job's first node)."""
    port: int
    probe: SetupProbe
    detail: str
    """The probe's own words: the resolver's or the socket's error, or what the address resolved to."""


STATUS_VERSION = 4


@dataclass(kw_only=True, slots=True)
class RankStatus:
    """status/rank-N.json."""

    rank: int
    host: str
    pid: int
    device: str
    """cpu, cuda:N, or ? when the rank failed before it knew."""
    state: RankState
    started: float
    updated: float
    local_rank: int = -1
    node_rank: int = -1
    job_id: str = ""
    master_addr: str = ""
    master_port: int = 0
    addresses: list[str] = field(default_factory=list)
    """The addresses the host's name resolves to: what a peer's error names it by."""
    attempt: int = 0
    """SLURM_RESTART_COUNT: the attempt of the job this rank belongs to."""
    setup: SetupSpan | None = None
    setup_failure: SetupFailure | None = None
    """Set when the rank failed in its process group set-up: its error is a set-up error, not a lost peer."""
    signals: list[SignalNotice] = field(default_factory=list)
    rows: int = 0
    """Results written (state ok)."""
    failed_at: float = 0.0
    stopped_at: float = 0.0
    signal: str = ""
    """The signal that stopped it (state stopped)."""
    error: str = ""
    traceback: str = ""
    version: int = STATUS_VERSION
    """The format of this file."""

    @property
    def ended_at(self) -> float:
        return self.failed_at or self.stopped_at


def _status_from_v1(plain: Plain) -> Plain:
    """Format 1 had the same fields with no version; a job id may be a number or null."""
    plain["job_id"] = "" if plain.get("job_id") is None else str(plain["job_id"])
    if not isinstance(plain.get("setup"), dict):
        plain.pop("setup", None)
    return plain


def _status_from_v2(plain: Plain) -> Plain:
    """Format 3 added setup_failure; a format 2 file never recorded one."""
    return plain


def _status_from_v3(plain: Plain) -> Plain:
    """Format 4 added setup.connect_s; a format 3 file never recorded it (read as 0.0, not recorded)."""
    return plain


STATUS = Format(
    "status/rank-N.json",
    RankStatus,
    STATUS_VERSION,
    {1: _status_from_v1, 2: _status_from_v2, 3: _status_from_v3},
)


class HeartbeatPhase(Word):
    """Where a rank is, by its heartbeat."""

    INIT = "init"
    """Rendezvous, before the first measurement."""
    START = "start"
    """Started measurement `index`."""
    END = "end"
    """Finished measurement `index`."""
    DONE = "done"
    """Finished its sweep."""


BEAT_VERSION = 2


@dataclass(kw_only=True, slots=True)
class Beat:
    """heartbeat/rank-N.json."""

    rank: int
    host: str
    phase: HeartbeatPhase
    at: float
    """Epoch seconds of the beat."""
    total: int = 0
    """Measurements in the rank's sweep (0 before the first)."""
    index: int = 0
    """The measurement started or ended (phases start and end)."""
    op: str = ""
    size: int = 0
    root: int = -1
    in_place: bool = False
    version: int = BEAT_VERSION
    """The format of this file."""


def _beat_from_v1(plain: Plain) -> Plain:
    return plain


HEARTBEAT = Format("heartbeat/rank-N.json", Beat, BEAT_VERSION, {1: _beat_from_v1})
