"""A run (or every run of a sweep) as Prometheus metrics, built with prometheus_client: for node_exporter's
textfile collector (written whole, then renamed into place) or a Pushgateway.

Conventions (docs/exports.md has the list): one prefix, `collbench_`; base units in the names (seconds,
bytes, bytes per second; ratios as ratios); labels of low cardinality. Every series carries `cluster` and
`config`, which are also the Pushgateway's grouping key (one group per cluster and config, replaced whole
by the next push of the same config: no stale series, and never one group per node). What changes with
every run (run id, Slurm job id) is on `collbench_run_info` alone. Where a label means what DCGM's or NCCL
Inspector's means it has their name and values: `hostname`, `slurm_job_id`, `collective` (NCCL's names:
AllReduce, AllGather, ...), `message_size` (Inspector's "1.00MB"; the exact bytes in `message_size_bytes`).

Reads the run directory only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from collectives.results import SummaryRow
from jobs.config.fingerprint import config_fingerprint
from jobs.inspect.isolate_verdict import assess_isolate, verdict_record
from jobs.inspect.report import RunOutcome, assess
from jobs.isolate.naming import switches_name
from jobs.rundir.layout import RunDir, read_json
from jobs.rundir.records.codec import RecordError
from jobs.rundir.records.drains import DRAINS
from jobs.rundir.records.findings import Finding
from jobs.rundir.records.isolate import ISOLATE_VERDICT, IsolateVerdict, SwitchVerdict
from slurm.hostlist import readable_hostlist

PREFIX = "collbench_"
JOB = "collbench"
"""The Pushgateway's `job` label."""

GB = 1e9
"""collbench's table is in GB/s of 1e9 bytes, as nccl-tests'."""

COLLECTIVES = {
    "all_reduce": "AllReduce",
    "all_gather": "AllGather",
    "reduce_scatter": "ReduceScatter",
    "broadcast": "Broadcast",
    "reduce": "Reduce",
    "all_to_all": "AllToAll",
    "gather": "Gather",
    "scatter": "Scatter",
    "sendrecv": "SendRecv",
}
"""collbench's op -> NCCL's name for it, as NCCL Inspector's `collective` label writes it (ncclFuncToString)."""

GROUP = ("cluster", "config")
ROW = (*GROUP, "collective", "message_size", "message_size_bytes", "placement", "root")
NODE = (*GROUP, "hostname", "leaf")
"""`leaf`: the node's leaf switch, '' when the topology is not known."""
NODE_VERDICTS = ("healthy", "slow", "slow_rail", "stopped", "inconclusive")
"""`inconclusive`: the node, or one of its rails, the evidence could not settle (neither bad nor healthy)."""
NODE_PAST = (*GROUP, "hostname")
RAIL = (*GROUP, "hostname", "rail", "hca")
"""`hca`: the rail's HCA or interface as rails.hcas / rails.interfaces name it, '' when they name none."""
RAIL_VERDICTS = ("healthy", "slow", "inconclusive")
INCONCLUSIVE = (*GROUP, "hostname", "grain", "rail", "why")
"""`hostname`: the node, a link 'a-b', a switch link ('s1-s2', 's1 uplink') or, with no topology, the hosts on its
suspect side; `grain`: node, rail, switch_link or link; `rail`: '' for a node or a switch link on every rail;
`why`: spread, few_partners, suspect_partners, once, same_partner or maybe_cut."""
SWITCH = (*GROUP, "switch", "rail")
"""`rail`: '' when the link is slow on every rail (or the verdict is not rail-aligned)."""


@dataclass(frozen=True, slots=True)
class RowBaseline:
    """The results history's baseline of one exported row: the busbw (GB/s) median and median absolute
    deviation of the same row in the last healthy runs comparable to the run (the history's rules:
    jobs/history/export_baseline.py), and how many runs that is (0: none; median and MAD then unknown)."""

    median: float | None
    mad: float | None
    runs: int


BaselineKey = tuple[str, str, str, int, int, bool]
"""An exported row as the history keys it: (op, dtype, reduce op, root, requested size, in place)."""


@dataclass(frozen=True, slots=True)
class NodePast:
    """A node's level in this run (the median busbw of its pairs, GB/s) against its own past healthy runs in
    the results history (jobs/history/node_drift.py): their median (None: no healthy run before), and how
    many MADs below it the level is (positive: below; None: too few runs to judge)."""

    level: float
    median: float | None
    mads_below: float | None
    runs: int


@dataclass(frozen=True, slots=True)
class HistoryFigures:
    """What the results history says of one run: each row's baseline, and each node's past (isolate, check)."""

    rows: Mapping[BaselineKey, RowBaseline]
    nodes: Mapping[str, NodePast]


