"""The isolate verdict as a user reads it, from figures alone: the rounds replayed, the text, isolate.json's
plain form; and the command's refusals of bad input (exit 2, one line, nothing submitted)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from jobs.cli.main import main
from jobs.config.isolate_settings import IsolateSettings
from jobs.inspect.grain_lines import Grains
from jobs.inspect.isolate_text import lines
from jobs.inspect.isolate_verdict import IsolateOutcome, StoppedNode, matrix_rows, to_plain
from jobs.isolate.grains import judge_fabric
from jobs.isolate.plan import pairs_plan
from jobs.isolate.rounds import GroupKey, Rounds, replay
from jobs.isolate.verdict import judge

HOSTS = [f"n{i}" for i in range(1, 7)]
SLOW_LINK = (1, 4)  # n2-n5


def figures(rounds: int | None = None, lost: tuple[int, int] | None = None) -> dict[GroupKey, float]:
    """Every group's figure of the six-node pairs plan (n2-n5 slow) up to `rounds`; `lost` (round, node):
    that node's group of that round has none."""
    plan = pairs_plan(len(HOSTS))[:rounds]
    found: dict[GroupKey, float] = {
        (number, group, -1): 0.01 if group == SLOW_LINK else 1.0 + 0.01 * number
        for number, groups in enumerate(plan, start=1)
        for group in groups
        if lost is None or number != lost[0] or lost[1] not in group
    }
    if rounds is None:  # the slow pair measured again (jobs.isolate.confirm), slow again
        found[(len(plan) + 1, SLOW_LINK, -1)] = 0.01
    return found


def outcome(rounds: Rounds, stopped: list[StoppedNode] | None = None) -> IsolateOutcome:
    verdict = judge(rounds.measured, 0.15, 0.0) if rounds.measured else None
    return IsolateOutcome("RUN", HOSTS, rounds, verdict, stopped or [], [], [0.5] * rounds.round_no)


def test_the_plain_verdict_names_hosts_not_node_indices() -> None:
    iso = outcome(replay(IsolateSettings(), HOSTS, figures()))
    plain = to_plain(iso)
    assert plain["bad_nodes"] == [] and [link["nodes"] for link in plain["bad_links"]] == [["n2", "n5"]]
    assert plain["bad_links"][0]["busbw"] == pytest.approx(0.01)
    assert {tuple(r["nodes"]) for r in plain["rounds"]} >= {("n2", "n5")} and len(plain["rounds"]) == 16
    assert all(isinstance(host, str) for row in plain["matrix"] for host in row[:2])
    assert plain["exclude"] == "" and iso.exit_code == 1
    text = "\n".join(lines(iso, "all_reduce", [1 << 30]))
    assert "mode pairs, 6 nodes, 6 round(s) measured, 3.0 s of rounds" in text
    assert "BAD LINK n2-n5: busbw 0.010 GB/s" in text and "BAD NODE" not in text
    assert matrix_rows(iso)[0][1:] == HOSTS and matrix_rows(iso)[2][5] == "0.01"


def test_a_round_cut_short_keeps_the_groups_that_finished_and_names_the_rest() -> None:
    settings = IsolateSettings()
    rounds = replay(settings, HOSTS, figures(rounds=2, lost=(2, 0)))
    assert rounds.round_no == 2 and [len(g) for g in rounds.unfinished] == [2]
    assert sum(m.round == 2 for m in rounds.measured) == 2 and sum(m.round == 1 for m in rounds.measured) == 3
    iso = outcome(rounds, [StoppedNode("n4", "rank 3 dead: Killed")])
    text = "\n".join(lines(iso, "all_reduce", [1 << 30]))
    assert "1 round(s) measured (round 2 in part)" in text
    assert "# round 2 did not finish: n[1," in text
    assert "BAD NODE n4: stopped answering during the test (rank 3 dead: Killed)" in text
    assert to_plain(iso)["exclude"] == "slurm.exclude=n4"


def test_no_round_finished_is_a_failure_with_nothing_judged() -> None:
    iso = outcome(replay(IsolateSettings(), HOSTS, {}))
    assert iso.verdict is None and iso.exit_code == 1
    assert "# no round finished: nothing to judge" in lines(iso, "all_reduce", [1 << 30])


BAD_ISOLATE = {
    "local launcher": (["--config", "local"], "task: isolate needs launcher=slurm"),
    "bisect on three nodes": (
        ["--config", "testcluster", "nodes=3", "isolate.mode=bisect"],
        "isolate.mode: bisect needs at least 4 nodes, this job has 3",
    ),
    "tolerance over 1": (["--config", "testcluster", "isolate.tolerance=1.5"], "isolate.tolerance: 1.5 must be"),
    "unknown mode": (["--config", "testcluster", "isolate.mode=ring"], "isolate.mode: 'ring' is not allowed"),
    "one node": (["--config", "testcluster", "nodes=1"], "isolate needs at least 2 nodes"),
    "a loose word": (["--config", "testcluster", "go"], "isolate: 'go' is not KEY=VALUE nor one of wait, report"),
}


