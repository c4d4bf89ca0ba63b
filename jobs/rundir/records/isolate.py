"""collbench isolate's records: isolate/plan.json and isolate/rounds.jsonl (rank 0, while the job runs),
and isolate.json, the verdict (written once, by the first wait or report after the job ended)."""

from __future__ import annotations

from dataclasses import dataclass, field

from jobs.rundir.records.codec import Format, Plain
from jobs.rundir.records.findings import Finding

PLAN_VERSION = 4


@dataclass(kw_only=True, slots=True)
class IsolatePlan:
    """isolate/plan.json."""

    mode: str
    """pairs, random or bisect (isolate.mode resolved for the node count)."""
    hosts: list[str]
    """Node index -> host, in the job's node order."""
    ranks: list[list[int]]
    """Node index -> its global ranks."""
    started: float
    rails: list[int] = field(default_factory=lambda: [-1])
    """The rails each node group was measured on, one group a rail, all at once; [-1]: one group of every rank
    of its nodes (not rail-aligned, and every plan before format 3)."""
    confirm_rounds: int | None = None
    """The rounds the planner may add after its plan to measure suspects again (format 4); None in a plan
    before it, where check measured nothing again and pairs and random took isolate.confirm_rounds."""
    version: int = PLAN_VERSION
    """The format of this file."""


@dataclass(frozen=True, slots=True)
class GroupFigure:
    """One group of a round: its nodes (hosts) and its figure."""

    nodes: list[str]
    busbw: float
    """The best busbw (GB/s) over the group's sizes."""
    rail: int = -1
    """The rail whose ranks the group held; -1: every rank of its nodes."""


ROUND_VERSION = 3


@dataclass(kw_only=True, slots=True)
class IsolateRound:
    """One line of isolate/rounds.jsonl: a round every group of which finished."""

    round: int
    groups: list[GroupFigure]
    seconds: float
    """How long the round took, group creation to shared figures."""
    version: int = ROUND_VERSION
    """The format of this line."""


def _same(plain: Plain) -> Plain:
    return plain


ISOLATE_PLAN = Format(
    "isolate/plan.json", IsolatePlan, PLAN_VERSION, {1: _same, 2: _same, 3: _same, 4: _same}, pretty=True
)
ISOLATE_ROUND = Format("isolate/rounds.jsonl line", IsolateRound, ROUND_VERSION, {1: _same, 2: _same, 3: _same})


@dataclass(frozen=True, slots=True)
class StoppedNode:
    """A node that stopped answering during the test."""

    host: str
    how: str
    """The rank on it and how it ended."""


@dataclass(frozen=True, slots=True)
class RoundGroup:
    """A group measured: its round, its nodes (hosts) and its figure."""

    round: int
    nodes: list[str]
    busbw: float
    rail: int = -1
    """The rail whose ranks the group held; -1: every rank of its nodes."""


@dataclass(frozen=True, slots=True)
class NodeVerdict:
    """One node's figures against the healthy level."""

    host: str
    node: int
    """Its index in the job's node order."""
    measurements: int
    slow: int
    """Measurements below the level's tolerance."""
    median_busbw: float
    ratio: float
    """median busbw / the healthy level."""
    rail: int = -1
    """The rail these figures are of (in `units`); -1: the node over all its rails."""


@dataclass(frozen=True, slots=True)
class LinkVerdict:
    """A slow pair whose two nodes are healthy with the others."""

    nodes: list[str]
    busbw: float
    ratio: float
    rail: int = -1
    """The rail it is slow on; -1: every rank of the two nodes (node grain)."""


@dataclass(frozen=True, slots=True)
class RailVerdict:
    """One rail of one node slow while its other rails are healthy: that NIC, its cable or its switch port."""

    host: str
    node: int
    rail: int
    nic: str
    """The rail's HCA or interface (rails.hcas, rails.interfaces), empty when the config names none."""
    measurements: int
    slow: int
    median_busbw: float
    ratio: float
    healthy_rails: list[int]


@dataclass(frozen=True, slots=True)
class SwitchVerdict:
    """A slow link between switches: every pair across it slow, every node healthy within its own leaf."""

    switches: list[str]
    """[a, b]: the link between leaves a and b; [a]: a's uplink; []: no topology, the matrix shows a cut."""
    rail: int
    """The rail it is on; -1: every rail measured (or node grain)."""
    sides: list[list[str]]
    """The hosts on each side: behind the link, none of them drained for it."""
    measurements: int
    slow: int
    busbw: float
    ratio: float
    line: str
    """The verdict's line for it, as printed."""