Baselines = Callable[[RunDir, RunOutcome, Mapping[str, float]], HistoryFigures | None]
"""A run's history figures, from a history the caller opens, given the run's own node levels (host -> GB/s;
empty for a run that is not isolate's or check's). None: no history to ask; no series then."""


def baseline_key(row: SummaryRow) -> BaselineKey:
    return (row.op, row.dtype, row.redop, row.root, row.requested_size, row.in_place)


class ExportError(ValueError):
    """An export that could not be done: one line naming the value and why (exit 2)."""


def message_size(size: int) -> str:
    """NCCL Inspector's message_size label: two decimals and B, KB, MB, GB, TB (powers of 1024)."""
    value = float(size)
    units = ("B", "KB", "MB", "GB", "TB")
    index = 0
    while value >= 1024 and index < len(units) - 1:
        value /= 1024
        index += 1
    return f"{value:.2f}{units[index]}"


@dataclass(slots=True)
class _Families:
    """Metric families by name, filled run by run: the same name from several runs is one family."""

    families: dict[str, GaugeMetricFamily] = field(default_factory=dict)

    def add(self, name: str, doc: str, labels: Sequence[str], values: Sequence[str], value: float) -> None:
        family = self.families.get(name)
        if family is None:
            family = self.families[name] = GaugeMetricFamily(PREFIX + name, doc, labels=list(labels))
        family.add_metric(list(values), value)


class _Collected(Collector):
    def __init__(self, families: _Families) -> None:
        self._families = families

    def collect(self) -> Iterator[Metric]:
        yield from self._families.families.values()


@dataclass(frozen=True, slots=True)
class RunMetrics:
    """One run's metrics and its Pushgateway group."""

    run: RunDir
    grouping_key: dict[str, str]
    registry: CollectorRegistry


def default_cluster(run: RunDir) -> str:
    """Slurm's cluster name as rank 0 saw it (SLURM_CLUSTER_NAME), else "local"."""
    variables = _rank0_variables(run)
    return str(variables.get("SLURM_CLUSTER_NAME") or "local")


def _rank0_variables(run: RunDir) -> dict[str, object]:
    try:
        variables = read_json(run.rank_env(0)).get("variables", {})
    except (OSError, ValueError):
        return {}
    return variables if isinstance(variables, dict) else {}


def default_config_label(outcome: RunOutcome) -> str:
    """What was measured, in a short stable name: task, backend, nodes and ranks, and the config's
    fingerprint (the history's `config` column), so two runs of one config share a group and a series
    joins the history's runs of that config."""
    cfg = outcome.config
    return f"{cfg.task}-{cfg.backend}-{cfg.nodes}n{cfg.world_size}r-{config_fingerprint(cfg)}"


def run_metrics(
    run: RunDir,
    cluster: str | None = None,
    config_label: str | None = None,
    outcome: RunOutcome | None = None,
    baselines: Baselines | None = None,
) -> RunMetrics:
    """One run's metrics and its grouping key; `outcome`: the run's, when the caller has read it already;
    `baselines`: where each row's history baseline comes from (None: no baseline series)."""
    families = _Families()
    key = add_run(families, run, cluster, config_label, outcome, baselines)
    registry = CollectorRegistry(auto_describe=True)
    registry.register(_Collected(families))
    return RunMetrics(run, key, registry)


def registry_of(
    runs: Sequence[RunDir],
    cluster: str | None = None,
    config_label: str | None = None,
    baselines: Baselines | None = None,
) -> CollectorRegistry:
    """Every run's metrics in one registry (a textfile, or stdout)."""
    families = _Families()
    for run in runs:
        add_run(families, run, cluster, config_label, baselines=baselines)
    registry = CollectorRegistry(auto_describe=True)
    registry.register(_Collected(families))
    return registry


