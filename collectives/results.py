"""Per-rank result records and their aggregation across ranks, nccl-tests style. No torch."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from statistics import fmean, median, pstdev

import msgspec

from collectives.dtypes import DTYPES
from collectives.layout import LAYOUTS

RESULT_FORMAT_VERSION = 1
KNOWN_FORMAT_VERSIONS = frozenset({1})
"""Result-file versions this collbench reads; a newer one is refused with a clear error."""


class ResultFormatError(ValueError):
    """A results file this collbench cannot read: not JSON lines, or a format version it does not know."""


class DamagedResult(ResultFormatError):
    """One results line that does not parse: cut off mid-write or garbled, as a killed writer leaves it."""


@dataclass(frozen=True, slots=True)
class DamagedLine:
    """Where a damaged results line is, and what is wrong with it."""

    path: Path
    line: int
    reason: str
    last: bool
    """It is the file's last line and lacks its newline: the writer stopped (or is still) writing it."""

    def describe(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}"


OnDamage = Callable[[DamagedLine], None]


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
    """This rank's time per call, as its timer gives it (the loop: elapsed / calls; per call: the mean)."""
    algbw: float
    busbw: float
    wrong: int
    """Wrong elements in this rank's output; -1 when checking was off."""
    times_us: list[float] = field(default_factory=list)
    """Every call timed on its own (under CUDA graphs: each replay's time per iteration); empty when only
    the loop timer ran (bench.per_iteration=false on CUDA)."""
    min_us: float = 0.0
    median_us: float = 0.0
    p99_us: float = 0.0
    max_us: float = 0.0
    cv: float = 0.0
    """Coefficient of variation of times_us (standard deviation / mean)."""
    page_faults_per_iter: float = 0.0
    """Minor page faults this process took per timed call: a backend allocating inside the timed loop."""
    timer: str = "host"
    """host (each blocking call on a monotonic clock), host_loop, cuda_loop (one clock around all calls
    and the synchronisation), cuda_events (per call), or cuda_graph (one clock around every replay)."""
    enqueue_us: float = 0.0
    """Host time per call until the launches returned, before the synchronisation (nccl-tests' -C)."""
    first_wrong_index: int = -1
    """Index of the first wrong element in this rank's output, -1 if none."""
    requested_size: int = 0
    """The size the sweep asked for, before nccl-tests' rounding (0 in files that predate it: use size)."""
    started_at: float = 0.0
    """Wall-clock time (epoch seconds) this rank began the measurement."""
    ended_at: float = 0.0
    """Wall-clock time this rank finished it, its check included (0 in lines that predate it). The time from
    one measurement's end to the next one's start is the rank's own work, with no collective in it."""
    attempt: int = 0
    """The Slurm attempt (SLURM_RESTART_COUNT) that measured it: a resumed attempt carries earlier ones'."""
    group: str = ""
    """The subgroup that measured it, in words (collbench isolate: 'round 2: n[1,4]'); empty for the whole
    job. For display only: `round`, `nodes` and `members` are the group as data."""
    members: list[int] = field(default_factory=list)
    """The global ranks of that subgroup, empty for the whole job; `rank` is always the global rank and
    `nranks` the size of the group measured."""
    round: int = 0
    """collbench isolate: the round that measured it, from 1; 0 for the whole job."""
    nodes: list[int] = field(default_factory=list)
    """collbench isolate: the group's nodes, as indices into isolate/plan.json's hosts; empty for the whole job."""
    rail: int = -1
    """collbench isolate, rail-aligned: the rail whose ranks the group holds (one rank a node); -1 for every
    rank of its nodes, or the whole job."""
    version: int = RESULT_FORMAT_VERSION

    @property
    def key(self) -> RowKey:
        return (self.op, self.dtype, self.redop, self.root, self.size, self.in_place, self.group)

    def to_json(self) -> str:
        return _ENCODER.encode(self).decode()

    @classmethod
    def from_json(cls, line: str | bytes, where: str = "results") -> RankResult:
        try:
            record = _DECODER.decode(line)
        except msgspec.DecodeError as error:
            raise DamagedResult(f"{where}: not a JSON line ({error})") from None
        except msgspec.ValidationError as error:
            _check_version(line, where)
            raise DamagedResult(f"{where}: not a result line ({error})") from None
        if record.version not in KNOWN_FORMAT_VERSIONS:
            _check_version(line, where)
        return record


def _check_version(line: str | bytes, where: str) -> None:
    """Raise ResultFormatError naming the line's format version, if it is one this collbench does not read."""
    try:
        version = _VERSION.decode(line).version
    except (msgspec.DecodeError, msgspec.ValidationError):
        return
    if version not in KNOWN_FORMAT_VERSIONS:
        known = ", ".join(map(str, sorted(KNOWN_FORMAT_VERSIONS)))
        raise ResultFormatError(f"{where}: result format version {version!r} is not one this collbench reads ({known})")


