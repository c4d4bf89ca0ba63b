"""An inconclusive unit, as isolate says it: one INCONCLUSIVE line per unit with its figures, why and the command
that would settle it; exit 5 when nothing is confirmed; no finding, no drain line, no exclude; isolate.json's
entries (and an older isolate.json still read)."""

from __future__ import annotations

import json

import pytest

from jobs.config.exit_codes import EXIT_FAILED, EXIT_INCONCLUSIVE, EXIT_OK, worst_exit
from jobs.config.isolate_settings import IsolateSettings
from jobs.inspect.grain_lines import Grains
from jobs.inspect.isolate_text import lines
from jobs.inspect.isolate_verdict import IsolateOutcome, to_plain, verdict_record
from jobs.isolate.drain_plan import plan_steps, verdict_drains
from jobs.isolate.plan import pairs_plan
from jobs.isolate.reasons import drain_reason
from jobs.isolate.rounds import GroupKey, replay
from jobs.isolate.verdict import EVERY_RAIL, BadLink, Inconclusive, NodeFigures, RailFault, judge
from jobs.rundir.records.isolate import ISOLATE_VERDICT
from slurm.evidence import NodeState

HOSTS = [f"n{i}" for i in range(1, 7)]


def healthy_figures(rails: tuple[int, ...] = (-1,)) -> dict[GroupKey, float]:
    return {
        (number, group, rail): 1.0 + 0.01 * number
        for number, groups in enumerate(pairs_plan(len(HOSTS)), start=1)
        for group in groups
        for rail in rails
    }


def unit(grain: str, nodes: tuple[int, ...], rail: int = EVERY_RAIL, why: str = "spread", **kw: object) -> Inconclusive:
    figures: dict[str, object] = {"switches": (), "measurements": 6, "slow": 3, "busbw": 0.78, "ratio": 0.78,
                                  "margin": 1.2} | kw  # fmt: skip
    return Inconclusive(grain, nodes, rail, why=why, **figures)  # type: ignore[arg-type]


def outcome(
    units: list[Inconclusive], rails: tuple[int, ...] = (-1,), problems: list[str] | None = None
) -> IsolateOutcome:
    settings = IsolateSettings(rounds=4, round_budget_s=60.0)
    rounds = replay(settings, HOSTS, healthy_figures(rails), list(rails))
    verdict = judge(rounds.measured, 0.15, 0.0)
    verdict.inconclusive, verdict.noise = units, 0.31
    grains = Grains(list(rails), ["eth0", "eth1"] if rails != (-1,) else [], {0: "s1", 1: "s1"})
    return IsolateOutcome("RUN", HOSTS, rounds, verdict, [], problems or [], [0.5], True, grains)


def text_of(iso: IsolateOutcome) -> str:
    return "\n".join(lines(iso, "all_reduce", [1 << 30]))


def test_each_grain_is_said_on_one_line_with_its_figures_why_and_the_command_that_settles_it() -> None:
    iso = outcome(
        [
            unit("node", (2,)),
            unit("rail", (0,), 1, "few_partners", measurements=2, slow=2),
            unit("switch_link", (0, 1), 0, "suspect_partners", switches=("s1", "s2")),
            unit("link", (1, 4), 1, "once", measurements=1, slow=1),
        ],
        rails=(0, 1),
    )
    said = [line for line in text_of(iso).splitlines() if line.startswith("INCONCLUSIVE")]
    settle = "isolate.rounds=8 isolate.round_budget_s=120"
    assert said == [
        "INCONCLUSIVE n3: busbw 0.78 GB/s, 0.78 of the level, 3 of 6 measurement(s) slow (margin 1.2); the healthy "
        "figures spread by 31% of the level, too wide for a fault of the tolerance's size (15%) to stand out; "
        f"to settle: collbench isolate nodes=4 slurm.nodelist=n[2-5] {settle}",
        "INCONCLUSIVE n1 rail 1 (eth1): busbw 0.78 GB/s, 0.78 of the level, 2 of 2 measurement(s) slow (margin 1.2); "
        "its slow figures come from fewer than two partners; "
        f"to settle: collbench isolate nodes=4 slurm.nodelist=n[1-2,4-5] {settle}",
        "INCONCLUSIVE switch link s1-s2 on rail 0 (eth0): busbw 0.78 GB/s, 0.78 of the level, 3 of 6 pair(s) across "
        "slow (margin 1.2); every partner it was slow with is a suspect itself; "
        f"to settle: collbench isolate nodes=5 slurm.nodelist=n[1-2,4-6] {settle}",
        "INCONCLUSIVE link n2-n5 on rail 1 (eth1): busbw 0.78 GB/s, 0.78 of the level, 1 of 1 measurement(s) slow "
        "(margin 1.2); slow once, never measured again; "
        f"to settle: collbench isolate nodes=4 slurm.nodelist=n[2,4-6] {settle}",
    ]