@pytest.mark.parametrize("case", BAD_ISOLATE, ids=str)
def test_bad_isolate_input_is_one_line_exit_2_and_nothing_created(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv, message = BAD_ISOLATE[case]
    out_dir = tmp_path / "runs"
    assert main(["isolate", *argv, f"output_dir={out_dir}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("collbench: error: "), err
    assert message in err
    assert not out_dir.exists()


def test_the_dry_run_prints_the_script_and_every_round(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["isolate", "--dry-run", "--config", "testcluster", "nodes=6", "slurm.nodelist=n[1-6]"]
    assert main([*argv, f"output_dir={tmp_path / 'runs'}"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("#!/bin/bash") and "#SBATCH --nodes=6" in out
    assert "# isolate plan: mode pairs, 6 nodes, all_reduce at 2 size(s); 5 round(s), 15 pair measurement(s)" in out
    assert "# round 1: n1+n6 n2+n5 n3+n4" in out
    assert not (tmp_path / "runs").exists()


def rail_figures(slow: Callable[[tuple[int, ...], int], bool]) -> dict[GroupKey, float]:
    """The six-node pairs plan on rails 0 and 1; a (pair, rail) that `slow` names at 0.01 GB/s."""
    return {
        (number, group, rail): 0.01 if slow(group, rail) else 1.0 + 0.01 * number
        for number, groups in enumerate(pairs_plan(len(HOSTS)), start=1)
        for group in groups
        for rail in (0, 1)
    }


def rail_outcome(figures: dict[GroupKey, float], leaves: dict[int, str]) -> IsolateOutcome:
    rounds = replay(IsolateSettings(), HOSTS, figures, [0, 1])
    grains = Grains([0, 1], ["mlx5_0", "mlx5_1"], leaves, "slurm topology/tree" if leaves else "")
    verdict = judge_fabric(rounds.measured, 0.15, 0.0, leaves)
    return IsolateOutcome("RUN", HOSTS, rounds, verdict, [], [], [0.5] * rounds.round_no, True, grains)


LEAVES = {0: "s1", 1: "s1", 2: "s1", 3: "s2", 4: "s2", 5: "s2"}


def test_a_slow_rail_names_the_node_the_rail_and_its_nic_and_drains_the_node_for_it() -> None:
    iso = rail_outcome(rail_figures(lambda group, rail: rail == 1 and 2 in group), LEAVES)
    text = "\n".join(lines(iso, "all_reduce", [1 << 30]))
    assert "BAD RAIL n3: rail 1 (mlx5_1) busbw 0.01 GB/s" in text and "its other rails healthy (0)" in text
    assert "BAD NODE" not in text and "SWITCH" not in text
    assert "# leaves (slurm topology/tree): s1 = n[1-3], s2 = n[4-6]" in text
    assert re.search(r"^#   n3\s+(0\.99|1\.00)\s+0\.01$", text, re.M), text
    assert iso.exclude() == "slurm.exclude=n3"
    assert "NodeName=n3 State=DRAIN 'Reason=collbench:slow_rail by isolate run=RUN rail 1 (mlx5_1) busbw 0.01 of " in (
        iso.drain()
    )
    plain = to_plain(iso)
    assert [(r["host"], r["rail"], r["nic"]) for r in plain["bad_rails"]] == [("n3", 1, "mlx5_1")]
    assert plain["bad_nodes"] == [] and plain["switch_faults"] == [] and len(plain["units"]) == 12
    assert plain["leaves"]["n4"] == "s2" and plain["rails"] == [0, 1]


def test_a_slow_uplink_names_the_switch_link_and_drains_no_node() -> None:
    iso = rail_outcome(rail_figures(lambda group, rail: rail == 1 and LEAVES[group[0]] != LEAVES[group[1]]), LEAVES)
    text = "\n".join(lines(iso, "all_reduce", [1 << 30]))
    assert "SLOW SWITCH LINK s1-s2 on rail 1 (mlx5_1): 9 of 9 pair(s) across slow" in text
    assert "behind it: n[1-3] | n[4-6]" in text and "BAD NODE" not in text and "BAD RAIL" not in text
    assert iso.exclude() == "" and iso.drain() == "" and iso.exit_code == 1
    [fault] = to_plain(iso)["switch_faults"]
    assert fault["switches"] == ["s1", "s2"] and fault["sides"] == [["n1", "n2", "n3"], ["n4", "n5", "n6"]]


def test_without_a_topology_a_cut_is_named_as_two_sets_and_no_node() -> None:
    iso = rail_outcome(rail_figures(lambda group, rail: LEAVES[group[0]] != LEAVES[group[1]]), {})
    text = "\n".join(lines(iso, "all_reduce", [1 << 30]))
    assert "CUT n[1-3] | n[4-6] on every rail" in text and "BAD NODE" not in text, text
    assert "# no switch topology known" in text and iso.exclude() == ""
