"""collbench check's verdict from the groups that finished: pure, no torch, no Slurm. The pairs are judged at
every grain (jobs.isolate.grains.judge_fabric): a node slow with most of its partners is cordoned; with two
rounds its partners, slow with it and healthy with their other partner, are not; a slow rail cordons its node
naming the rail; a slow switch link cordons no node."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from jobs.config.exit_codes import EXIT_CANNOT_RUN, EXIT_FAILED, EXIT_INCONCLUSIVE, EXIT_OK
from jobs.isolate.check_plan import WHOLE_ROUND
from jobs.isolate.grains import judge_fabric
from jobs.isolate.naming import (
    inconclusive_line,
    isolate_settle,
    rail_fault_reason,
    settle_nodes,
    suspect_nodes,
    switch_fault_line,
    switches_name,
)
from jobs.isolate.reasons import Code, Finding
from jobs.isolate.verdict import Inconclusive, Measured, Verdict

SETTLE_ROUNDS = 20
"""The rounds of the isolate run a check's INCONCLUSIVE line proposes: twice isolate.rounds' default."""
SETTLE_ROUND_BUDGET_S = 240.0
"""Its rounds' budget: twice isolate.round_budget_s's default."""


@dataclass(frozen=True, slots=True)
class Cordoned:
    host: str
    reason: str
    code: Code = "slow_node"
    """Why, as a reason code (jobs.isolate.reasons)."""


@dataclass(slots=True)
class CheckVerdict:
    hosts: list[str]
    vetted: list[str]
    cordoned: list[Cordoned]
    unchecked: list[str]
    """Nodes neither vetted nor blamed: the check ended before their pairs finished."""
    whole_busbw: float | None
    """The whole allocation's figure (GB/s), None when round 1 did not finish."""
    level: float
    """The healthy level the pairs were judged against (0: no pair measured)."""
    pairs: int
    notes: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    """Slow switch links (or, with no topology, cuts in the matrix), one line each: the link, its rail, the
    nodes behind it. No node is cordoned for one."""

    link_findings: list[Finding] = field(default_factory=list)
    """The slow links and switch links as findings (code slow_link): named, never drained."""
    inconclusive: list[str] = field(default_factory=list)
    """The nodes of a node or rail the evidence could not settle: neither vetted nor cordoned, never drained nor
    resumed (a link or switch link inconclusive leaves its nodes vetted)."""
    inconclusive_lines: list[str] = field(default_factory=list)
    """One INCONCLUSIVE line per unit (jobs.isolate.naming.inconclusive_line), each with what would settle it."""

    def findings(self) -> list[Finding]:
        """Every node cordoned with its code, then the slow links."""
        return [Finding(node.host, node.code, node.reason) for node in self.cordoned] + self.link_findings

    @property
    def measured(self) -> bool:
        return self.whole_busbw is not None or self.pairs > 0

    @property
    def exit_code(self) -> int:
        """EXIT_FAILED a node cordoned or a switch link slow; EXIT_CANNOT_RUN the check could not run or settle
        (nothing cordoned); EXIT_INCONCLUSIVE a unit the evidence could not settle; EXIT_OK every node vetted."""
        if self.cordoned or self.links:
            return EXIT_FAILED
        if not self.measured or self.unchecked:
            return EXIT_CANNOT_RUN
        return EXIT_INCONCLUSIVE if self.inconclusive_lines else EXIT_OK


def check_verdict(
    hosts: Sequence[str],
    measured: Sequence[Measured],
    stopped: Mapping[str, str],
    tolerance: float,
    expected_busbw: float = 0.0,
    leaves: Sequence[str | None] = (),
    nics: Sequence[str] = (),
    failed: Sequence[Finding] = (),
    budget_s: float = 0.0,
    planned_rounds: int | None = None,
) -> CheckVerdict:
    """`measured`: the groups that finished (round 1 the whole allocation); `stopped`: host -> how its
    ranks ended, for nodes whose ranks died or hung; `leaves`: each node's leaf switch, when known; `nics`:
    each rail's NIC, for the reasons; `failed`: nodes the run itself named (a failed set-up, a fabric
    requirement), cordoned first; `budget_s`: check.budget_s, for what would settle an inconclusive unit;
    `planned_rounds`: the plan's last round when its suspects were measured again after it (check.confirm_rounds):
    a node or rail then is named only on figures measured again (jobs.isolate.confirm), else inconclusive."""
    whole = next((m.busbw for m in measured if m.round == WHOLE_ROUND), None)
    pairs = [m for m in measured if m.round != WHOLE_ROUND]
    reasons: dict[str, Cordoned] = {}
    for finding in failed:
        reasons.setdefault(finding.host, Cordoned(finding.host, finding.figure, finding.code))
    for host, how in stopped.items():
        reasons.setdefault(host, Cordoned(host, f"its ranks stopped: {how}", "node_stopped"))
    level, notes, lines, links = 0.0, list[str](), list[str](), list[Finding]()
    undecided: list[Inconclusive] = []
    said: list[str] = []
    if pairs:
        judged = _judge_pairs(hosts, pairs, tolerance, expected_busbw, reasons, leaves, nics, planned_rounds)
        level, slow_notes, lines, links, verdict = judged
        notes += slow_notes
        undecided = [unit for unit in verdict.inconclusive if not _cordoned_already(unit, hosts, reasons)]
        said = _inconclusive_lines(verdict, undecided, hosts, nics, budget_s)
    elif whole is not None and len(hosts) == 2:
        notes += _judge_whole_pair(hosts, whole, tolerance, expected_busbw, reasons)
    seen = {hosts[node] for m in pairs for node in m.nodes} or (set(hosts) if whole and len(hosts) == 2 else set())
    if whole is not None and expected_busbw and whole < expected_busbw * (1 - tolerance) and not reasons:
        notes.append(
            f"the whole allocation ran at {whole:.3g} GB/s, under {1 - tolerance:.2f} of the expected "
            f"{expected_busbw:.3g}, while no pair was slow: a fault beyond pairs (a switch, routing); run isolate"
        )
    cordoned = [reasons[host] for host in hosts if host in reasons]
    held = {hosts[node] for unit in undecided if unit.grain in ("node", "rail") for node in unit.nodes} - set(reasons)
    inconclusive = [host for host in hosts if host in held]
    vetted = [host for host in hosts if host not in reasons and host not in held and host in seen]
    unchecked = [host for host in hosts if host not in reasons and host not in held and host not in seen]
    return CheckVerdict(
        list(hosts), vetted, cordoned, unchecked, whole, level, len(pairs), notes, lines, links, inconclusive, said
    )