class _Version(msgspec.Struct):
    version: int = 1


_DECODER = msgspec.json.Decoder(RankResult)
_VERSION = msgspec.json.Decoder(_Version)
_ENCODER = msgspec.json.Encoder()


def iteration_stats(times_us: list[float]) -> dict[str, float]:
    """min, median, p99 (nearest rank), max and coefficient of variation of one rank's iterations."""
    ordered = sorted(times_us)
    n = len(ordered)
    if n == 0:
        return {"min_us": 0.0, "median_us": 0.0, "p99_us": 0.0, "max_us": 0.0, "cv": 0.0}
    mean = fmean(ordered)
    spread = pstdev(ordered, mean) if n > 1 else 0.0
    return {
        "min_us": ordered[0],
        "median_us": median(ordered),
        "p99_us": ordered[max(0, math.ceil(0.99 * n) - 1)],
        "max_us": ordered[-1],
        "cv": spread / mean if mean > 0 else 0.0,
    }


RowKey = tuple[str, str, str, int, int, bool, str]
"""(op, dtype, reduce op, root, size, in place, group): one measurement, on every rank of its group."""


def placement_name(in_place: bool) -> str:
    return "in-place" if in_place else "out-of-place"


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
    """The ranks' times combined as `average` says: the mean by default (nccl-tests' -a 1)."""
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
    requested_size: int
    """The sweep's size before rounding: what lines up across runs of different rank counts."""
    enqueue_us: float = 0.0
    """The ranks' enqueue times per call (nccl-tests' -C), combined as the time is."""
    average: str = "mean"
    """How the ranks' times were combined: mean, min, max or rank0 (nccl-tests' -a 1, 2, 3, 0)."""
    missing_ranks: list[int] = field(default_factory=list)
    """Ranks of the run with no readable record of this row: the figures are over the others."""
    duplicate_ranks: list[int] = field(default_factory=list)
    """Ranks with more than one record of this row (only the first counts)."""
    group: str = ""
    """The subgroup measured (collbench isolate), in words; empty for the whole job."""
    members: list[int] = field(default_factory=list)
    """The global ranks of that subgroup, empty for the whole job."""
    round: int = 0
    """collbench isolate: the round of that subgroup, from 1; 0 for the whole job."""
    nodes: list[int] = field(default_factory=list)
    """collbench isolate: the subgroup's nodes (indices into the job's node order); empty for the whole job."""
    rail: int = -1
    """collbench isolate, rail-aligned: the subgroup's rail; -1 for every rank of its nodes, or the whole job."""
    iters: int = 0
    """The most timed calls any rank made (nccl-tests' actual_iterations); 0 in summaries written before it."""

    @property
    def key(self) -> RowKey:
        return (self.op, self.dtype, self.redop, self.root, self.size, self.in_place, self.group)

    @property
    def expected_ranks(self) -> list[int]:
        return self.members or list(range(self.nranks))

    @property
    def complete(self) -> bool:
        return not self.missing_ranks and self.ranks_reporting == self.nranks


def iter_rank_results(
    paths: Iterable[Path], keep_times: bool = True, on_damage: OnDamage | None = None
) -> Iterator[RankResult]:
    """Every record of the given JSON-lines files, one file at a time, each line decoded straight into
    its RankResult. A line that does not parse (a rank killed while writing it, a garbled disk) goes to
    `on_damage` and is left out; without on_damage it raises DamagedResult. Without keep_times the
    per-iteration lists are dropped as read."""
    for path in paths:
        with path.open("rb") as handle:
            lines = handle.read().splitlines(keepends=True)
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = _parse_line(line, f"{path}:{number}")
            except DamagedResult as error:
                if on_damage is None:
                    raise
                reason = str(error).removeprefix(f"{path}:{number}: ")
                on_damage(DamagedLine(path, number, reason, last=not line.endswith(b"\n")))
                continue
            if not keep_times:
                record.times_us = []
            yield record


def _parse_line(line: bytes, where: str) -> RankResult:
    if not line.endswith(b"\n"):
        raise DamagedResult(f"{where}: cut off mid-line (no newline at the end): its writer stopped while writing it")
    return RankResult.from_json(line, where)


def read_rank_results(paths: Iterable[Path]) -> list[RankResult]:
    return list(iter_rank_results(paths))


