"""The per-rank and per-host view behind `collbench report`: ranks slow at their own work, the run as a
whole against its line rate, wrong elements and environment differences, from the run directory alone.

A host is called slow only on evidence of its own. Inside a collective that spans several hosts every rank
waits for the slowest link, so who starts a measurement late or ends it last says nothing about who is
slow: a slow link on one node makes the ranks of another finish last. What belongs to a rank alone is the
time from the end of one of its measurements to the start of the next (its check done, its result written,
the next buffers made ready: no collective in it). A rank whose such time stands out (a robust z-score,
(x - median) / (1.4826 x MAD) > OUTLIER_Z, and OWN_FLOOR_S more than the others; under 8 ranks against
the *other* ranks) is slow at its own work, and its host is named. When no host stands out but the run's
best busbw at bandwidth-bound sizes is WHOLE_RUN_BELOW times or more below the line rate the nodes report,
every rank waited: the view says so and gives the `collbench isolate` command that finds the node or link.
"""

from __future__ import annotations

from array import array
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median
from typing import Any

import msgspec

from collectives.results import RankResult, SummaryRow, placement_name
from jobs.inspect.fabric import LineRate
from jobs.rundir.layout import RunDir, rank_files, rank_of
from slurm.hostlist import readable_hostlist

OUTLIER_Z = 3.5
OWN_FLOOR_S = 0.010
LEAVE_ONE_OUT_BELOW = 8
WHOLE_RUN_BELOW = 20.0
"""The run as a whole is slow when its best busbw is this many times below the line rate: far beyond what a
healthy run loses to protocol and copies (up to about 12x for gloo over TCP on the test cluster)."""
BANDWIDTH_BOUND_BYTES = 1 << 20
"""Smaller sizes are bound by latency, not by the line: they say nothing about the line rate."""

NATURALLY_PER_RANK = {
    "hostname",
    "gpu.index",
    "gpu.uuid",
    "gpu.pci_bus_id",
    "variables.SLURM_PROCID",
    "variables.SLURM_LOCALID",
    "variables.SLURM_NODEID",
    "variables.SLURMD_NODENAME",
    "variables.SLURM_TASK_PID",
    "variables.SLURM_TOPOLOGY_ADDR",
    "variables.SLURM_GTIDS",
    "variables.SLURM_CPU_BIND",
    "variables.SLURM_CPU_BIND_LIST",
    "variables.SLURM_LAUNCH_NODE_IPADDR",
    "variables.CUDA_VISIBLE_DEVICES",
}
"""Keys expected to differ from rank to rank; everything else should match across the job."""

NOT_EVIDENCE = (
    "start lag and finishing order inside a collective are not evidence against a host: every rank waits "
    "for the slowest link"
)


@dataclass(slots=True)
class RankFlag:
    rank: int
    host: str
    what: str


@dataclass(frozen=True, slots=True)
class RunScope:
    """What the whole-run judgement needs beyond the ranks' records."""

    rows: Sequence[SummaryRow] = ()
    line: LineRate | None = None
    hosts: Sequence[str] = ()
    """The job's hosts."""
    isolate_config: str = ""
    """The run's config.yaml, for the isolate command; '' where isolate cannot run (not a Slurm run)."""
    in_rounds: bool = False
    """An isolate or check run: at each round's end its ranks wait for the round's slowest group, so the time
    between two measurements is not a rank's own and slowness at its own work is not judged."""


@dataclass(slots=True)
class Analysis:
    slow_ranks: list[RankFlag] = field(default_factory=list)
    """Ranks slow at their own work (between measurements): evidence that belongs to them."""
    slow_hosts: list[str] = field(default_factory=list)
    """The hosts of those ranks, each with its evidence."""
    whole_run: str = ""
    """'every rank waited; the run as a whole is N x below ...' when no host stands out, else ''."""
    isolate_command: str = ""
    """The collbench isolate command that would find the node or link, with the job's node list."""
    wrong: list[str] = field(default_factory=list)
    env_differences: list[str] = field(default_factory=list)
    own_work_unjudged: str = ""
    """Why slowness at its own work was not judged ('' when it was)."""

    def verdict(self) -> list[str]:
        """The per-host verdict in a few lines: what wait and report print as their headline on slowness."""
        out = [f"slow host: {line}" for line in self.slow_hosts]
        out += [self.whole_run] if self.whole_run else []
        if self.isolate_command:
            out.append(f"to find the node or link: {self.isolate_command}")
        return out

    def lines(self) -> list[str]:
        out = ["# Per-rank and per-host view", f"# a host is slow only on evidence of its own; {NOT_EVIDENCE}"]
        out += [f"#   slow at its own work: rank {f.rank} on {f.host}: {f.what}" for f in self.slow_ranks] or [
            f"#   {self.own_work_unjudged or 'no rank is slow at its own work (between measurements)'}"
        ]
        out += [f"# {line}" for line in self.verdict()]
        out += [f"# wrong: {line}" for line in self.wrong]
        out += [f"# environment differs: {line}" for line in self.env_differences] or [
            "# environment: every rank reports the same versions and variables"
        ]
        return out


