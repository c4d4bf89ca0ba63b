"""How far each rank has got, from its heartbeat file alone, and which ranks are behind the rest."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from collectives.results import placement_name
from jobs.rundir.layout import RunDir, read_json


@dataclass(frozen=True, slots=True)
class RankProgress:
    rank: int
    host: str
    phase: str
    """init, start, end or done; 'none' when the rank never wrote a heartbeat."""
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
        path = run.rank_heartbeat(rank)
        try:
            beat = read_json(path)
        except (OSError, ValueError):
            host = (hosts or {}).get(rank, "?")
            found.append(RankProgress(rank, host, "none", -2, 0.0, "no heartbeat yet"))
            continue
        found.append(_progress(rank, beat))
    return found


def _progress(rank: int, beat: dict[str, Any]) -> RankProgress:
    phase = str(beat["phase"])
    if phase in ("start", "end"):
        position = 2 * int(beat["index"]) + (phase == "end")
        placement = placement_name(bool(beat.get("in_place")))
        root = f" root {beat['root']}" if int(beat.get("root", -1)) >= 0 else ""
        where = (
            f"{'in' if phase == 'start' else 'done with'} {beat['op']} {beat['size']} B {placement}{root} "
            f"({int(beat['index']) + 1}/{beat['total']})"
        )
    elif phase == "done":
        position, where = 1 << 62, "finished its sweep"
    else:
        position, where = -1, "initialising (rendezvous, before the first measurement)"
    total = int(beat.get("total", 0))
    return RankProgress(rank, str(beat.get("host", "?")), phase, position, float(beat["at"]), where, total)


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