@dataclass(slots=True)
class _Group:
    """Running aggregate of one row's per-rank records: memory per row, not per rank."""

    first: RankResult
    ranks: int = 0
    time_sum: float = 0.0
    enqueue_sum: float = 0.0
    rank0: tuple[float, float] | None = None
    """(time, enqueue time) of rank 0, for nccl-tests' -a 0."""
    least: tuple[float, float] = (float("inf"), 0.0)
    most: tuple[float, float] = (float("-inf"), 0.0)
    wrong_sum: int = 0
    checked: bool = True
    slowest: tuple[float, int, str] = (float("-inf"), -1, "")
    fastest: tuple[float, int, str] = (float("inf"), -1, "")
    wrong_ranks: list[int] = field(default_factory=list)
    page_faults: float = 0.0
    iters: int = 0
    seen: set[int] = field(default_factory=set)
    duplicates: set[int] = field(default_factory=set)

    def add(self, r: RankResult) -> None:
        if r.rank in self.seen:
            self.duplicates.add(r.rank)
            return
        self.seen.add(r.rank)
        self.ranks += 1
        self.time_sum += r.time_us
        self.enqueue_sum += r.enqueue_us
        figures = (r.time_us, r.enqueue_us)
        self.rank0 = figures if r.rank == 0 else self.rank0
        self.least, self.most = min(self.least, figures), max(self.most, figures)
        self.checked &= r.wrong >= 0
        self.wrong_sum += max(r.wrong, 0)
        if r.wrong > 0:
            self.wrong_ranks.append(r.rank)
        self.slowest = max(self.slowest, (r.time_us, r.rank, r.host))
        self.fastest = min(self.fastest, (r.time_us, r.rank, r.host))
        self.page_faults = max(self.page_faults, r.page_faults_per_iter)
        self.iters = max(self.iters, r.iters)

    def combined(self, average: str) -> tuple[float, float]:
        """(time, enqueue time) of the row as nccl-tests' -a combines the ranks' figures."""
        if average == "min":
            return self.least
        if average == "max":
            return self.most
        if average == "rank0" and self.rank0 is not None:
            return self.rank0
        # the mean, and for rank0 when rank 0 did not report (the row is flagged incomplete)
        return self.time_sum / self.ranks, self.enqueue_sum / self.ranks

    def row(self, average: str = "mean") -> SummaryRow:
        first = self.first
        time_us, enqueue_us = self.combined(average)
        algbw, busbw = LAYOUTS[first.op].bandwidths(first.count, DTYPES[first.dtype].size, first.nranks, time_us / 1e6)
        return SummaryRow(
            op=first.op,
            size=first.size,
            count=first.count,
            dtype=first.dtype,
            redop=first.redop,
            root=first.root,
            in_place=first.in_place,
            nranks=first.nranks,
            ranks_reporting=self.ranks,
            time_us=time_us,
            enqueue_us=enqueue_us,
            average=average,
            algbw=algbw,
            busbw=busbw,
            wrong=self.wrong_sum if self.checked else -1,
            slowest_rank=self.slowest[1],
            slowest_host=self.slowest[2],
            slowest_time_us=self.slowest[0],
            fastest_rank=self.fastest[1],
            fastest_host=self.fastest[2],
            fastest_time_us=self.fastest[0],
            wrong_ranks=sorted(self.wrong_ranks),
            page_faults_per_iter=self.page_faults,
            timer=first.timer,
            requested_size=first.requested_size or first.size,
            missing_ranks=sorted(set(first.members or range(first.nranks)) - self.seen),
            duplicate_ranks=sorted(self.duplicates),
            group=first.group,
            members=list(first.members),
            round=first.round,
            nodes=list(first.nodes),
            rail=first.rail,
            iters=self.iters,
        )


AVERAGES = ("mean", "min", "max", "rank0")


def summarize(records: Iterable[RankResult], average: str = "mean") -> list[SummaryRow]:
    """Aggregate per-rank records into one row per measurement, in the order first measured; time is
    the ranks' times combined as `average` says (nccl-tests' -a; the mean by default) and bandwidth
    follows from it."""
    if average not in AVERAGES:
        raise ValueError(f"average {average!r} is not one of {', '.join(AVERAGES)}")
    groups: dict[RowKey, _Group] = {}
    for record in records:
        group = groups.get(record.key)
        if group is None:
            group = groups[record.key] = _Group(first=record)
        group.add(record)
    return [group.row(average) for group in groups.values()]


def headline_rows(rows: Iterable[SummaryRow]) -> dict[tuple[str, int], SummaryRow]:
    """(op, requested size) -> the row nccl-tests would read first: out-of-place where measured, root 0
    or none. Keyed by the size asked for, so that runs of different rank counts, whose rounded sizes
    differ, line up."""
    chosen: dict[tuple[str, int], SummaryRow] = {}
    for row in rows:
        if row.root not in (-1, 0):
            continue
        key = (row.op, row.requested_size)
        if key not in chosen or (chosen[key].in_place and not row.in_place):
            chosen[key] = row
    return chosen
