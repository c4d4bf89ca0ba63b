"""A node's drift from its own past: its level in each isolate and check run (the median busbw of the pairs it
was in, over every rail: its `isolate_nodes` row with rail NULL), and the latest against the median of its own
last healthy runs, in median absolute deviations. A node that slowly falls, still above the verdicts' fixed
tolerance (a ratio to the run's level over 1 - isolate.tolerance), is named here and by no verdict.

Like with like: a node's levels compare only within one comparable set (cluster, config fingerprint, node count,
world size: queries.SeriesKey), so it is judged within the set of its latest run. Healthy for the node: the run
named nothing of it (a bad node, rail or link, a failure blamed on it, slow at its own work, wrong elements, a
fabric finding naming it: node_record's verdict events), it was behind no slow switch link, and nothing in the run
lowered every node's figures (an injected fault, a failure blamed on another node, a fabric finding naming no
host). Another node named bad does not spoil the run for this one: its level is a median over its pairs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import select

from jobs.history import schema
from jobs.history.against import MADS, MIN_BASELINE_RUNS, median_mad
from jobs.history.database import History
from jobs.history.node_record import verdict_events
from jobs.history.queries import Row, SeriesKey, in_chunks

LAST = 10
"""The baseline: the node's last this many healthy runs before the latest."""
MAD_FLOOR = 0.01
"""The MAD a drift is counted in is at least this fraction of the median: a figure that repeated exactly over a
few runs (MAD 0) would otherwise be named for any drop. Pair busbw on a quiet fabric repeats within about 1%,
so a drop of more than 3% (3 MAD at the floor) is the least a node is named for."""
BEHIND = "behind switch link"
"""node_record's event for a node behind a slow switch link: not named, but its pairs across it were slow."""


@dataclass(frozen=True, slots=True)
class NodeLevel:
    """The node's level in one run: the median busbw of its pairs (GB/s) and its ratio to the run's level."""

    run_id: str
    started: float
    task: str
    busbw: float
    ratio: float
    named: bool
    """The run's verdict named the node (bad node, rail or link, failure, slow host, wrong elements, fabric)."""
    left_out: str = ""
    """Why the run is not in the node's baseline ('' for a healthy run for it)."""

    @property
    def healthy(self) -> bool:
        return not self.left_out

    def to_plain(self) -> Row:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class NodeSeries:
    """The node's levels in the comparable set of its latest run, oldest first, and how many of its runs are
    of other sets (not compared)."""

    host: str
    key: SeriesKey
    levels: list[NodeLevel]
    others: int


@dataclass(frozen=True, slots=True)
class NodeDrift:
    """The node's latest level against the median and MAD of its own last healthy runs before it."""

    host: str
    key: SeriesKey
    latest: NodeLevel
    median: float
    """0.0 with no healthy run before the latest."""
    mad: float
    """The median absolute deviation itself; mads_below counts in max(mad, MAD_FLOOR x median)."""
    runs: int
    """Healthy runs the baseline is taken over."""
    mads_below: float
    """(median - latest.busbw) / max(MAD, MAD_FLOOR x median): positive below the median; 0 when not judged."""
    drifted: bool
    """mads_below > k with at least `minimum` runs."""
    enough: bool
    """At least `minimum` healthy runs: judged."""
    against: tuple[str, ...] = ()
    """The baseline's run ids, oldest first."""
    k: float = MADS
    minimum: int = MIN_BASELINE_RUNS

    def to_plain(self) -> Row:
        plain = asdict(self)
        plain["key"] = self.key.to_plain()
        plain["latest"] = self.latest.to_plain()
        plain["against"] = list(self.against)
        return plain


def node_levels(history: History, host: str) -> list[NodeLevel]:
    """The node's level in each isolate and check run of the comparable set of its latest one, oldest first."""
    found = node_series(history, host)
    return found.levels if found else []


def node_series(history: History, host: str) -> NodeSeries | None:
    """The node's levels in the comparable set of its latest run; None when no isolate or check run measured it."""
    rows = _level_rows(history, host)
    if not rows:
        return None
    key = _key(rows[-1])
    mine = [row for row in rows if _key(row) == key]
    spoiled = _spoiled(history, host, [row["id"] for row in mine])
    levels = [
        NodeLevel(row["run_id"], row["started"], row["task"], float(row["median_busbw"]), float(row["ratio"]),
                  row["run_id"] in spoiled.named, spoiled.why.get(row["run_id"], ""))
        for row in mine
    ]  # fmt: skip
    return NodeSeries(host, key, levels, len(rows) - len(mine))