def add_run(
    families: _Families,
    run: RunDir,
    cluster: str | None,
    config_label: str | None,
    outcome: RunOutcome | None = None,
    baselines: Baselines | None = None,
) -> dict[str, str]:
    """Add one run's metrics; its grouping key (cluster, config)."""
    outcome = outcome or assess(run)
    record = isolate_record(run, outcome) if outcome.config.spec.in_rounds else None
    levels = {node.host: node.median_busbw for node in record.nodes} if record is not None else {}
    known = baselines(run, outcome, levels) if baselines is not None else None
    cfg = outcome.config
    group = [cluster or default_cluster(run), config_label or default_config_label(outcome)]
    add = families.add
    meta = run.read_meta()
    job_id = meta.job_id if meta.launcher in ("slurm", "slurm-step") else ""  # a local run's job id is a pid
    add(
        "run_info",
        "The run behind this cluster and config's figures: its id, Slurm job id, launcher, backend and task.",
        (*GROUP, "run_id", "slurm_job_id", "launcher", "backend", "task"),
        (*group, run.run_id, job_id, str(meta.launcher), cfg.backend, cfg.task),
        1.0,
    )
    add("run_ended", "1 when every rank has recorded its end (the verdict will not change).", GROUP, group,
        float(outcome.ended))  # fmt: skip
    add("run_success", "1 when the run passed every check (no failed rank, no #wrong, complete rows).", GROUP, group,
        float(outcome.passed))  # fmt: skip
    add("run_problems", "Problems the verdict names (failed ranks, wrong results, missing rows).", GROUP, group,
        float(len(outcome.problems)))  # fmt: skip
    wrong = sum(row.wrong for row in outcome.rows if row.wrong > 0)
    add("run_wrong_elements", "Wrong output elements over every measurement and rank (#wrong).", GROUP, group,
        float(wrong))  # fmt: skip
    add("run_ranks", "Ranks in the job.", GROUP, group, float(cfg.world_size))
    add("run_nodes", "Nodes in the job.", GROUP, group, float(meta.nodes))
    statuses = outcome.statuses.values()
    if statuses:
        add("run_start_time_seconds", "When the first rank started, seconds since the epoch.", GROUP, group,
            min(s.started for s in statuses))  # fmt: skip
        add("run_end_time_seconds", "When the last rank last recorded its state, seconds since the epoch.", GROUP,
            group, max(s.updated for s in statuses))  # fmt: skip
    if outcome.setup is not None:
        add("setup_slowest_seconds", "The process group's set-up time on its slowest rank.", GROUP, group,
            outcome.setup.slowest_s)  # fmt: skip
        add("setup_median_seconds", "The process group's set-up time, median over the ranks.", GROUP, group,
            outcome.setup.median_s)  # fmt: skip
        if outcome.setup.connect_ranks:
            add("setup_connect_slowest_seconds", "The first collective's time on its slowest rank (NCCL makes its "
                "connections there).", GROUP, group, outcome.setup.connect_slowest_s)  # fmt: skip
            add("setup_connect_median_seconds", "The first collective's time, median over the ranks.", GROUP, group,
                outcome.setup.connect_median_s)  # fmt: skip
    for row in outcome.rows:
        if row.group:  # collbench isolate's rounds of node groups: its verdict below stands for them
            continue
        labels = (*group, COLLECTIVES.get(row.op, row.op), message_size(row.size), str(row.size),
                  "in_place" if row.in_place else "out_of_place", str(row.root))  # fmt: skip
        add("bus_bandwidth_bytes_per_second", "Bus bandwidth (nccl-tests' busbw) per collective, size and placement.",
            ROW, labels, row.busbw * GB)  # fmt: skip
        add("algorithm_bandwidth_bytes_per_second", "Algorithm bandwidth (nccl-tests' algbw).", ROW, labels,
            row.algbw * GB)  # fmt: skip
        add("collective_time_seconds", "Time per call, the ranks' times combined as bench.average says.", ROW,
            labels, row.time_us / 1e6)  # fmt: skip
        if row.wrong >= 0:
            add("wrong_elements", "Wrong output elements (#wrong), summed over the ranks.", ROW, labels,
                float(row.wrong))  # fmt: skip
        if known is not None:
            _add_baseline(families, labels, known.rows.get(baseline_key(row), NO_BASELINE))
    if record is not None:
        add_isolate_verdict(families, record, group)
        _add_findings(families, record.findings, group)
    _add_drains(families, run, group)
    if known is not None:
        _add_node_past(families, known.nodes, group)
    return dict(zip(GROUP, group, strict=True))


def isolate_record(run: RunDir, outcome: RunOutcome) -> IsolateVerdict:
    """The verdict as isolate.json recorded it once the run ended (what the history holds too), else as the run
    reads now (running, or its isolate.json unreadable)."""
    try:
        recorded = ISOLATE_VERDICT.read_if_any(run.isolate_verdict)
    except (OSError, RecordError):
        recorded = None
    return recorded if recorded is not None else verdict_record(assess_isolate(run, outcome))


NO_BASELINE = RowBaseline(None, None, 0)
FINDING = (*GROUP, "hostname", "code")
"""`hostname`: the node, a link 'a-b', or a switch link ('s1-s2', 's1 uplink'); `code`: its reason code."""


