"""The verdict of an isolate run from its directory alone: the rounds replayed from the results, the bad
nodes and links, the nodes that stopped answering, and the matrix as text, CSV, JSON and a heatmap."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import msgspec

from jobs.config.exit_codes import EXIT_FAILED, EXIT_INCONCLUSIVE, EXIT_OK
from jobs.config.isolate_settings import IsolateSettings
from jobs.config.tasks import CHECK_PLAN_MODE
from jobs.inspect.findings import run_findings
from jobs.inspect.grain_lines import Grains, fill_record
from jobs.inspect.report import RunOutcome
from jobs.isolate.bisect import Bisect
from jobs.isolate.confirm import confirming, planned_rounds
from jobs.isolate.drain_plan import verdict_drains
from jobs.isolate.grains import judge_fabric
from jobs.isolate.naming import (
    inconclusive_line,
    isolate_settle,
    settle_nodes,
    suspect_nodes,
    switches_name,
)
from jobs.isolate.reasons import Finding
from jobs.isolate.rounds import Rounds, group_figures, replay
from jobs.isolate.verdict import (
    EVERY_RAIL,
    Inconclusive,
    Verdict,
    bisect_verdict,
    exclude_override,
    rail_name,
)
from jobs.rundir.layout import RunDir
from jobs.rundir.records.codec import RecordError
from jobs.rundir.records.isolate import (
    ISOLATE_PLAN,
    ISOLATE_ROUND,
    InconclusiveVerdict,
    IsolatePlan,
    IsolateVerdict,
    LinkVerdict,
    NodeVerdict,
    RoundGroup,
    StoppedNode,
)
from slurm.hostlist import readable_hostlist

STOPPED_KINDS = ("dead", "lost", "hung")
"""How a rank ended when its node stopped answering (jobs.inspect.postmortem's kinds)."""


@dataclass(slots=True)
class IsolateOutcome:
    run_id: str
    hosts: list[str]
    rounds: Rounds
    verdict: Verdict | None
    """None when not one round finished."""
    stopped: list[StoppedNode] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    """The run's own problems (a failed rank, a cancel): the verdict is then over the rounds that finished."""
    seconds: list[float] = field(default_factory=list)
    """How long each finished round took, from isolate/rounds.jsonl."""
    ended: bool = False
    """The run has ended: the verdict will not change (only then is isolate.json recorded)."""
    grains: Grains = field(default_factory=Grains)
    """The rails, NICs and leaves the verdict was judged with."""
    named: list[Finding] = field(default_factory=list)
    """What the run itself named (a failed set-up, a fabric requirement, wrong elements), per host."""

    @property
    def found(self) -> bool:
        return bool(self.stopped) or (self.verdict is not None and self.verdict.found)

    @property
    def inconclusive(self) -> list[Inconclusive]:
        """The units the evidence could not settle: said, never drained nor excluded."""
        return self.verdict.inconclusive if self.verdict is not None else []

    @property
    def exit_code(self) -> int:
        """EXIT_FAILED a confirmed fault, a problem of the run or no round finished; else EXIT_INCONCLUSIVE a unit
        the evidence could not settle; else EXIT_OK."""
        if self.found or self.problems or self.verdict is None:
            return EXIT_FAILED
        return EXIT_INCONCLUSIVE if self.inconclusive else EXIT_OK

    @property
    def inconclusive_hosts(self) -> list[str]:
        """The nodes of an inconclusive node or rail: neither drained nor passed (a pass resumes)."""
        held = {node for unit in self.inconclusive if unit.grain in ("node", "rail") for node in unit.nodes}
        return [self.hosts[node] for node in sorted(held)]

    def passed(self) -> list[str]:
        """The nodes the verdict passes (what a drain pass may resume): measured, neither named nor inconclusive;
        none when no round finished or the run had a problem."""
        if self.verdict is None or self.problems:
            return []
        held = {finding.host for finding in self.findings()} | set(self.inconclusive_hosts)
        return [host for host in self.hosts if host not in held]

    def inconclusive_lines(self) -> list[str]:
        """One INCONCLUSIVE line per unit, each with the isolate command that would settle it."""
        verdict = self.verdict
        if verdict is None:
            return []
        settings, suspects = self.rounds.settings, suspect_nodes(verdict)
        return [
            inconclusive_line(
                unit,
                self.hosts,
                verdict.noise,
                verdict.tolerance,
                isolate_settle(
                    settle_nodes(unit, self.hosts, suspects), 2 * settings.rounds, 2 * settings.round_budget_s
                ),
                self.grains.nics,
            )
            for unit in verdict.inconclusive
        ]

    @property
    def stopped_hosts(self) -> list[str]:
        return sorted({node.host for node in self.stopped})

    def exclude(self) -> str:
        if self.verdict is None:
            return f"slurm.exclude={readable_hostlist(self.stopped_hosts)}" if self.stopped else ""
        return exclude_override(self.hosts, self.verdict, self.stopped_hosts)

    def findings(self) -> list[Finding]:
        """Every node, rail, link and switch link the verdict named, each with its reason code."""
        return [
            *self.named,
            *stopped_findings(self.stopped),
            *verdict_findings(self.verdict, self.hosts, self.grains.nics),
        ]

    def drain(self) -> str:
        """The drain lines the verdict asks for, one per node, each reason under collbench's mark with its
        code (what `collbench isolate --apply` runs once it has weighed them against Slurm's states)."""
        return "\n".join(verdict_drains(self.findings(), "isolate", self.run_id))


def assess_isolate(run: RunDir, outcome: RunOutcome) -> IsolateOutcome:
    cfg = outcome.config
    plan = _plan(run)
    hosts = plan.hosts if plan is not None else _hosts_of_statuses(outcome)
    rails = plan.rails if plan is not None else [EVERY_RAIL]
    leaves = cfg.topology.leaves_of(hosts)
    figures = group_figures(outcome.rows, hosts)
    in_order = [leaves.get(node) for node in range(len(hosts))]
    rounds = replay(_as_planned(cfg.isolate, plan), hosts, figures, rails, in_order)
    nics = [cfg.rails.nic(rail) for rail in range(max(rails) + 1)]
    grains = Grains(rails, nics, leaves, cfg.topology.resolved_from)
    verdict: Verdict | None = None
    if rounds.measured and isinstance(rounds.planner, Bisect):
        verdict = bisect_verdict(rounds.planner, rounds.measured, hosts)
    elif rounds.measured:
        verdict = judge_fabric(
            rounds.judged, cfg.isolate.tolerance, cfg.isolate.expected_busbw, grains.leaves,
            confirming=confirming(rounds.planner), planned_rounds=planned_rounds(rounds.planner),
        )  # fmt: skip
    stopped = []
    if outcome.postmortem is not None:
        for end in sorted(outcome.postmortem.ends.values(), key=lambda e: e.rank):
            if end.kind in STOPPED_KINDS:
                stopped.append(StoppedNode(end.host, f"rank {end.rank} {end.state}: {end.how}"))
    seconds = _round_seconds(run)
    return IsolateOutcome(
        run.run_id, hosts, rounds, verdict, stopped, outcome.problems, seconds, outcome.ended, grains,
        run_findings(outcome),
    )  # fmt: skip


def stopped_findings(stopped: list[StoppedNode]) -> list[Finding]:
    found: dict[str, str] = {}
    for node in stopped:
        found.setdefault(node.host, node.how)
    return [Finding(host, "node_stopped", f"stopped answering: {how}") for host, how in found.items()]


def verdict_findings(verdict: Verdict | None, hosts: list[str], nics: list[str]) -> list[Finding]:
    """The verdict's bad nodes, bad rails (one finding per node, its rails together), bad links and slow
    switch links, each with its code and figure."""
    if verdict is None:
        return []
    level = f"{verdict.level:.3g} GB/s"
    found = [Finding(hosts[f.node], "slow_node", f"busbw {f.ratio:.2f} of healthy {level}") for f in verdict.bad_nodes]
    rails: dict[int, list[str]] = {}
    for fault in verdict.bad_rails:
        rails.setdefault(fault.node, []).append(f"{rail_name(fault.rail, nics)} busbw {fault.ratio:.2f}")
    found += [
        Finding(hosts[node], "slow_rail", f"{', '.join(said)} of healthy {level}") for node, said in rails.items()
    ]
    found += [
        Finding("-".join(hosts[n] for n in link.nodes), "slow_link", f"busbw {link.ratio:.2f} of healthy {level}")
        for link in verdict.bad_links
    ]
    found += [
        Finding(switches_name(fault.switches) or "cut", "slow_link", f"busbw {fault.ratio:.2f} of healthy {level}")
        for fault in verdict.switch_faults
    ]
    return found


def _plan(run: RunDir) -> IsolatePlan | None:
    """The nodes in the job's order and the rails, as rank 0 wrote them at the start."""
    try:
        return ISOLATE_PLAN.read_if_any(run.isolate_plan)
    except (OSError, RecordError):
        return None


def _as_planned(settings: IsolateSettings, plan: IsolatePlan | None) -> IsolateSettings:
    """The settings the rounds were planned with: the confirming rounds as the plan says them; a check of a plan
    before they were recorded measured nothing again."""
    if plan is not None and plan.confirm_rounds is not None:
        return replace(settings, confirm_rounds=plan.confirm_rounds)
    if plan is not None and plan.mode == CHECK_PLAN_MODE:
        return replace(settings, confirm_rounds=0)
    return settings


def _hosts_of_statuses(outcome: RunOutcome) -> list[str]:
    """The nodes in the job's order from the ranks' statuses, when rank 0 wrote no plan."""
    by_node = {s.node_rank: s.host for s in outcome.statuses.values()}
    return [by_node.get(node, f"node{node}") for node in range(outcome.config.nodes)]


def _round_seconds(run: RunDir) -> list[float]:
    try:
        lines = run.isolate_rounds.read_bytes().splitlines()
    except FileNotFoundError:
        return []
    seconds = []
    for number, line in enumerate(lines, start=1):
        try:
            seconds.append(ISOLATE_ROUND.decode(line, f"{run.isolate_rounds}:{number}").seconds)
        except RecordError:
            continue  # a line cut off by a killed rank 0
    return seconds


def matrix_rows(iso: IsolateOutcome) -> list[list[str]]:
    """The node x node matrix as CSV rows: a header of hosts, then one row per host (empty: not measured)."""
    matrix = iso.verdict.matrix if iso.verdict else {}
    rows = [["node", *iso.hosts]]
    for i, host in enumerate(iso.hosts):
        cells = [matrix.get((min(i, j), max(i, j))) for j in range(len(iso.hosts))]
        rows.append([host, *("" if c is None else f"{c:.6g}" for c in cells)])
    return rows


def verdict_record(iso: IsolateOutcome) -> IsolateVerdict:
    """isolate.json's record: every node named by its host, never by its index alone."""
    hosts = iso.hosts
    record = IsolateVerdict(
        run_id=iso.run_id,
        mode=iso.rounds.mode,
        hosts=hosts,
        rounds=[RoundGroup(m.round, [hosts[n] for n in m.nodes], m.busbw, m.rail) for m in iso.rounds.measured],
        round_seconds=iso.seconds,
        unfinished=[[hosts[n] for n in g] for g in iso.rounds.unfinished],
        found=iso.found,
        stopped=iso.stopped,
        exclude=iso.exclude(),
        drain=iso.drain(),
        problems=iso.problems,
        findings=iso.findings(),
        exit_code=iso.exit_code,
    )
    verdict = iso.verdict
    if verdict is not None:
        record.level, record.spread, record.tolerance = verdict.level, verdict.spread, verdict.tolerance
        record.nodes = [
            NodeVerdict(hosts[f.node], f.node, f.measurements, f.slow, f.median_busbw, f.ratio) for f in verdict.nodes
        ]
        record.bad_nodes = [hosts[f.node] for f in verdict.bad_nodes]
        record.bad_links = [
            LinkVerdict([hosts[n] for n in b.nodes], b.busbw, b.ratio, b.rail) for b in verdict.bad_links
        ]
        record.unconfirmed = [
            LinkVerdict([hosts[n] for n in u.nodes], u.busbw, u.ratio, u.rail) for u in verdict.unconfirmed
        ]
        record.notes = verdict.notes
        record.noise = verdict.noise
        record.inconclusive = [
            InconclusiveVerdict(
                [hosts[n] for n in unit.nodes],
                unit.grain,
                unit.rail,
                list(unit.switches),
                unit.measurements,
                unit.slow,
                unit.busbw,
                unit.ratio,
                unit.why,
                unit.margin,
                line,
            )
            for unit, line in zip(verdict.inconclusive, iso.inconclusive_lines(), strict=True)
        ]
        fill_record(record, verdict, iso.grains, hosts)
        record.matrix = [(hosts[a], hosts[b], busbw) for (a, b), busbw in sorted(verdict.matrix.items())]
    return record


def to_plain(iso: IsolateOutcome) -> dict[str, Any]:
    """The verdict as `isolate report --format json` prints it: isolate.json's content."""
    plain: dict[str, Any] = msgspec.to_builtins(verdict_record(iso))
    return plain


def plot_matrix(iso: IsolateOutcome, path: Path) -> None:
    from jobs.inspect.plot import pyplot

    plt = pyplot()
    n = len(iso.hosts)
    matrix = iso.verdict.matrix if iso.verdict else {}
    grid = [[matrix.get((min(i, j), max(i, j)), math.nan) for j in range(n)] for i in range(n)]
    figure, axes = plt.subplots(figsize=(2 + 0.45 * n, 1.5 + 0.45 * n) if n <= 32 else (12, 11))
    image = axes.imshow(grid, cmap="viridis", interpolation="nearest")
    figure.colorbar(image, ax=axes, label="busbw (GB/s)")
    if n <= 32:
        axes.set_xticks(range(n), iso.hosts, rotation=90)
        axes.set_yticks(range(n), iso.hosts)
    axes.set_title(f"collbench isolate {iso.run_id}", fontsize=9)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
