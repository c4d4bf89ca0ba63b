"""An isolate or check run's own sections: the pair matrix as a heatmap with the named nodes and links
marked, what was named with its reason code, the exclude and drain lines, and the groups measured (every
one on a small run, the slowest beyond GROUPS_ALL_UP_TO)."""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup

from jobs.config.model import Config
from jobs.inspect.check_verdict import CheckOutcome, verdict_lines
from jobs.inspect.html.heatmap import PairMatrix, heatmap_svg
from jobs.inspect.isolate_text import lines as isolate_lines
from jobs.inspect.isolate_verdict import IsolateOutcome
from jobs.isolate.drain_plan import verdict_drains
from jobs.isolate.reasons import Finding
from jobs.isolate.verdict import EVERY_RAIL, rail_name
from slurm.hostlist import readable_hostlist

GROUPS_ALL_UP_TO = 100
"""Up to this many groups every one is listed; beyond, the GROUPS_SLOWEST slowest."""
GROUPS_SLOWEST = 50


@dataclass(frozen=True, slots=True)
class GroupRow:
    round: int
    nodes: str
    rail: str
    busbw: str
    share: str
    """Of the healthy level, or '' when there is none."""
    slow: bool


@dataclass(frozen=True, slots=True)
class PairSection:
    title: str
    """The section's heading: a check's pairs, or isolate's pair matrix."""
    vets: bool
    """The verdict vets and cordons (a check's: a CheckOutcome came with it), or finds (isolate's)."""
    heatmap: Markup | None
    named_hosts: list[str]
    """Every node the verdict named."""
    marked: list[str]
    """The hosts marked on the heatmap: the nodes named, and the two ends of each link named."""
    findings: list[Finding]
    """Every node, rail, link and switch link named, each with its reason code."""
    exclude: str
    drain: list[str]
    verdict_text: list[str]
    """The verdict as the terminal prints it."""
    inconclusive: list[str]
    """One INCONCLUSIVE line per unit the verdict could not settle (neither named nor drained)."""
    undecided: list[str]
    """The hosts marked inconclusive on the heatmap: the nodes (or rails) and the two ends of each link."""
    groups: list[GroupRow]
    groups_total: int


def pair_section(iso: IsolateOutcome, cfg: Config, check: CheckOutcome | None = None) -> PairSection:
    """`check`: the run is collbench check's, judged as check judges it (its cordoned nodes are the named)."""
    findings = check.verdict.findings() if check is not None else iso.findings()
    hosts = set(iso.hosts)
    named_hosts = list(dict.fromkeys(f.host for f in findings if f.host in hosts))
    if check is not None:
        text = verdict_lines(check, sum(iso.seconds), cfg.check.budget_s)
        inconclusive = check.verdict.inconclusive_lines
        cordoned = [node.host for node in check.verdict.cordoned]
        exclude = f"slurm.exclude={readable_hostlist(cordoned)}" if cordoned else ""
        drain = verdict_drains(findings, "check", check.run_id)
    else:
        text = isolate_lines(iso, cfg.isolate.op, cfg.isolate.sizes)
        exclude, drain = iso.exclude(), iso.drain().splitlines()
        inconclusive = iso.inconclusive_lines()
    matrix = pair_matrix(iso, named_hosts)
    undecided = {*matrix.undecided_nodes, *(node for link in matrix.undecided_links for node in link)}
    return PairSection(
        title="The check's pairs" if check is not None else "The pair matrix",
        vets=check is not None,
        heatmap=heatmap_svg(matrix, f"{iso.rounds.mode} {iso.run_id}: busbw of each pair"),
        named_hosts=named_hosts,
        marked=list(dict.fromkeys([*named_hosts, *(iso.hosts[node] for link in matrix.named_links for node in link)])),
        findings=findings,
        exclude=exclude,
        drain=drain,
        verdict_text=text,
        inconclusive=inconclusive,
        undecided=[iso.hosts[node] for node in sorted(undecided)],
        groups=group_rows(iso),
        groups_total=len(iso.rounds.measured),
    )


def pair_matrix(iso: IsolateOutcome, named_hosts: list[str]) -> PairMatrix:
    verdict = iso.verdict
    index = {host: node for node, host in enumerate(iso.hosts)}
    named = {index[host]: host for host in named_hosts}
    links: list[tuple[int, int]] = []
    undecided: dict[int, str] = {}
    undecided_links: list[tuple[int, int]] = []
    if verdict is not None:
        for fault in verdict.bad_rails:
            named[fault.node] = f"{iso.hosts[fault.node]} {rail_name(fault.rail, iso.grains.nics)}"
        links = [(link.nodes[0], link.nodes[1]) for link in verdict.bad_links if len(link.nodes) == 2]
        for unit in verdict.inconclusive:
            if unit.grain == "link" and len(unit.nodes) == 2:
                undecided_links.append((min(unit.nodes), max(unit.nodes)))
            elif unit.grain in ("node", "rail"):
                on = f" {rail_name(unit.rail, iso.grains.nics)}" if unit.grain == "rail" else ""
                undecided.update({node: f"{iso.hosts[node]}{on}?" for node in unit.nodes if node not in named})
    return PairMatrix(
        hosts=iso.hosts,
        cells=verdict.matrix if verdict is not None else {},
        level=verdict.level if verdict is not None else 0.0,
        leaves=iso.grains.leaves,
        named_nodes=named,
        named_links=links,
        undecided_nodes=undecided,
        undecided_links=undecided_links,
    )


def group_rows(iso: IsolateOutcome) -> list[GroupRow]:
    measured = iso.rounds.measured
    level = iso.verdict.level if iso.verdict is not None else 0.0
    threshold = level * (1 - iso.verdict.tolerance) if iso.verdict is not None else 0.0
    shown = measured if len(measured) <= GROUPS_ALL_UP_TO else sorted(measured, key=lambda m: m.busbw)[:GROUPS_SLOWEST]
    return [
        GroupRow(
            round=m.round,
            nodes=" ".join(iso.hosts[node] for node in m.nodes),
            rail="" if m.rail == EVERY_RAIL else rail_name(m.rail, iso.grains.nics),
            busbw=f"{m.busbw:.4g}",
            share=f"{m.busbw / level:.2f}" if level > 0 else "",
            slow=m.busbw < threshold,
        )
        for m in shown
    ]
