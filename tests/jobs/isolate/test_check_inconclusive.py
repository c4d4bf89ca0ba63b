"""An inconclusive unit in collbench check: the node is neither vetted nor cordoned, said on its INCONCLUSIVE line
(as isolate says it), in check/inconclusive, exit 5 when nothing is cordoned; and no drain line, no exclude, no
--apply step (neither drain nor resume) for it. The units come from the real judge plus the ones the inference
would add (jobs.isolate.inference fills Verdict.inconclusive): the reading side is what is tested here."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from jobs.config.exit_codes import EXIT_CANNOT_RUN, EXIT_FAILED, EXIT_INCONCLUSIVE, EXIT_OK
from jobs.ending.check_files import FILES, write_check_files
from jobs.inspect.check_verdict import CheckOutcome, verdict_lines
from jobs.isolate import check_judge
from jobs.isolate.check_judge import CheckVerdict, check_verdict
from jobs.isolate.check_plan import check_plan
from jobs.isolate.drain_plan import plan_steps, verdict_drains
from jobs.isolate.grains import judge_fabric
from jobs.isolate.reasons import drain_reason
from jobs.isolate.verdict import EVERY_RAIL, Inconclusive, Measured, Verdict, exclude_override
from slurm.evidence import NodeState

HOSTS = [f"n{i + 1}" for i in range(8)]


def measured(slow: frozenset[int] = frozenset()) -> list[Measured]:
    return [
        Measured(number, group, 10.0 if slow & set(group) else 100.0 + number)
        for number, groups in enumerate(check_plan(8, 2, seed=3), start=1)
        for group in groups
    ]


def unit(grain: str, nodes: tuple[int, ...], rail: int = EVERY_RAIL) -> Inconclusive:
    return Inconclusive(grain, nodes, rail, (), 4, 2, 80.0, 0.8, "spread", 0.7)  # type: ignore[arg-type]


@pytest.fixture
def undecided(monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    """The real judge, then these units inconclusive (what the inference, not yet this judge, would add)."""

    def add(*units: Inconclusive, noise: float = 0.3) -> None:
        def judged(*args: Any, **kwargs: Any) -> Verdict:
            verdict = judge_fabric(*args, **kwargs)
            verdict.inconclusive, verdict.noise = list(units), noise
            return verdict

        monkeypatch.setattr(check_judge, "judge_fabric", judged)

    return add


def judged(slow: frozenset[int] = frozenset(), stopped: dict[str, str] | None = None) -> CheckVerdict:
    return check_verdict(HOSTS, measured(slow), stopped or {}, tolerance=0.15, budget_s=60.0)


def test_an_inconclusive_node_is_neither_vetted_nor_cordoned_and_exits_5(undecided: Callable[..., None]) -> None:
    undecided(unit("node", (2,)), unit("link", (0, 4)))
    verdict = judged()
    assert verdict.inconclusive == ["n3"] and "n3" not in verdict.vetted and verdict.cordoned == []
    assert verdict.unchecked == [] and "n1" in verdict.vetted and "n5" in verdict.vetted
    assert verdict.exit_code == EXIT_INCONCLUSIVE and verdict.findings() == []
    lines = verdict_lines(CheckOutcome("R", verdict, 3, []), 12.0, 60.0)
    said = [line for line in lines if line.startswith("INCONCLUSIVE")]
    assert said[0].startswith("INCONCLUSIVE n3: busbw 80 GB/s, 0.80 of the level, 2 of 4 measurement(s) slow")
    assert "the healthy figures spread by 30% of the level" in said[0]
    assert said[0].endswith(
        "to settle: collbench isolate nodes=4 slurm.nodelist=n[1-4] isolate.rounds=20 isolate.round_budget_s=240, "
        "or in this allocation collbench check check.budget_s=120"
    )
    assert said[1].startswith("INCONCLUSIVE link n1-n5: ") and len(said) == 2
    assert any(line.startswith("# n3: inconclusive, neither vetted nor cordoned") for line in lines)


def test_a_cordoned_node_wins_the_exit_status_and_drains_alone(undecided: Callable[..., None]) -> None:
    undecided(unit("node", (2,)))
    verdict = judged(slow=frozenset({5}))
    assert [node.host for node in verdict.cordoned] == ["n6"] and verdict.exit_code == EXIT_FAILED
    assert verdict.inconclusive == ["n3"] and "n3" not in verdict.vetted
    drains = verdict_drains(verdict.findings(), "check", "R")
    assert len(drains) == 1 and "NodeName=n6" in drains[0]


def test_a_node_the_run_cordoned_is_not_said_inconclusive_too(undecided: Callable[..., None]) -> None:
    undecided(unit("node", (2,)))
    verdict = judged(stopped={"n3": "rank 2 dead: Killed"})
    assert verdict.inconclusive == [] and verdict.inconclusive_lines == [] and verdict.exit_code == EXIT_FAILED


def test_nothing_inconclusive_and_everything_vetted_is_still_0_and_unmeasured_still_4() -> None:
    assert judged().exit_code == EXIT_OK
    assert check_verdict(HOSTS, [], {}, tolerance=0.15).exit_code == EXIT_CANNOT_RUN


def test_the_inconclusive_file_holds_the_hostlist(undecided: Callable[..., None], tmp_path: Path) -> None:
    undecided(unit("node", (2,)), unit("rail", (3,), 1))
    verdict = judged()
    written = write_check_files(CheckOutcome("R", verdict, 3, []), tmp_path)
    assert [path.name for path in written] == list(FILES)
    assert (tmp_path / "inconclusive").read_text() == "n[3-4]\n"
    assert "n3" not in (tmp_path / "vetted").read_text() and (tmp_path / "cordoned").read_text() == ""


def test_apply_neither_drains_nor_resumes_an_inconclusive_node(undecided: Callable[..., None]) -> None:
    undecided(unit("node", (2,)))
    verdict = judged()
    ours = NodeState("n3", "drained", drain_reason(("slow_node",), "check", "OLD", "busbw 0.4"))
    states = {host: NodeState(host, "idle", "") for host in HOSTS} | {"n3": ours}
    steps = plan_steps(verdict.findings(), verdict.vetted, "check", "R", states)
    assert [step for step in steps if step.host == "n3"] == []
    assert all(step.action != "drain" for step in steps)


def test_an_inconclusive_unit_excludes_nothing() -> None:
    verdict = Verdict(100.0, 1.0, 0.15, [], inconclusive=[unit("node", (2,)), unit("rail", (1,), 0)])
    assert exclude_override(HOSTS, verdict) == "" and not verdict.found and not verdict.settled
