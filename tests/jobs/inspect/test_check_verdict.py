"""collbench check's reading of how ranks ended: a node whose ranks stayed silent while most other nodes'
ranks gave up waiting is named hung; nothing is blamed so when a rank failed on its own or most went silent."""

from __future__ import annotations

from pathlib import Path

from jobs.inspect.check_verdict import assess_check, silent_nodes
from jobs.inspect.postmortem import RankEnd
from jobs.inspect.report import assess
from tests.jobs.history.fabric_runs import rail_isolate_run

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


def test_the_verdict_says_where_the_expected_level_came_from() -> None:
    from jobs.inspect.check_verdict import CheckOutcome, verdict_lines
    from jobs.isolate.check_judge import check_verdict
    from jobs.isolate.verdict import Measured

    hosts = ["n1", "n2", "n3", "n4"]
    measured = [Measured(1, (0, 1, 2, 3), 9.0), Measured(2, (0, 1), 10.0), Measured(2, (2, 3), 10.0)]
    verdict = check_verdict(hosts, measured, {}, tolerance=0.15, expected_busbw=10.0)
    source = "the median of the last 3 healthy 2-node all_reduce runs at 1048576 B on prod in the history"
    lines = verdict_lines(CheckOutcome("r", verdict, 2, [], level_from=source), 5.0, 60.0)
    assert f"# pairs judged against a healthy level of 10.000 GB/s ({source})" in lines
    plain = verdict_lines(CheckOutcome("r", verdict, 2, []), 5.0, 60.0)
    assert "# pairs judged against a healthy level of 10.000 GB/s" in plain


def test_a_check_is_judged_as_it_ran_its_confirming_round_or_as_an_older_plan_ran_none(tmp_path: Path) -> None:
    """n3 slow on both rails: a check measures it again and cordons it; a check of a plan.json before format 4
    measured nothing again, and its verdict on re-reading is still the cordon it gave, not inconclusive."""
    for old_plan in (False, True):
        run = rail_isolate_run(tmp_path / str(old_plan), lambda pair, rail: 2 in pair, check=True, old_plan=old_plan)
        check = assess_check(run, assess(run))
        assert [node.host for node in check.verdict.cordoned] == ["n3"], (old_plan, check.verdict)
        assert check.rounds == (3 if old_plan else 4) and not check.verdict.inconclusive