@dataclass(frozen=True, slots=True)
class InconclusiveVerdict:
    """A unit the evidence could not settle (jobs.isolate.verdict.Inconclusive): neither bad nor healthy, no
    finding, no drain, no exclude."""

    hosts: list[str]
    """The node (grain node or rail), the pair (link), or the nodes on the suspect side (switch_link)."""
    grain: str
    """node, rail, switch_link or link."""
    rail: int
    """The rail it is on; -1: a node, or a switch link suspected on every rail."""
    switches: list[str]
    """switch_link only: the leaves ([a, b], [a] its uplink; empty with no topology)."""
    measurements: int
    slow: int
    busbw: float
    ratio: float
    why: str
    """spread, few_partners, suspect_partners, once, same_partner or maybe_cut (docs/isolate.md)."""
    margin: float
    """How much better (log-likelihood, nats) the explanation with this fault is than the best without it."""
    line: str
    """The verdict's INCONCLUSIVE line for it, as printed, with the command that would settle it."""


VERDICT_VERSION = 5


@dataclass(kw_only=True, slots=True)
class IsolateVerdict:
    """isolate.json."""

    run_id: str
    mode: str
    hosts: list[str]
    rounds: list[RoundGroup]
    """Every group measured, round by round."""
    round_seconds: list[float]
    unfinished: list[list[str]]
    """The groups (hosts) of the round the run stopped in that have no figure."""
    found: bool
    """A bad node or link named, or a node stopped answering (confirmed faults only: never an inconclusive unit)."""
    stopped: list[StoppedNode]
    exclude: str
    """The slurm.exclude override that leaves the bad nodes out, empty when none."""
    drain: str
    """The scontrol line an admin would run to drain them."""
    problems: list[str]
    level: float | None = None
    """The healthy level (GB/s); None, like the rest below, when not one round finished."""
    spread: float | None = None
    tolerance: float | None = None
    nodes: list[NodeVerdict] = field(default_factory=list)
    bad_nodes: list[str] = field(default_factory=list)
    bad_links: list[LinkVerdict] = field(default_factory=list)
    unconfirmed: list[LinkVerdict] = field(default_factory=list)
    """Pairs slow in one figure only, never confirmed by a second while confirmation was on: no finding,
    no drain."""
    notes: list[str] = field(default_factory=list)
    matrix: list[tuple[str, str, float]] = field(default_factory=list)
    """Every pair measured: (host, host, busbw), the slowest rail's figure when rail-aligned."""
    rails: list[int] = field(default_factory=lambda: [-1])
    """The rails measured, one group a rail; [-1]: not rail-aligned."""
    nics: list[str] = field(default_factory=list)
    """Rail -> its HCA or interface, as the config names them."""
    leaves: dict[str, str] = field(default_factory=dict)
    """Host -> its leaf switch, when the topology was known."""
    topology: str = ""
    """Where the leaves came from (slurm topology/tree, config topology.switches), empty when unknown."""
    units: list[NodeVerdict] = field(default_factory=list)
    """Every (node, rail) measured, judged on its rail's measurements (empty when not rail-aligned)."""
    bad_rails: list[RailVerdict] = field(default_factory=list)
    switch_faults: list[SwitchVerdict] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    """Every node, rail, link and switch link named, each with its reason code (jobs.isolate.reasons):
    what a drain reason, the history and the exports carry."""
    inconclusive: list[InconclusiveVerdict] = field(default_factory=list)
    """The units the evidence could not settle (format 5; none before): no finding, no drain, no exclude."""
    noise: float = 0.0
    """The healthy figures' relative spread the verdict judged with (format 5; 0 before)."""
    exit_code: int = 0
    """The verdict's exit status (format 5; before it, 0 or 1 as `found` and `problems` say): 5 when nothing is
    confirmed bad, the run had no problem and a unit is inconclusive."""
    version: int = VERDICT_VERSION
    """The format of this file."""


def _exit_code_of(plain: Plain) -> Plain:
    """Format 4 to 5: no unit was inconclusive then; its exit status is what found and problems said."""
    failed = plain.get("found") or plain.get("problems") or plain.get("level") is None
    return {**plain, "exit_code": 1 if failed else 0}


ISOLATE_VERDICT = Format(
    "isolate.json", IsolateVerdict, VERDICT_VERSION, {1: _same, 2: _same, 3: _same, 4: _exit_code_of}, pretty=True
)