def test_inconclusive_alone_exits_5_and_drains_excludes_and_finds_nothing() -> None:
    iso = outcome([unit("node", (2,)), unit("rail", (0,), 0)], rails=(0, 1))
    assert iso.exit_code == EXIT_INCONCLUSIVE == 5 and not iso.found
    assert iso.exclude() == "" and iso.drain() == "" and iso.findings() == []
    text = text_of(iso)
    assert "# nothing confirmed: 2 unit(s) inconclusive (above); exit 5" in text
    assert "nothing is drained or excluded for it" in text and "scontrol" not in text and "exclude=" not in text
    plain = to_plain(iso)
    assert plain["exit_code"] == 5 and plain["found"] is False and plain["drain"] == "" and plain["findings"] == []
    assert [(u["hosts"], u["grain"], u["rail"], u["why"]) for u in plain["inconclusive"]] == [
        (["n3"], "node", -1, "spread"),
        (["n1"], "rail", 0, "spread"),
    ]
    assert plain["inconclusive"][0]["line"].startswith("INCONCLUSIVE n3: ") and plain["noise"] == pytest.approx(0.31)


def test_a_confirmed_fault_wins_over_inconclusive_and_drains_only_itself() -> None:
    iso = outcome([unit("node", (2,))])
    assert iso.verdict is not None
    iso.verdict.bad_links = [BadLink((0, 5), 0.01, 0.01)]
    assert iso.exit_code == EXIT_FAILED and iso.exclude() == "" and iso.drain() == ""
    iso.verdict.bad_nodes = [NodeFigures(3, 5, 5, 0.01, 0.01)]
    assert iso.exclude() == "slurm.exclude=n4" and "n3" not in iso.drain() and "NodeName=n4" in iso.drain()
    assert [f.host for f in iso.findings()] == ["n4", "n1-n6"]


def test_a_problem_of_the_run_is_a_failure_not_inconclusive() -> None:
    assert outcome([unit("node", (2,))], problems=["rank 3 failed"]).exit_code == EXIT_FAILED


def test_nothing_inconclusive_and_nothing_found_is_ok() -> None:
    iso = outcome([])
    assert iso.exit_code == EXIT_OK and "# nothing found" in text_of(iso)


def test_the_exclude_line_follows_the_grain() -> None:
    iso = outcome([], rails=(0, 1))
    assert iso.verdict is not None
    iso.verdict.bad_rails = [RailFault(4, 1, 5, 5, 0.01, 0.01, [0])]
    assert "# exclude the nodes with a bad rail from the next job: slurm.exclude=n5" in text_of(iso)
    iso.verdict.bad_nodes = [NodeFigures(3, 5, 5, 0.01, 0.01)]
    assert "# exclude the bad nodes and the nodes with a bad rail from the next job: slurm.exclude=n[4-5]" in (
        text_of(iso)
    )


def test_an_isolate_json_of_format_4_is_read_with_no_unit_inconclusive_and_its_exit_status() -> None:
    iso = outcome([])
    iso.verdict.bad_links = [BadLink((0, 5), 0.01, 0.01)]  # type: ignore[union-attr]
    plain = json.loads(ISOLATE_VERDICT.encode(verdict_record(iso)))
    for added in ("inconclusive", "noise", "exit_code"):
        del plain[added]
    old = ISOLATE_VERDICT.decode(json.dumps({**plain, "version": 4}).encode(), "isolate.json")
    assert old.inconclusive == [] and old.exit_code == 1 and old.version == 5
    healthy = json.loads(ISOLATE_VERDICT.encode(verdict_record(outcome([]))))
    del healthy["exit_code"]
    assert ISOLATE_VERDICT.decode(json.dumps({**healthy, "version": 4}).encode(), "isolate.json").exit_code == 0


def test_a_round_trip_keeps_every_inconclusive_entry() -> None:
    record = verdict_record(outcome([unit("switch_link", (0, 1), 0, switches=("s1", "s2"))], rails=(0, 1)))
    again = ISOLATE_VERDICT.decode(ISOLATE_VERDICT.encode(record), "isolate.json")
    assert again.inconclusive == record.inconclusive and again.inconclusive[0].switches == ["s1", "s2"]


@pytest.mark.parametrize(
    ("codes", "wins"),
    [((0, 5), 5), ((5, 1), 1), ((1, 5), 1), ((4, 5), 4), ((0, 0), 0), ((5, 130), 130), ((), 0)],
)
def test_statuses_combine_by_precedence_not_by_size(codes: tuple[int, ...], wins: int) -> None:
    assert worst_exit(*codes) == wins


def test_a_drain_pass_neither_drains_nor_resumes_an_inconclusive_node() -> None:
    iso = outcome([unit("node", (2,)), unit("rail", (4,), 1), unit("link", (0, 1))], rails=(0, 1))
    assert iso.inconclusive_hosts == ["n3", "n5"] and iso.passed() == ["n1", "n2", "n4", "n6"]
    ours = NodeState("n3", "drained", drain_reason(("slow_node",), "isolate", "OLD", "busbw 0.4"))
    states = {host: NodeState(host, "idle", "") for host in HOSTS} | {"n3": ours}
    steps = plan_steps(iso.findings(), iso.passed(), "isolate", "RUN", states)
    assert steps == [] and verdict_drains(iso.findings(), "isolate", "RUN") == []