def _robust_outliers(values: dict[int, float], floor: float) -> dict[int, float]:
    """rank -> robust z of the values that stand out above the others (only the high side)."""
    flagged: dict[int, float] = {}
    everyone = list(values.values())
    whole = (median(everyone), _mad(everyone)) if len(everyone) >= LEAVE_ONE_OUT_BELOW else None
    for rank, value in values.items():
        if whole is None:
            others = [v for r, v in values.items() if r != rank]
            if not others:
                continue
            centre, mad = median(others), _mad(others)
        else:
            centre, mad = whole
        excess = value - centre
        z = excess / (1.4826 * mad) if mad > 0 else (float("inf") if excess > 0 else 0.0)
        if z > OUTLIER_Z and excess > floor:
            flagged[rank] = z
    return flagged


def _mad(values: list[float]) -> float:
    centre = median(values)
    return median(abs(v - centre) for v in values)


ROUNDS_UNJUDGED = (
    "own work not judged: an isolate or check run's ranks wait at each round's end for its slowest group "
    "(the verdict above names the slow node or link)"
)


class Analyser:
    """Takes each rank's records as they are read (so one pass over the results can also feed the
    summary), then judges them all. A rank's records come in the order it measured them."""

    def __init__(self) -> None:
        self.hosts: dict[int, str] = {}
        self.own: dict[int, array[float]] = defaultdict(lambda: array("d"))
        """rank -> its own time before each measurement after its first (s)."""
        self.last: dict[int, tuple[float, int]] = {}
        """rank -> (end of its latest measurement, its attempt)."""
        self.wrong_by_rank: dict[int, list[RankResult]] = defaultdict(list)

    def add(self, r: RankResult) -> None:
        self.hosts[r.rank] = r.host
        before = self.last.get(r.rank)
        if before and before[0] > 0 and before[1] == r.attempt and r.started_at >= before[0]:
            self.own[r.rank].append(r.started_at - before[0])
        self.last[r.rank] = (r.ended_at, r.attempt)
        if r.wrong > 0:
            self.wrong_by_rank[r.rank].append(r)

    def watch(self, records: Iterable[RankResult]) -> Iterator[RankResult]:
        for record in records:
            self.add(record)
            yield record

    def finish(self, run: RunDir, scope: RunScope | None = None) -> Analysis:
        scope = scope or RunScope()
        result = Analysis()
        if scope.in_rounds:
            result.own_work_unjudged = ROUNDS_UNJUDGED
        else:
            result.slow_ranks = _slow_at_own_work(self.own, self.hosts)
            result.slow_hosts = _slow_hosts(result.slow_ranks)
        if not result.slow_hosts:
            result.whole_run = _whole_run(scope)
        if result.whole_run and scope.isolate_config and len(scope.hosts) >= 2:
            result.isolate_command = isolate_command(scope.isolate_config, scope.hosts)
        result.wrong = _wrong_lines(self.wrong_by_rank)
        result.env_differences = environment_differences(rank_files(run.env_dir, ".json"))
        return result


def analyse(records: Iterable[RankResult], run: RunDir, scope: RunScope | None = None) -> Analysis:
    analyser = Analyser()
    for record in records:
        analyser.add(record)
    return analyser.finish(run, scope)


def _slow_at_own_work(own: dict[int, array[float]], hosts: dict[int, str]) -> list[RankFlag]:
    typical = {rank: median(gaps) for rank, gaps in own.items() if gaps}
    flagged = _robust_outliers(typical, OWN_FLOOR_S)
    flags = []
    for rank, z in sorted(flagged.items(), key=lambda item: -typical[item[0]]):
        others = median(v for r, v in typical.items() if r != rank)
        flags.append(
            RankFlag(
                rank,
                hosts[rank],
                f"{typical[rank] * 1e3:.1f} ms of its own between measurements (median over {len(own[rank])}; "
                f"the other ranks {others * 1e3:.1f} ms; robust z {min(z, 999):.1f})",
            )
        )
    return flags