def _cordoned_already(unit: Inconclusive, hosts: Sequence[str], reasons: Mapping[str, Cordoned]) -> bool:
    """A node (or its rail) inconclusive in the pairs while the run itself cordoned it (it failed, it stopped):
    the cordon stands, the unit is not said."""
    return unit.grain in ("node", "rail") and all(hosts[node] in reasons for node in unit.nodes)


def _inconclusive_lines(
    verdict: Verdict, units: Sequence[Inconclusive], hosts: Sequence[str], nics: Sequence[str], budget_s: float
) -> list[str]:
    """Each unit's line; what settles it: an isolate run of it with healthy partners, as isolate says it, or in
    the same allocation a check with twice the budget."""
    suspects = suspect_nodes(verdict)
    again = f"collbench check check.budget_s={2 * budget_s:g}" if budget_s else "a check with a longer check.budget_s"
    return [
        inconclusive_line(
            unit,
            hosts,
            verdict.noise,
            verdict.tolerance,
            isolate_settle(settle_nodes(unit, hosts, suspects), SETTLE_ROUNDS, SETTLE_ROUND_BUDGET_S)
            + f", or in this allocation {again}",
            nics,
        )
        for unit in units
    ]


def _judge_pairs(
    hosts: Sequence[str],
    pairs: Sequence[Measured],
    tolerance: float,
    expected_busbw: float,
    reasons: dict[str, Cordoned],
    leaves: Sequence[str | None],
    nics: Sequence[str],
    planned_rounds: int | None,
) -> tuple[float, list[str], list[str], list[Finding], Verdict]:
    known = {node: leaf for node, leaf in enumerate(leaves) if leaf is not None}
    confirming = planned_rounds is not None
    verdict = judge_fabric(pairs, tolerance, expected_busbw, known or None, confirming, planned_rounds)
    source = "expected" if expected_busbw else "median"
    for node in verdict.bad_nodes:
        host = hosts[node.node]
        reasons.setdefault(
            host,
            Cordoned(
                host,
                f"busbw {node.median_busbw:.3g} GB/s, {node.ratio:.2f} of the {source} {verdict.level:.3g} GB/s, "
                f"{node.slow} of {node.measurements} group(s) slow",
            ),
        )
    notes = [
        f"slow link {hosts[a]}-{hosts[b]}: {link.busbw:.3g} GB/s, {link.ratio:.2f} of the level, while both nodes "
        "are healthy with their other partner (both vetted; collbench isolate looks closer)"
        for link in verdict.bad_links
        for a, b in [link.nodes]
    ] + verdict.notes
    by_node: dict[int, list[str]] = {}
    for fault in verdict.bad_rails:
        by_node.setdefault(fault.node, []).append(rail_fault_reason(fault, verdict.level, source, nics))
    for index, said in by_node.items():
        reasons.setdefault(hosts[index], Cordoned(hosts[index], "; ".join(said), "slow_rail"))
    lines = [
        ("SLOW SWITCH LINK " if fault.switches else "CUT ") + switch_fault_line(fault, hosts, verdict.level, nics)
        for fault in verdict.switch_faults
    ]
    links = [
        Finding(switches_name(fault.switches) or "cut", "slow_link", line)
        for fault, line in zip(verdict.switch_faults, lines, strict=True)
    ]
    links += [
        Finding(f"{hosts[a]}-{hosts[b]}", "slow_link", f"link {hosts[a]}-{hosts[b]} {link.busbw:.3g} GB/s")
        for link in verdict.bad_links
        for a, b in [link.nodes]
    ]
    return verdict.level, notes, lines, links, verdict


def _judge_whole_pair(
    hosts: Sequence[str], whole: float, tolerance: float, expected_busbw: float, reasons: dict[str, Cordoned]
) -> list[str]:
    """Two nodes: their one measurement is the pair; only an expected level can call it slow."""
    if not expected_busbw:
        return ["two nodes and no check.expected_busbw: nothing to judge the pair against; only a node that fails"]
    if whole < expected_busbw * (1 - tolerance):
        for host in hosts:
            reasons.setdefault(
                host,
                Cordoned(
                    host,
                    f"busbw {whole:.3g} GB/s, {whole / expected_busbw:.2f} of the expected {expected_busbw:.3g} "
                    "GB/s in the only pair (two nodes: which one cannot be told)",
                ),
            )
    return []