def _add_findings(families: _Families, findings: Sequence[Finding], group: Sequence[str]) -> None:
    for finding in findings:
        families.add("finding", "1 for each node, link or switch link the run's verdict named, with its reason code "
                     "(slow_node, slow_rail, slow_link, node_stopped, setup_failed, fabric_failed, wrong_result).",
                     FINDING, (*group, finding.host, finding.code), 1.0)  # fmt: skip


def _add_drains(families: _Families, run: RunDir, group: Sequence[str]) -> None:
    """What collbench did to the nodes after this run (drains.json, once the command that ran it applied its
    verdict): 1 per node and code it drained, 0 per node it resumed."""
    try:
        record = DRAINS.read_if_any(run.drains_file)
    except (OSError, RecordError):
        return
    for step in record.steps if record is not None else []:
        if step.done and step.action in ("drain", "resume"):
            for code in step.codes:
                families.add("node_drained", "1 for each node collbench drained after this run (by reason code), 0 "
                             "for each it resumed.", FINDING, (*group, step.host, code),
                             float(step.action == "drain"))  # fmt: skip


def _add_baseline(families: _Families, labels: Sequence[str], found: RowBaseline) -> None:
    """The history's baseline of one row beside its busbw: how many healthy comparable runs it takes (0 too,
    so that a rule can tell "no history" from "no export"), and their median and MAD where there are any."""
    add = families.add
    add("bus_bandwidth_baseline_runs", "Healthy comparable runs in the results history's baseline of this row "
        "(the same cluster, config fingerprint, nodes and ranks; the last healthy ones before this run).", ROW, labels,
        float(found.runs))  # fmt: skip
    if found.median is None or found.mad is None:
        return
    add("bus_bandwidth_baseline_median_bytes_per_second", "The median busbw of this row over those runs.", ROW,
        labels, found.median * GB)  # fmt: skip
    add("bus_bandwidth_baseline_mad_bytes_per_second", "The median absolute deviation of this row's busbw over "
        "those runs.", ROW, labels, found.mad * GB)  # fmt: skip


def _add_node_past(families: _Families, nodes: Mapping[str, NodePast], group: Sequence[str]) -> None:
    """Each node's level in this run against its own past: what a slow drift, still above the verdict's
    fixed tolerance, shows in."""
    add = families.add
    for host, past in sorted(nodes.items()):
        labels = (*group, host)
        add("node_level_bytes_per_second", "The node's level in this run: the median busbw of its pairs.", NODE_PAST,
            labels, past.level * GB)  # fmt: skip
        if past.median is not None:
            add("node_baseline_median_bytes_per_second", "The median of the node's level over its own last "
                "healthy runs in the results history.", NODE_PAST, labels, past.median * GB)  # fmt: skip
        if past.mads_below is not None:
            add("node_drift_mads", "How many MADs the node's level is below its own past median (positive: below; "
                "judged with 3 healthy runs or more).", NODE_PAST, labels, past.mads_below)  # fmt: skip


def add_isolate_verdict(families: _Families, record: IsolateVerdict, group: Sequence[str]) -> None:
    """An isolate (or check) verdict at its three grains: each node (with its leaf switch when the topology is
    known), each (node, rail) with its HCA, and each slow switch link."""
    add = families.add
    add("isolate_bad_found", "1 when collbench isolate named a bad node, rail or link, or a node stopped answering.",
        GROUP, group, float(record.found))  # fmt: skip
    if record.level is not None:
        add("isolate_level_bytes_per_second", "The healthy level isolate judges every node against (busbw).",
            GROUP, group, record.level * GB)  # fmt: skip
    add("isolate_exit_status", "The verdict's exit status: 0 nothing found, 1 a confirmed fault (or a problem of the "
        "run), 5 nothing confirmed and a unit inconclusive.", GROUP, group, float(record.exit_code))  # fmt: skip
    add("isolate_inconclusive_units", "How many nodes, rails and links the verdict could not settle (never drained).",
        GROUP, group, float(len(record.inconclusive)))  # fmt: skip
    _add_inconclusive(families, record, group)
    stopped = {node.host for node in record.stopped}
    slow_rail = {rail.host for rail in record.bad_rails}
    undecided = {host for unit in record.inconclusive if unit.grain in ("node", "rail") for host in unit.hosts}
    figures = {node.host: node for node in record.nodes}
    for host in record.hosts:
        verdict = (
            "stopped" if host in stopped else "slow" if host in record.bad_nodes
            else "slow_rail" if host in slow_rail else "inconclusive" if host in undecided else "healthy"
        )  # fmt: skip
        node = (*group, host, record.leaves.get(host, ""))
        for state in NODE_VERDICTS:
            add("isolate_node_verdict", "Each node's verdict: 1 on its state (healthy, slow, slow_rail: one of its "
                "rails slow, stopped, inconclusive: it or a rail of it not settled), 0 on others.", (*NODE, "verdict"),
                (*node, state),
                float(state == verdict))  # fmt: skip
        figure = figures.get(host)
        if figure is not None:
            add("isolate_node_bus_bandwidth_bytes_per_second", "The node's median busbw over its groups.", NODE,
                node, figure.median_busbw * GB)  # fmt: skip
            add("isolate_node_level_ratio", "The node's median busbw / the healthy level (1 is healthy).", NODE,
                node, figure.ratio)  # fmt: skip
    _add_rails(families, record, group)
    _add_switch_links(families, record, group)


