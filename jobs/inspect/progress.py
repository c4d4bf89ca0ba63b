"""How far each rank has got, from its heartbeat file alone, and which ranks are behind the rest."""

from __future__ import annotations

import time
from dataclasses import dataclass

from collectives.results import placement_name
from jobs.rundir.layout import RunDir
from jobs.rundir.records.codec import RecordError
from jobs.rundir.records.rank import HEARTBEAT, Beat, HeartbeatPhase


@dataclass(frozen=True, slots=True)
class RankProgress:
    rank: int
    host: str
    phase: str
    """init, start, end or done (the heartbeat's HeartbeatPhase); 'none' when the rank never wrote a readable one."""
    position: int
    """Comparable progress: -1 at init, 2i when starting measurement i, 2i+1 once it ended."""
    at: float
    where: str
    """The last (op, size, placement) reached, in words."""
    total: int = 0
    """Measurements in this rank's sweep (0 before its first heartbeat with a position)."""

    @property
    def completed(self) -> int:
        """Measurements this rank has finished."""
        if self.phase == "done":
            return self.total
        return max(0, (self.position + 1) // 2)


def read_progress(run: RunDir, world_size: int, hosts: dict[int, str] | None = None) -> list[RankProgress]:
    found = []
    for rank in range(world_size):
        try:
            beat = HEARTBEAT.read(run.rank_heartbeat(rank))
        except FileNotFoundError:
            found.append(_no_beat(rank, hosts, "no heartbeat yet"))
        except (OSError, RecordError) as error:
            found.append(_no_beat(rank, hosts, f"heartbeat unreadable: {error}"))
        else:
            found.append(progress_of(beat))
    return found


def _no_beat(rank: int, hosts: dict[int, str] | None, why: str) -> RankProgress:
    return RankProgress(rank, (hosts or {}).get(rank, "?"), "none", -2, 0.0, why)


def progress_of(beat: Beat) -> RankProgress:
    if beat.phase in (HeartbeatPhase.START, HeartbeatPhase.END):
        position = 2 * beat.index + (beat.phase is HeartbeatPhase.END)
        root = f" root {beat.root}" if beat.root >= 0 else ""
        where = (
            f"{'in' if beat.phase is HeartbeatPhase.START else 'done with'} {beat.op} {beat.size} B "
            f"{placement_name(beat.in_place)}{root} ({beat.index + 1}/{beat.total})"
        )
    elif beat.phase is HeartbeatPhase.DONE:
        position, where = 1 << 62, "finished its sweep"
    else:
        position, where = -1, "initialising (rendezvous, before the first measurement)"
    return RankProgress(beat.rank, beat.host, beat.phase.value, position, beat.at, where, beat.total)


def behind(progress: list[RankProgress]) -> list[RankProgress]:
    """Ranks that have not reached the furthest point any rank has reached."""
    if not progress:
        return []
    front = max(p.position for p in progress)
    return [p for p in progress if p.position < front]


def describe_age(at: float, now: float | None = None) -> str:
    if at <= 0:
        return "-"
    seconds = (now or time.time()) - at
    return f"{seconds:.1f} s ago" if seconds < 120 else f"{seconds / 60:.1f} min ago"
