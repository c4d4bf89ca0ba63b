"""What two runs' own noise explains, for `collbench compare`: each row's standard error from its ranks'
per-iteration times, the scatter of the comparison itself from size to size, and which rows are bound by
latency. A drop is a regression only beyond all of it (jobs.inspect.compare).

Each rank's time is the mean of its timed calls, so its standard error is stdev / sqrt(calls). The ranks of
one collective wait on each other and their errors move together, so a row's relative error is the mean of
its ranks', never averaged down by their number. The per-iteration times see the noise inside one run, not
what changed between two (another job's traffic, a busier host): that shows as the ratios of neighbouring
sizes scattering more than the rows' own errors say, so the comparison's own scatter is measured too, from
the steps between neighbouring sizes, which a regression over a range of sizes moves once and noise at every
step."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from statistics import fmean, median, stdev

from collectives.results import RankResult, RowKey, SummaryRow, iter_rank_results
from jobs.rundir.layout import RunDir, rank_files

NOISE_Z = 3.0
"""A drop must exceed this many standard errors (of the two rows, and of the comparison's scatter)."""
NO_SPREAD = 0.05
"""The noise band of a row whose run recorded no per-iteration times (bench.per_iteration=false under a
loop timer, or an import): the run-to-run drift of nccl-tests-style figures on a quiet cluster."""
LATENCY_FACTOR = 2.0
"""A row is latency-bound where its typical time is under this many times its op's fastest: the time the
bytes take is then smaller than the fixed cost of a call, which is what noise moves most."""
SIGMA_PER_MAD = 1.4826
"""A median absolute deviation in standard deviations, for normal noise."""
MIN_SCATTER_STEPS = 12
"""Fewer steps between neighbouring sizes than this: too few to measure the comparison's scatter. A drop at
one size moves the two steps beside it, so in a short comparison a real regression of two or three rows
would be most of the steps and read as scatter (the rows' own errors still count)."""


@dataclass(frozen=True, slots=True)
class RowSpread:
    """One row of one run: how noisy its figure is, and its typical time per call."""

    relative_error: float | None
    """The standard error of the row's time as a fraction of it; None where no rank timed calls on their own."""
    typical_us: float
    """The ranks' median call (their mean time where no call was timed on its own)."""


Spreads = Mapping[RowKey, RowSpread]


@dataclass(slots=True)
class _Ranks:
    errors: float = 0.0
    timed: int = 0
    typical: float = 0.0
    ranks: int = 0

    def add(self, record: RankResult) -> None:
        self.ranks += 1
        times = record.times_us
        self.typical += record.median_us if times else record.time_us
        if len(times) >= 2 and (mean := fmean(times)) > 0:
            self.errors += stdev(times, mean) / math.sqrt(len(times)) / mean
            self.timed += 1

    def spread(self) -> RowSpread:
        error = self.errors / self.timed if self.timed else None
        return RowSpread(relative_error=error, typical_us=self.typical / self.ranks)


def read_spreads(run: RunDir) -> dict[RowKey, RowSpread]:
    """Every row's spread, from the run's per-rank results (lines that do not parse are left out: `assess`
    names them)."""
    ranks: dict[RowKey, _Ranks] = {}
    for record in iter_rank_results(rank_files(run.results_dir, ".jsonl"), on_damage=lambda _: None):
        ranks.setdefault(record.key, _Ranks()).add(record)
    return {key: found.spread() for key, found in ranks.items()}


def typical_us(row: SummaryRow, spreads: Spreads) -> float:
    found = spreads.get(row.key)
    return found.typical_us if found is not None else row.time_us


def latency_bound(rows: Sequence[SummaryRow], spreads: Spreads) -> set[RowKey]:
    """The rows whose typical time is under LATENCY_FACTOR times the fastest of their op."""
    fastest: dict[str, float] = {}
    for row in rows:
        fastest[row.op] = min(fastest.get(row.op, math.inf), typical_us(row, spreads))
    return {row.key for row in rows if typical_us(row, spreads) < LATENCY_FACTOR * fastest[row.op]}


def row_noise(base: RowSpread | None, cand: RowSpread | None) -> float | None:
    """The drop (a fraction) the two rows' own errors explain at NOISE_Z; None where a side has no spread."""
    if base is None or cand is None or base.relative_error is None or cand.relative_error is None:
        return None
    return as_drop(NOISE_Z * math.hypot(base.relative_error, cand.relative_error))


def as_drop(log_spread: float) -> float:
    """A spread of log(ratio) as the drop it allows: 1 - exp(-spread), below 1 however wide."""
    return 1 - math.exp(-log_spread)


@dataclass(frozen=True, slots=True)
class Step:
    """One compared row in its series (op, placement, root), for the comparison's scatter."""

    series: tuple[str, bool, int]
    size: int
    latency_bound: bool
    ratio: float


def scatter_noise(steps: Iterable[Step]) -> dict[bool, float]:
    """latency-bound or not -> the drop the comparison's own scatter explains at NOISE_Z: the robust spread
    of the steps in log(ratio) between neighbouring sizes of one series and regime (a difference of two,
    hence / sqrt 2). A regime with too few steps takes the scatter of every step; none at all: left out."""
    by_series: dict[tuple[tuple[str, bool, int], bool], list[Step]] = {}
    for step in steps:
        if step.ratio > 0 and math.isfinite(step.ratio):
            by_series.setdefault((step.series, step.latency_bound), []).append(step)
    differences: dict[bool, list[float]] = {True: [], False: []}
    for (_, bound), series in by_series.items():
        logs = [math.log(step.ratio) for step in sorted(series, key=lambda step: step.size)]
        differences[bound] += [b - a for a, b in pairwise(logs)]
    every = _spread(differences[True] + differences[False])
    noise = {}
    for bound, found in differences.items():
        spread = _spread(found) if len(found) >= MIN_SCATTER_STEPS else every
        if spread is not None:
            noise[bound] = as_drop(NOISE_Z * spread)
    return noise


def _spread(differences: list[float]) -> float | None:
    """The standard deviation of one row's log(ratio) that steps between neighbours scatter by, robustly: their
    median distance from 0, the step between two rows that changed alike (a drop over a range of sizes moves
    one step, not the median)."""
    if len(differences) < MIN_SCATTER_STEPS:
        return None
    return SIGMA_PER_MAD * median(abs(d) for d in differences) / math.sqrt(2)
