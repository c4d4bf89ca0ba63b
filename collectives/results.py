"""Per-rank result records and their aggregation across ranks, nccl-tests style. No torch."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from statistics import fmean, median, pstdev

from collectives.dtypes import DTYPES
from collectives.layout import LAYOUTS

RESULT_FORMAT_VERSION = 1


@dataclass(kw_only=True, slots=True)
class RankResult:
    """One rank's measurement of one (op, size, placement): one JSON line in results/rank-N.jsonl."""

    op: str
    size: int
    """nccl-tests' size column, bytes."""
    count: int
    """nccl-tests' count column, elements."""
    dtype: str
    redop: str
    """'none' for collectives without a reduction."""
    root: int
    """-1 for collectives without a root."""
    in_place: bool
    rank: int
    local_rank: int
    host: str
    nranks: int
    iters: int
    time_us: float
    """Mean over this rank's timed iterations."""
    algbw: float
    busbw: float
    wrong: int
    """Wrong elements in this rank's output; -1 when checking was off."""
    times_us: list[float] = field(default_factory=list)
    """Every timed iteration (with CUDA graphs: each replay's time per iteration)."""
    min_us: float = 0.0
    median_us: float = 0.0
    p99_us: float = 0.0
    max_us: float = 0.0
    cv: float = 0.0
    """Coefficient of variation of times_us (standard deviation / mean)."""
    page_faults_per_iter: float = 0.0
    """Minor page faults this process took per timed call: a backend allocating inside the timed loop."""
    timer: str = "host"
    """host (monotonic clock, op completed), cuda_events, or cuda_graph."""
    first_wrong_index: int = -1
    """Index of the first wrong element in this rank's output, -1 if none."""
    started_at: float = 0.0
    """Wall-clock time (epoch seconds) this rank began the measurement: late starters are stragglers."""
    version: int = RESULT_FORMAT_VERSION

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, line: str) -> RankResult:
        data = json.loads(line)
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})


def iteration_stats(times_us: list[float]) -> dict[str, float]:
    """min, median, p99 (nearest rank), max and coefficient of variation of one rank's iterations."""
    ordered = sorted(times_us)
    n = len(ordered)
    mean = fmean(ordered)
    spread = pstdev(ordered, mean) if n > 1 else 0.0
    return {
        "min_us": ordered[0],
        "median_us": median(ordered),
        "p99_us": ordered[max(0, math.ceil(0.99 * n) - 1)],
        "max_us": ordered[-1],
        "cv": spread / mean if mean > 0 else 0.0,
    }


RowKey = tuple[str, str, str, int, int, bool]


@dataclass(kw_only=True, slots=True)
class SummaryRow:
    """All ranks' figures for one (op, dtype, redop, root, size, placement)."""

    op: str
    size: int
    count: int
    dtype: str
    redop: str
    root: int
    in_place: bool
    nranks: int
    ranks_reporting: int
    time_us: float
    """Mean over ranks of each rank's mean time: nccl-tests' default (-a 1)."""
    algbw: float
    busbw: float
    wrong: int
    """Sum over ranks; -1 when checking was off."""
    slowest_rank: int
    slowest_host: str
    slowest_time_us: float
    fastest_rank: int
    fastest_host: str
    fastest_time_us: float
    wrong_ranks: list[int]
    page_faults_per_iter: float
    """The most minor page faults any rank took per timed call."""
    timer: str

    @property
    def key(self) -> RowKey:
        return (self.op, self.dtype, self.redop, self.root, self.size, self.in_place)


def read_rank_results(paths: Iterable[Path]) -> list[RankResult]:
    """Every record from the given JSON-lines files; a torn last line (killed rank) is skipped."""
    records: list[RankResult] = []
    for path in paths:
        with path.open(encoding="utf-8") as handle:
            for line in handle:
                if not line.endswith("\n"):
                    break
                if line.strip():
                    records.append(RankResult.from_json(line))
    return records


def summarize(records: Iterable[RankResult]) -> list[SummaryRow]:
    """Aggregate per-rank records into one row per measurement, in the order first measured."""
    groups: dict[RowKey, list[RankResult]] = defaultdict(list)
    for record in records:
        groups[(record.op, record.dtype, record.redop, record.root, record.size, record.in_place)].append(record)
    return [_summarize_group(group) for group in groups.values()]


def _summarize_group(group: list[RankResult]) -> SummaryRow:
    first = group[0]
    time_us = fmean(r.time_us for r in group)
    algbw, busbw = LAYOUTS[first.op].bandwidths(first.count, DTYPES[first.dtype].size, first.nranks, time_us / 1e6)
    slowest = max(group, key=lambda r: r.time_us)
    fastest = min(group, key=lambda r: r.time_us)
    checked = all(r.wrong >= 0 for r in group)
    return SummaryRow(
        op=first.op,
        size=first.size,
        count=first.count,
        dtype=first.dtype,
        redop=first.redop,
        root=first.root,
        in_place=first.in_place,
        nranks=first.nranks,
        ranks_reporting=len(group),
        time_us=time_us,
        algbw=algbw,
        busbw=busbw,
        wrong=sum(r.wrong for r in group) if checked else -1,
        slowest_rank=slowest.rank,
        slowest_host=slowest.host,
        slowest_time_us=slowest.time_us,
        fastest_rank=fastest.rank,
        fastest_host=fastest.host,
        fastest_time_us=fastest.time_us,
        wrong_ranks=sorted(r.rank for r in group if r.wrong > 0),
        page_faults_per_iter=max(r.page_faults_per_iter for r in group),
        timer=first.timer,
    )
