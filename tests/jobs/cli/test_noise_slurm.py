"""Verdicts under noise on the project's Slurm cluster made rail-optimized (tests/cluster/up.sh): the fabric's
noisy mode (tests/cluster/fabric.noisy: every switch port toward a node rate-limited, the rate redrawn every
second) spreads the healthy figures as other jobs' traffic would, and one fault at a time sits under it:

- a whole node slowed; one rail of one node and a leaf's uplink on the other rail slowed (one run: each rail is
  judged apart); nothing at all.

What is asserted is what a user reads and acts on: the fault named at its own grain, or INCONCLUSIVE for that
unit, and never a healthy node in a BAD NODE or BAD RAIL line, a drain line or the slurm.exclude override; with
no fault, nothing named (exit 0, or 5 when the noise leaves something unsettled). One isolate run a case, one
size, the sibling tests' shapes (test_fabric_grains_slurm.RAILS)."""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from jobs.cli.exit_codes import EXIT_FAILED, EXIT_INCONCLUSIVE, EXIT_OK
from slurm.hostlist import expand_hostlist
from tests.cluster.fabric import LEAVES, NODES, noisy, slowed_node, slowed_rail, slowed_uplink
from tests.conftest import SlurmCluster
from tests.jobs.cli.test_fabric_grains_slurm import RATE, isolate_on_rails
from tests.jobs.cli.test_isolate_slurm import verdict

pytestmark = [pytest.mark.slurm, pytest.mark.integration]


@dataclass(frozen=True)
class Fault:
    make: Callable[[], AbstractContextManager[Any]]
    named: str
    """A regular expression for the line that names the fault at its grain."""
    unit: str
    """A regular expression an INCONCLUSIVE line about this fault's unit matches."""


@dataclass(frozen=True)
class Case:
    faults: list[Fault]
    faulty: frozenset[str]
    """The nodes a fault may be pinned on (drained, excluded): none for an uplink."""


SLOW_RAIL = Fault(lambda: slowed_rail("n2", 1, RATE), r"^BAD RAIL n2: rail 1 \(rail1\)", r"\bn2\b.*\brail 1\b")
SLOW_UPLINK = Fault(lambda: slowed_uplink(0, RATE), r"^SLOW SWITCH LINK s1-s2 on rail 0\b", r"\bs1-s2\b.*\brail 0\b")
CASES: dict[str, Case] = {
    "a slow node": Case([Fault(lambda: slowed_node("n5", RATE), r"^BAD NODE n5: ", r"\bn5\b")], frozenset({"n5"})),
    "a slow rail and a slow uplink": Case([SLOW_RAIL, SLOW_UPLINK], frozenset({"n2"})),
    "nothing": Case([], frozenset()),
}
"""The rail (rail 1 of n2) and the uplink (rail 0) share one run, as in test_fabric_grains_slurm: each rail is
judged apart, and a job's start costs most of a run here."""


def accused(stdout: str) -> dict[str, set[str]]:
    """Every node the verdict acts against, by where it says so: BAD NODE / BAD RAIL lines, drain lines, the
    slurm.exclude override."""
    found: dict[str, set[str]] = {"BAD NODE": set(), "BAD RAIL": set(), "drain": set(), "exclude": set()}
    for line in stdout.splitlines():
        if bad := re.match(r"^(BAD NODE|BAD RAIL) (\S+?):", line):
            found[bad.group(1)].update(expand_hostlist(bad.group(2)))
        for drained in re.findall(r"\bNodeName=(\S+) State=DRAIN\b", line):
            found["drain"].update(expand_hostlist(drained))
        for excluded in re.findall(r"\bslurm\.exclude=(\S+)", line):
            found["exclude"].update(expand_hostlist(excluded.strip("'\"")))
    return found


def healthy_spread(run: Path, case: Case) -> str:
    """The healthy figures' spread as the run measured it (those of no faulty node, and on rail 0 none across
    the leaves when its uplink is slowed): their median, their median absolute deviation and their range over
    it. For the report; the verdict reads its own."""
    leaf = {node: name for name, nodes in LEAVES.items() for node in nodes}

    def healthy(figure: dict[str, Any]) -> bool:
        nodes = figure.get("nodes") or []
        across = figure.get("rail") == 0 and len({leaf.get(n) for n in nodes}) > 1
        return not case.faulty & set(nodes) and not (SLOW_UPLINK in case.faults and across)

    figures = [r["busbw"] for r in verdict(run).get("rounds", []) if r.get("busbw") and healthy(r)]
    if len(figures) < 2:
        return "too few healthy figures"
    middle = statistics.median(figures)
    deviation = statistics.median(abs(f - middle) for f in figures)
    return (
        f"{len(figures)} healthy figures, median {middle:.3f} GB/s, median absolute deviation {deviation / middle:.0%} "
        f"of it, from {min(figures) / middle:.2f} to {max(figures) / middle:.2f} of it"
    )


def verdict_lines(stdout: str) -> list[str]:
    keep = ("BAD ", "SLOW ", "INCONCLUSIVE", "scontrol update", "note:", "# nothing found")
    return [line for line in stdout.splitlines() if line.startswith(keep) or "slurm.exclude=" in line]


@pytest.mark.parametrize("name", list(CASES))
def test_under_noise_the_fault_is_named_or_inconclusive_and_no_healthy_node_is_accused(
    slurm_cluster: SlurmCluster, workdir: Path, name: str
) -> None:
    case = CASES[name]
    with noisy() as noise, ExitStack() as faults:
        for fault in case.faults:
            faults.enter_context(fault.make())
        result, run, took = isolate_on_rails(slurm_cluster, workdir)
    print(
        f"\nisolate under noise, {name}: {took:.1f} s, exit {result.returncode}, {noise.draws} noise draws; "
        f"{healthy_spread(run, case)}\n" + "\n".join(verdict_lines(result.stdout))
    )
    assert noise.draws >= 2, "the noise was redrawn while isolate ran"
    healthy = set(NODES) - case.faulty
    wrongly = {where: sorted(nodes & healthy) for where, nodes in accused(result.stdout).items() if nodes & healthy}
    assert not wrongly, f"healthy nodes accused: {wrongly}\n{result.stdout}"
    if not case.faults:
        assert not re.search(r"^(BAD|SLOW) ", result.stdout, re.M), result.stdout
        assert result.returncode in (EXIT_OK, EXIT_INCONCLUSIVE), result.stdout + result.stderr
        return
    inconclusive = [line for line in result.stdout.splitlines() if line.startswith("INCONCLUSIVE")]
    named = [bool(re.search(fault.named, result.stdout, re.M)) for fault in case.faults]
    for fault, was_named in zip(case.faults, named, strict=True):
        if not was_named:
            assert any(re.search(fault.unit, line) for line in inconclusive), (
                f"neither named nor inconclusive: {fault.named}\n{result.stdout}"
            )
    expected = EXIT_FAILED if any(named) else EXIT_INCONCLUSIVE
    assert result.returncode == expected, result.stdout + result.stderr
    if SLOW_RAIL in case.faults:
        assert not accused(result.stdout)["BAD NODE"], "a bad rail is not a bad node"