def node_drift(
    history: History, host: str, k: float = MADS, last: int = LAST, minimum: int = MIN_BASELINE_RUNS
) -> NodeDrift | None:
    """The node's latest level against its own last `last` healthy runs before it (of the same comparable set);
    drifted beyond `k` MAD below their median with at least `minimum` of them. None when no run measured it."""
    found = node_series(history, host)
    return drift_of(found, k, last, minimum) if found else None


def drift_of(found: NodeSeries, k: float = MADS, last: int = LAST, minimum: int = MIN_BASELINE_RUNS) -> NodeDrift:
    """The judgement over levels already read: the latest against the healthy ones before it."""
    *before, latest = found.levels
    past = [level for level in before if level.healthy][-last:]
    values = [level.busbw for level in past]
    centre, mad = median_mad(values) if values else (0.0, 0.0)
    enough = len(past) >= minimum
    below = mads_below(latest.busbw, centre, mad) if enough else 0.0
    return NodeDrift(
        host=found.host, key=found.key, latest=latest, median=centre, mad=mad, runs=len(past), mads_below=below,
        drifted=enough and below > k, enough=enough, against=tuple(level.run_id for level in past), k=k,
        minimum=minimum,
    )  # fmt: skip


def mads_below(value: float, centre: float, mad: float) -> float:
    """How many MADs `value` is below `centre` (negative above it), the MAD floored at MAD_FLOOR x centre."""
    scale = max(mad, MAD_FLOOR * abs(centre))
    return (centre - value) / scale if scale > 0 else 0.0


def _level_rows(history: History, host: str) -> list[Any]:
    """Every run's row of the node over all its rails, with the run's identity, oldest first."""
    runs, nodes = schema.runs.c, schema.isolate_nodes.c
    query = (
        select(runs.id, runs.run_id, runs.started, runs.task, runs.cluster, runs.config, runs.nodes, runs.world_size,
               runs.excluded, nodes.median_busbw, nodes.ratio)
        .join(schema.isolate_nodes, nodes.run == runs.id)
        .where(nodes.host == host, nodes.rail.is_(None))
        .order_by(runs.started, runs.run_id)
    )  # fmt: skip
    with history.engine.connect() as connection:
        return list(connection.execute(query).mappings())


def _key(row: Any) -> SeriesKey:
    return SeriesKey(row["cluster"], row["config"], row["nodes"], row["world_size"])


@dataclass(frozen=True, slots=True)
class _Spoiled:
    named: set[str]
    """Runs whose verdict named the node."""
    why: dict[str, str]
    """Run id -> why it is not in the node's baseline."""


def _spoiled(history: History, host: str, keys: Sequence[int]) -> _Spoiled:
    """Which of the runs (runs.id `keys`) named the node, and why each run left out of its baseline is."""
    why: dict[str, str] = {}
    named: set[str] = set()
    for event in verdict_events(history, host):  # what collbench did after a verdict is no verdict
        if event.what != BEHIND:
            named.add(event.run_id)
        why.setdefault(event.run_id, "behind a slow switch link" if event.what == BEHIND else f"named: {event.what}")
    for run_id, reason in _run_wide(history, host, keys).items():
        why.setdefault(run_id, reason)
    return _Spoiled(named, why)


INJECTED = "injected fault"
"""How runs.excluded begins for a run with an injected fault (jobs.history.health: the faults come first)."""


def _run_wide(history: History, host: str, keys: Sequence[int]) -> dict[str, str]:
    """What lowered every node's figures in a run: an injected fault, a failure blamed on another node, a fabric
    finding that names no host."""
    runs, hosts, fabric = schema.runs.c, schema.hosts.c, schema.fabric.c
    why: dict[str, str] = {}
    with history.engine.connect() as connection:
        for chunk in in_chunks(list(keys)):
            for run_id, excluded in connection.execute(select(runs.run_id, runs.excluded).where(runs.id.in_(chunk))):
                if excluded.startswith(INJECTED):
                    why.setdefault(run_id, excluded.split("; ")[0])
            failed = select(runs.run_id, hosts.host).join(schema.hosts, hosts.run == runs.id)
            failed = failed.where(runs.id.in_(chunk), hosts.blamed_ranks > 0, hosts.host != host)
            for run_id, other in connection.execute(failed.order_by(hosts.host)):
                why.setdefault(run_id, f"a failure blamed on {other}")
            hostless = select(runs.run_id, fabric.kind).join(schema.fabric, fabric.run == runs.id)
            for run_id, kind in connection.execute(hostless.where(runs.id.in_(chunk), fabric.host == "")):
                why.setdefault(run_id, f"a fabric {kind} naming no host")
    return why