def _add_inconclusive(families: _Families, record: IsolateVerdict, group: Sequence[str]) -> None:
    """1 for each unit the verdict could not settle, at its grain (a warning: nothing is drained for it)."""
    for unit in record.inconclusive:
        named = (
            "-".join(unit.hosts) if unit.grain == "link"
            else switches_name(unit.switches) or readable_hostlist(unit.hosts) if unit.grain == "switch_link"
            else readable_hostlist(unit.hosts)
        )  # fmt: skip
        rail = str(unit.rail) if unit.rail >= 0 else ""
        families.add("isolate_inconclusive", "1 for each node, rail, link or switch link the verdict could not settle "
                     "(INCONCLUSIVE: neither bad nor healthy, never drained).", INCONCLUSIVE,
                     (*group, named, unit.grain, rail, unit.why), 1.0)  # fmt: skip


def _add_rails(families: _Families, record: IsolateVerdict, group: Sequence[str]) -> None:
    """Each (node, rail) of a rail-aligned verdict: slow when the verdict named that rail (the node's other
    rails healthy: its NIC, cable or switch port); a node slow on most of its rails is `slow` on its node."""
    add = families.add
    bad = {(rail.host, rail.rail) for rail in record.bad_rails}
    undecided = {(host, unit.rail) for unit in record.inconclusive if unit.grain == "rail" for host in unit.hosts}
    for unit in (unit for unit in record.units if unit.rail >= 0):  # rail -1: a node-grain verdict's nodes again
        labels = (*group, unit.host, str(unit.rail), _hca(record, unit.rail))
        key = (unit.host, unit.rail)
        verdict = "slow" if key in bad else "inconclusive" if key in undecided else "healthy"
        for state in RAIL_VERDICTS:
            add("isolate_rail_verdict", "Each node's rail's verdict: 1 on its state (healthy, slow: the verdict "
                "named that rail, inconclusive: not settled), 0 on the others.", (*RAIL, "verdict"), (*labels, state),
                float(state == verdict))  # fmt: skip
        add("isolate_rail_bus_bandwidth_bytes_per_second", "The node's median busbw on the rail over its groups.",
            RAIL, labels, unit.median_busbw * GB)  # fmt: skip
        add("isolate_rail_level_ratio", "The node's median busbw on the rail / the healthy level (1 is healthy).",
            RAIL, labels, unit.ratio)  # fmt: skip


def _add_switch_links(families: _Families, record: IsolateVerdict, group: Sequence[str]) -> None:
    """Each slow switch link the verdict named (none of the nodes behind it drained)."""
    add = families.add
    for fault in record.switch_faults:
        labels = (*group, switch_label(fault), "" if fault.rail < 0 else str(fault.rail))
        add("isolate_switch_link_level_ratio", "A slow switch link's busbw (the median of the slow pairs across it) "
            "/ the healthy level.", SWITCH, labels, fault.ratio)  # fmt: skip
        add("isolate_switch_link_bus_bandwidth_bytes_per_second", "A slow switch link's busbw: the median of the "
            "slow pairs across it.", SWITCH, labels, fault.busbw * GB)  # fmt: skip


def switch_label(fault: SwitchVerdict) -> str:
    """'s1-s2' (the link between leaves s1 and s2), 's1 uplink', or, with no topology known, the two sets of
    nodes either side of the cut ('n[1-3] | n[4-6]'), as the verdict's line names it."""
    return switches_name(fault.switches) or " | ".join(readable_hostlist(side) for side in fault.sides)


def _hca(record: IsolateVerdict, rail: int) -> str:
    return record.nics[rail] if 0 <= rail < len(record.nics) else ""


def exposition(registry: CollectorRegistry) -> str:
    return generate_latest(registry).decode()
