"""How long the process group took to set up on each rank (NCCL: the communicator, created eagerly),
from the ranks' status files. At thousands of ranks this takes seconds to minutes, and the rank that
arrived last holds every other rank up: both are named."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from statistics import median
from typing import Any


@dataclass(frozen=True, slots=True)
class SetupTime:
    ranks: int
    """Ranks that recorded their set-up."""
    slowest_rank: int
    slowest_host: str
    slowest_s: float
    median_s: float
    last_arrival_rank: int
    """The rank that entered the set-up last: the others waited for it."""
    last_arrival_host: str
    arrival_spread_s: float
    """How long after the first rank the last one entered the set-up."""
    after_all_arrived_s: float
    """From the last rank's arrival to the last rank's completion: the set-up itself."""

    def describe(self, backend: str) -> str:
        what = "NCCL communicator, created eagerly" if backend == "nccl" else f"{backend} process group"
        return (
            f"set-up ({what}): slowest rank {self.slowest_rank} on {self.slowest_host} {self.slowest_s:.3f} s, "
            f"median {self.median_s:.3f} s over {self.ranks} rank(s); last to arrive rank {self.last_arrival_rank} "
            f"on {self.last_arrival_host}, {self.arrival_spread_s:.3f} s after the first; "
            f"{self.after_all_arrived_s:.3f} s from its arrival to the last rank ready"
        )


def setup_time(statuses: Mapping[int, Mapping[str, Any]]) -> SetupTime | None:
    """None when no rank recorded its set-up (it never got that far, or the run predates the record)."""
    timed = {rank: (s["setup"], str(s.get("host", "?"))) for rank, s in statuses.items() if _valid(s.get("setup"))}
    if not timed:
        return None
    slowest = max(timed, key=lambda rank: (timed[rank][0]["seconds"], -rank))
    last = max(timed, key=lambda rank: (timed[rank][0]["started"], -rank))
    first_start = min(setup["started"] for setup, _ in timed.values())
    last_done = max(setup["done"] for setup, _ in timed.values())
    last_start = timed[last][0]["started"]
    return SetupTime(
        ranks=len(timed),
        slowest_rank=slowest,
        slowest_host=timed[slowest][1],
        slowest_s=float(timed[slowest][0]["seconds"]),
        median_s=float(median(setup["seconds"] for setup, _ in timed.values())),
        last_arrival_rank=last,
        last_arrival_host=timed[last][1],
        arrival_spread_s=float(last_start - first_start),
        after_all_arrived_s=float(max(0.0, last_done - last_start)),
    )


def _valid(setup: object) -> bool:
    return isinstance(setup, Mapping) and all(
        isinstance(setup.get(key), (int, float)) for key in ("started", "done", "seconds")
    )