def _slow_hosts(flags: list[RankFlag]) -> list[str]:
    by_host: dict[str, list[RankFlag]] = defaultdict(list)
    for flag in flags:
        by_host[flag.host].append(flag)
    return [
        f"{host}: rank(s) {','.join(str(f.rank) for f in found)} slow at their own work, outside any collective "
        f"({found[0].what.split(' (')[0]}): the node itself (CPU, memory, the rank's own code), not the network"
        for host, found in by_host.items()
    ]


def _whole_run(scope: RunScope) -> str:
    bound = [row for row in scope.rows if not row.group and row.size >= BANDWIDTH_BOUND_BYTES and row.busbw > 0]
    if scope.line is None or not bound:
        return ""
    best = max(bound, key=lambda row: row.busbw)
    below = scope.line.gigabytes / best.busbw
    if below < WHOLE_RUN_BELOW:
        return ""
    return (
        f"every rank waited; the run as a whole is {below:.0f}x below the line rate of {scope.line.what}: best "
        f"busbw {best.busbw:.4g} GB/s ({best.op} {best.size} B) against {scope.line.gigabytes:.4g} GB/s; no host "
        "stands out on evidence of its own (a slow node or link slows every rank of a collective)"
    )


def isolate_command(config_file: str, hosts: Sequence[str]) -> str:
    """The exact command that measures these nodes against each other, in pairs."""
    nodes = readable_hostlist(sorted(set(hosts)))
    return f"collbench isolate --config {config_file} nodes={len(set(hosts))} 'slurm.nodelist={nodes}'"


def _wrong_lines(wrong_by_rank: dict[int, list[RankResult]]) -> list[str]:
    lines = []
    for rank, bad in sorted(wrong_by_rank.items()):
        first = bad[0]
        lines.append(
            f"rank {rank} on {first.host}: {sum(r.wrong for r in bad)} wrong element(s) in {len(bad)} measurement(s); "
            f"first in {first.op} {first.size} B {placement_name(first.in_place)}, element {first.first_wrong_index}"
        )
    return lines


def _flatten(prefix: str, value: Any, into: dict[str, str]) -> None:
    if isinstance(value, dict):
        for key, inner in value.items():
            _flatten(f"{prefix}.{key}" if prefix else str(key), inner, into)
    else:
        into[prefix] = "" if value is None else str(value)


def _read_env(path: Path) -> dict[str, Any]:
    """A rank's environment file (free-form: what the rank found), or nothing when it cannot be read."""
    try:
        data = msgspec.json.decode(path.read_bytes())
    except (OSError, msgspec.DecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def environment_differences(paths: list[Path]) -> list[str]:
    """One line per key whose value is not the same on every rank, naming the ranks and hosts of each value."""
    values: dict[str, dict[str, list[tuple[int, str]]]] = defaultdict(lambda: defaultdict(list))
    everyone: list[tuple[int, str]] = []
    for path in paths:
        env = _read_env(path)
        rank, host = rank_of(path), str(env.get("hostname", "?"))
        everyone.append((rank, host))
        flat: dict[str, str] = {}
        _flatten("", env, flat)
        own_files = f"rank-{rank:05d}"
        for key, value in flat.items():
            # a per-rank file (NCCL_DEBUG_FILE=.../nccl-rank-00003.log) differs by construction, not by drift
            values[key][value.replace(own_files, "rank-{rank}")].append((rank, host))
    lines = []
    for key, by_value in sorted(values.items()):
        if key in NATURALLY_PER_RANK:
            continue
        groups = dict(by_value)
        seen = {rank for where in groups.values() for rank, _ in where}
        if len(seen) < len(everyone):
            groups["<unset>"] = [(rank, host) for rank, host in everyone if rank not in seen]
        if len(groups) < 2:
            continue
        parts = []
        for value, where in sorted(groups.items(), key=lambda item: -len(item[1])):
            host_names = sorted({h for _, h in where})
            shown = ", ".join(host_names[:8]) + ("..." if len(host_names) > 8 else "")
            parts.append(f"{value!r} on {len(where)} rank(s) ({shown})")
        lines.append(f"{key.removeprefix('variables.')}: " + "; ".join(parts))
    return lines
