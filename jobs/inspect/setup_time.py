"""How long the process group took to set up on each rank (NCCL: the communicator, created eagerly),
from the ranks' status files. At thousands of ranks this takes seconds to minutes, and the rank that
arrived last holds every other rank up: both are named."""

from __future__ import annotations

from collections.abc import Mapping
from statistics import median

from jobs.rundir.records.rank import RankStatus, SetupSpan
from jobs.rundir.records.summary import SetupTime

__all__ = ["SetupTime", "setup_time"]


def setup_time(statuses: Mapping[int, RankStatus]) -> SetupTime | None:
    """None when no rank recorded its set-up (it never got that far, or the run predates the record)."""
    timed: dict[int, tuple[SetupSpan, str]] = {
        rank: (status.setup, status.host) for rank, status in statuses.items() if status.setup is not None
    }
    if not timed:
        return None
    slowest = max(timed, key=lambda rank: (timed[rank][0].seconds, -rank))
    last = max(timed, key=lambda rank: (timed[rank][0].started, -rank))
    first_start = min(setup.started for setup, _ in timed.values())
    last_done = max(setup.done for setup, _ in timed.values())
    last_start = timed[last][0].started
    return SetupTime(
        ranks=len(timed),
        slowest_rank=slowest,
        slowest_host=timed[slowest][1],
        slowest_s=timed[slowest][0].seconds,
        median_s=float(median(setup.seconds for setup, _ in timed.values())),
        last_arrival_rank=last,
        last_arrival_host=timed[last][1],
        arrival_spread_s=last_start - first_start,
        after_all_arrived_s=max(0.0, last_done - last_start),
    )
