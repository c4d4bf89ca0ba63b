"""The set-up line names the slowest rank and the one that arrived last, from the ranks' status files."""

from __future__ import annotations

import pytest

from jobs.inspect.setup_time import setup_time
from jobs.rundir.records.rank import RankState, RankStatus, SetupSpan


def status(host: str, started: float | None = None, done: float = 0.0) -> RankStatus:
    setup = None if started is None else SetupSpan(started=started, done=done, seconds=done - started)
    return RankStatus(rank=0, host=host, pid=1, device="cpu", state=RankState.OK, started=0, updated=0, setup=setup)


def test_the_slowest_rank_and_the_last_to_arrive_are_named() -> None:
    found = setup_time({
        0: status("n1", 100.0, 109.0),  # first in, waited 9 s for the others
        1: status("n1", 101.0, 109.0),
        2: status("n2", 107.0, 109.5),  # last in: everyone waited for it
    })  # fmt: skip
    assert found is not None
    assert (found.slowest_rank, found.slowest_host, found.slowest_s) == (0, "n1", 9.0)
    assert (found.last_arrival_rank, found.last_arrival_host) == (2, "n2")
    assert found.arrival_spread_s == 7.0
    assert found.after_all_arrived_s == pytest.approx(2.5)
    assert found.median_s == 8.0 and found.ranks == 3
    text = found.describe("nccl")
    assert text.startswith("set-up (NCCL communicator, created eagerly): slowest rank 0 on n1 9.000 s")
    assert "last to arrive rank 2 on n2, 7.000 s after the first" in text


def test_ranks_without_a_set_up_record_are_left_out_and_none_at_all_is_none() -> None:
    assert setup_time({0: status("n1"), 1: status("n2")}) is None
    found = setup_time({0: status("n1"), 1: status("n2", 5.0, 6.0)})
    assert found is not None and (found.ranks, found.slowest_rank) == (1, 1)


def connected(host: str, rank: int, connect_s: float) -> RankStatus:
    setup = SetupSpan(started=10.0, done=11.0, seconds=1.0, connect_s=connect_s)
    return RankStatus(
        rank=rank, host=host, pid=1, device="cuda:0", state=RankState.OK, started=0, updated=0, setup=setup
    )


def test_the_first_collective_names_its_slowest_rank_and_the_median() -> None:
    found = setup_time({0: connected("n1", 0, 0.2), 1: connected("n1", 1, 0.4), 3: connected("n2", 3, 0.812)})
    assert found is not None
    assert (found.connect_ranks, found.connect_slowest_rank, found.connect_slowest_host) == (3, 3, "n2")
    assert (found.connect_slowest_s, found.connect_median_s) == (0.812, 0.4)
    assert found.describe("nccl").endswith(
        "; first collective (NCCL's connections) slowest rank 3 on n2 0.812 s, median 0.400 s"
    )
    assert found.describe("gloo").endswith("; first collective slowest rank 3 on n2 0.812 s, median 0.400 s")


def test_ranks_that_never_timed_a_first_collective_are_left_out_of_its_figures() -> None:
    found = setup_time({0: connected("n1", 0, 0.0), 1: connected("n2", 1, 0.3), 2: connected("n2", 2, 0.0)})
    assert found is not None and found.ranks == 3
    assert (found.connect_ranks, found.connect_slowest_rank, found.connect_median_s) == (1, 1, 0.3)
    assert found.describe("nccl").endswith("median 0.300 s over 1 rank(s)")


def test_a_first_collective_under_a_tenth_of_a_second_reads_in_milliseconds() -> None:
    found = setup_time({0: connected("vm", 0, 0.000393), 1: connected("vm", 1, 0.05)})
    assert found is not None
    assert found.describe("gloo").endswith("; first collective slowest rank 1 on vm 50 ms, median 25.2 ms")


def test_no_first_collective_at_all_leaves_the_set_up_line_as_it_was() -> None:
    found = setup_time({0: status("n1", 5.0, 6.0)})
    assert found is not None and found.connect_ranks == 0 and found.connect_slowest_rank == -1
    assert "first collective" not in found.describe("nccl")
    assert found.describe("nccl").endswith("to the last rank ready")
