"""collbench check's reading of how ranks ended: a node whose ranks stayed silent while most other nodes'
ranks gave up waiting is named hung; nothing is blamed so when a rank failed on its own or most went silent."""

from __future__ import annotations

from jobs.inspect.check import silent_nodes
from jobs.inspect.postmortem import RankEnd

TIMEOUT = "RuntimeError: Timed out waiting 6250ms for send operation to complete"


def ends(*kinds: str) -> list[RankEnd]:
    return [
        RankEnd(rank, f"n{rank + 3}", kind, kind, TIMEOUT if kind == "peer" else "stopped by SIGTERM")  # type: ignore[arg-type]
        for rank, kind in enumerate(kinds)
    ]


def test_the_one_silent_node_among_ranks_that_gave_up_is_named_hung() -> None:
    named = silent_nodes(ends("peer", "stopped", "peer", "peer"))
    assert list(named) == ["n4"] and named["n4"].startswith("rank 1 hung: it neither failed nor answered")


def test_nothing_is_named_hung_when_a_rank_failed_itself_or_most_went_silent() -> None:
    assert silent_nodes(ends("own", "stopped", "peer", "peer")) == {}
    assert silent_nodes(ends("peer", "stopped", "stopped", "peer")) == {}, "half silent: no telling"
    assert silent_nodes(ends("stopped", "stopped", "stopped", "stopped")) == {}, "a cancel: nobody noticed"
