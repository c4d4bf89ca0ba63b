"""How long the process group took to set up on each rank (NCCL: the communicator, created eagerly),
from the ranks' status files. At thousands of ranks this takes seconds to minutes, and the rank that
arrived last holds every other rank up: both are named. Then the ranks' first collective, where NCCL
(since 2.22) makes the connections the set-up left out."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
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
    found = SetupTime(
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
    return _with_first_collective(found, timed)


def _with_first_collective(found: SetupTime, timed: Mapping[int, tuple[SetupSpan, str]]) -> SetupTime:
    """The connect_* figures over the ranks that recorded their first collective (connect_s > 0)."""
    connected = {rank: (setup.connect_s, host) for rank, (setup, host) in timed.items() if setup.connect_s > 0}
    if not connected:
        return found
    slowest = max(connected, key=lambda rank: (connected[rank][0], -rank))
    return replace(
        found,
        connect_ranks=len(connected),
        connect_slowest_rank=slowest,
        connect_slowest_host=connected[slowest][1],
        connect_slowest_s=connected[slowest][0],
        connect_median_s=float(median(seconds for seconds, _ in connected.values())),
    )
