"""The per-rank and per-host view behind `collbench report`: outliers, stragglers, wrong elements and
environment differences, from the run directory alone.

Outliers use a robust z-score: (x - median) / (1.4826 x MAD), the MAD scaled to a standard deviation.
A rank is flagged when its score passes OUTLIER_Z and the difference is also large in absolute terms
(TIME_FLOOR of the median for times, LATE_FLOOR_S for lateness). Under 8 ranks the median and MAD of
the *other* ranks are used, so that one straggler among two or three can still stand out.
"""

from __future__ import annotations

from array import array
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median
from typing import Any

import msgspec

from collectives.results import RankResult, RowKey, placement_name
from jobs.rundir.layout import RunDir, rank_files, rank_of

OUTLIER_Z = 3.5
TIME_FLOOR = 0.05
LATE_FLOOR_S = 0.010
LEAVE_ONE_OUT_BELOW = 8

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


@dataclass(frozen=True, slots=True)
class Sample:
    rank: int
    host: str
    time_us: float
    started_at: float


@dataclass(slots=True)
class RankFlag:
    rank: int
    host: str
    what: str


@dataclass(slots=True)
class Analysis:
    slow_ranks: list[RankFlag] = field(default_factory=list)
    late_ranks: list[RankFlag] = field(default_factory=list)
    slowest_host: str = ""
    wrong: list[str] = field(default_factory=list)
    env_differences: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = ["# Per-rank and per-host view", f"# outliers: robust z > {OUTLIER_Z} (median and MAD across ranks)"]
        out += [f"#   time outlier: rank {f.rank} on {f.host}: {f.what}" for f in self.slow_ranks] or [
            "#   no rank's time is an outlier"
        ]
        out += [f"#   straggler: rank {f.rank} on {f.host}: {f.what}" for f in self.late_ranks] or [
            "#   no rank starts its measurements late"
        ]
        if self.slowest_host:
            out.append(f"# slowest host: {self.slowest_host}")
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


class _Column:
    """One row's samples as three packed arrays: 24 bytes a rank instead of an object each."""

    __slots__ = ("ranks", "starts", "times")

    def __init__(self) -> None:
        self.ranks = array("q")
        self.times = array("d")
        self.starts = array("d")

    def add(self, rank: int, time_us: float, started_at: float) -> None:
        self.ranks.append(rank)
        self.times.append(time_us)
        self.starts.append(started_at)

    def samples(self, hosts: dict[int, str]) -> list[Sample]:
        return [Sample(r, hosts[r], t, s) for r, t, s in zip(self.ranks, self.times, self.starts, strict=True)]


class _Rows(dict[RowKey, _Column]):
    """Row -> its samples, made into Sample objects one row at a time when judged."""

    def __init__(self, hosts: dict[int, str]) -> None:
        super().__init__()
        self.hosts = hosts

    def each(self) -> Iterator[list[Sample]]:
        for column in self.values():
            yield column.samples(self.hosts)


class Analyser:
    """Takes each rank's records as they are read (so one pass over the results can also feed the
    summary), then judges them all."""

    def __init__(self) -> None:
        self.hosts: dict[int, str] = {}
        self.rows = _Rows(self.hosts)
        self.wrong_by_rank: dict[int, list[RankResult]] = defaultdict(list)

    def add(self, r: RankResult) -> None:
        column = self.rows.get(r.key)
        if column is None:
            column = self.rows[r.key] = _Column()
        column.add(r.rank, r.time_us, r.started_at)
        self.hosts[r.rank] = r.host
        if r.wrong > 0:
            self.wrong_by_rank[r.rank].append(r)

    def watch(self, records: Iterable[RankResult]) -> Iterator[RankResult]:
        for record in records:
            self.add(record)
            yield record

    def finish(self, run: RunDir) -> Analysis:
        result = Analysis()
        result.slow_ranks = _time_outliers(self.rows, self.hosts)
        result.late_ranks = _stragglers(self.rows, self.hosts)
        result.slowest_host = _slowest_host(self.rows)
        result.wrong = _wrong_lines(self.wrong_by_rank)
        result.env_differences = environment_differences(rank_files(run.env_dir, ".json"))
        return result


def analyse(records: Iterable[RankResult], run: RunDir) -> Analysis:
    analyser = Analyser()
    for record in records:
        analyser.add(record)
    return analyser.finish(run)


def _time_outliers(rows: _Rows, hosts: dict[int, str]) -> list[RankFlag]:
    hits: dict[int, list[float]] = defaultdict(list)
    for samples in rows.each():
        times = {s.rank: s.time_us for s in samples}
        typical = median(times.values())
        for rank in _robust_outliers(times, TIME_FLOOR * typical):
            hits[rank].append(times[rank] / typical)
    flags = []
    for rank, ratios in sorted(hits.items(), key=lambda item: -len(item[1])):
        if len(ratios) >= max(1, len(rows) // 4):
            flags.append(
                RankFlag(
                    rank,
                    hosts[rank],
                    f"slower than the others in {len(ratios)}/{len(rows)} measurements "
                    f"(median {median(ratios):.2f}x the typical rank)",
                )
            )
    return flags


def _stragglers(rows: _Rows, hosts: dict[int, str]) -> list[RankFlag]:
    lateness: dict[int, list[float]] = defaultdict(list)
    for samples in rows.each():
        starts = [s.started_at for s in samples if s.started_at > 0]
        if len(starts) < 2:
            continue
        first = min(starts)
        for s in samples:
            if s.started_at > 0:
                lateness[s.rank].append(s.started_at - first)
    typical = {rank: median(values) for rank, values in lateness.items()}
    flagged = _robust_outliers(typical, LATE_FLOOR_S)
    return [
        RankFlag(
            rank,
            hosts[rank],
            f"starts its measurements {typical[rank] * 1e3:.1f} ms after the first rank "
            f"(median over {len(lateness[rank])} measurements; robust z {min(z, 999):.1f})",
        )
        for rank, z in sorted(flagged.items(), key=lambda item: -typical[item[0]])
    ]


def _slowest_host(rows: _Rows) -> str:
    ratios: dict[str, list[float]] = defaultdict(list)
    lateness: dict[str, list[float]] = defaultdict(list)
    for samples in rows.each():
        typical = median(s.time_us for s in samples)
        first = min((s.started_at for s in samples if s.started_at > 0), default=0.0)
        for s in samples:
            if typical > 0:
                ratios[s.host].append(s.time_us / typical)
            if s.started_at > 0 and first > 0:
                lateness[s.host].append(s.started_at - first)
    if len(ratios) < 2:
        return ""
    host = max(ratios, key=lambda h: (median(lateness.get(h, [0.0])), median(ratios[h])))
    return (
        f"{host} (its ranks start measurements {median(lateness.get(host, [0.0])) * 1e3:.1f} ms after the first "
        f"rank, median; their times are {median(ratios[host]):.2f}x the typical rank's)"
    )


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
