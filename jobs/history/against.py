"""A run held against its own cluster's past: for each (op, size) of the run, its busbw against the
baseline of the runs before it with the same config fingerprint, node count and world size (the median of
the last K healthy ones, with its median absolute deviation). Plain data and one pure function: the queries that
fetch the past live in queries.py, the printing in the CLI.

A drop is a regression when it is beyond the larger of the tolerance (a fraction of the median; at least the
latency tolerance for a latency-bound size) and MADS robust standard deviations of the history (SIGMA_PER_MAD
median absolute deviations each): a noisy figure needs a larger drop to be called, and a run of many rows is
not flagged somewhere by chance. With fewer than MIN_BASELINE_RUNS healthy runs before it a row is not
judged, and says so."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from statistics import median
from typing import Any, Literal

from collectives.table import busbw_decimals
from jobs.inspect.compare import decimals_apart, figures_apart, percent_apart
from jobs.inspect.compare_noise import LATENCY_FACTOR, SIGMA_PER_MAD

BASELINE_RUNS = 20
"""K: a baseline is the median of the last K healthy runs."""
MIN_BASELINE_RUNS = 3
"""Fewer healthy runs than this: too little history, said as such, never guessed."""
MADS = 3.0
"""A drop must also exceed this many robust standard deviations (SIGMA_PER_MAD x the MAD) to be a regression:
3 sigma, where 3 raw MADs (2 sigma) flag one row in 40 of a healthy run by chance."""

Key = tuple[str, int]
"""(op, requested size)."""
Past = Sequence[tuple[str, float]]
"""(run id, busbw) of the healthy runs before, oldest first."""
HistoryChange = Literal["ok", "faster", "REGRESSION", "too little history"]


def median_mad(values: Sequence[float]) -> tuple[float, float]:
    """A baseline's centre and spread: the median of `values` and their median absolute deviation."""
    centre = median(values)
    return centre, median(abs(value - centre) for value in values)


@dataclass(frozen=True, slots=True)
class RowVerdict:
    """One (op, size) of the run against its baseline."""

    op: str
    size: int
    busbw: float
    runs: int
    """Healthy runs the baseline is taken over (at most K)."""
    median: float | None = None
    mad: float | None = None
    allowed: float | None = None
    """The largest drop (GB/s) still called ok: max(tolerance x median, MADS x SIGMA_PER_MAD x MAD)."""
    rank: int | None = None
    """1 + how many of those runs reached a higher busbw: 1 is the best of them all."""
    percentile: float | None = None
    """Of those runs, the share (%) this one beats or equals."""
    against: tuple[str, ...] = ()
    """The run ids of the baseline, oldest first."""
    verdict: HistoryChange = "too little history"
    latency_bound: bool = False
    """Its size is latency-bound in the run (its time under LATENCY_FACTOR x its op's fastest): the latency
    tolerance applies."""

    @property
    def drop(self) -> float | None:
        """How far below the median, as a fraction of it (negative: above it)."""
        if self.median is None or self.median <= 0:
            return None
        return 1 - self.busbw / self.median

    def drop_words(self) -> str:
        """The drop as a percentage, with a decimal, or more where one would read 0.0% of a real drop."""
        return percent_apart(self.drop or 0)

    def regression(self) -> str:
        assert self.median is not None and self.mad is not None and self.allowed is not None
        busbw, median = figures_apart(self.busbw, self.median, 4)
        return (
            f"{self.op} {self.size} B: busbw {busbw} GB/s is {self.drop_words()} below the median "
            f"{median} GB/s of the last {self.runs} healthy runs (MAD {self.mad:.3g}; a drop of more "
            f"than {self.allowed:.3g} GB/s is a regression)"
        )


@dataclass(slots=True)
class Judgement:
    rows: list[RowVerdict] = field(default_factory=list)
    tolerance: str = ""
    """The tolerance in words, for the header."""

    @property
    def regressions(self) -> list[RowVerdict]:
        return [row for row in self.rows if row.verdict == "REGRESSION"]

    @property
    def thin(self) -> list[RowVerdict]:
        """Rows with too little history to judge."""
        return [row for row in self.rows if row.verdict == "too little history"]

    @property
    def against(self) -> list[str]:
        """Every run some row was judged against, oldest first."""
        return list(dict.fromkeys(run for row in self.rows for run in row.against))

    @property
    def exit_code(self) -> int:
        return 1 if self.regressions else 0

    def thin_line(self) -> str:
        """One line for the rows not judged, or ''."""
        if not self.thin:
            return ""
        most = max(row.runs for row in self.thin)
        what = "any row" if len(self.thin) == len(self.rows) else f"{len(self.thin)} of {len(self.rows)} row(s)"
        return (
            f"too little history to judge {what}: at most {most} healthy run(s) before it with the same cluster, "
            f"config fingerprint, node count and world size, at least {MIN_BASELINE_RUNS} needed; not judged"
        )

    def to_plain(self) -> dict[str, Any]:
        return {
            "tolerance": self.tolerance,
            "mads": MADS,
            "sigma_per_mad": SIGMA_PER_MAD,
            "min_runs": MIN_BASELINE_RUNS,
            "regressions": [row.regression() for row in self.regressions],
            "against": self.against,
            "rows": [{**asdict(row), "against": list(row.against), "drop": row.drop} for row in self.rows],
        }


def latency_bound(figures: Mapping[Key, float]) -> set[Key]:
    """The (op, size) whose time per call is under LATENCY_FACTOR times its op's fastest. busbw is an op's
    bytes over its time times a factor of the op and rank count alone, so size / busbw orders its times."""
    times = {key: key[1] / busbw for key, busbw in figures.items() if busbw > 0}
    fastest: dict[str, float] = {}
    for (op, _), time in times.items():
        fastest[op] = min(fastest.get(op, time), time)
    return {key for key, time in times.items() if time < LATENCY_FACTOR * fastest[key[0]]}


def judge(
    figures: Mapping[Key, float],
    past: Mapping[Key, Past],
    tolerance: Callable[[int], float],
    k: int = BASELINE_RUNS,
    mads: float = MADS,
    min_runs: int = MIN_BASELINE_RUNS,
    latency: float = 0.0,
) -> Judgement:
    """Each (op, size) of `figures` (the run's busbw) against the last `k` of `past` at that key;
    `tolerance(size)` is the fraction of the median a drop may always reach, at least `latency` where the
    size is latency-bound in the run."""
    result = Judgement()
    bound = latency_bound(figures) if latency else set()
    for (op, size), busbw in sorted(figures.items()):
        last = list(past.get((op, size), ()))[-k:]
        if len(last) < min_runs:
            result.rows.append(RowVerdict(op=op, size=size, busbw=busbw, runs=len(last)))
            continue
        values = [value for _, value in last]
        centre, mad = median_mad(values)
        fraction = max(tolerance(size), latency if (op, size) in bound else 0.0)
        allowed = max(fraction * centre, mads * SIGMA_PER_MAD * mad)
        verdict: HistoryChange = "ok"
        if busbw < centre - allowed:
            verdict = "REGRESSION"
        elif busbw > centre + allowed:
            verdict = "faster"
        result.rows.append(
            RowVerdict(
                op=op, size=size, busbw=busbw, runs=len(last), median=centre, mad=mad, allowed=allowed,
                rank=1 + sum(value > busbw for value in values),
                percentile=100.0 * sum(value <= busbw for value in values) / len(values),
                against=tuple(run for run, _ in last), verdict=verdict, latency_bound=(op, size) in bound,
            )
        )  # fmt: skip
    return result


HEADER = (
    f"#{'op':>15} {'size (B)':>12} {'busbw':>10} {'median':>10} {'MAD':>8} {'runs':>5} {'rank':>5} "
    f"{'pct':>6} {'drop':>7} verdict"
)


def lines(judgement: Judgement) -> list[str]:
    """The rows as a table, nccl-tests' way: one line per (op, size). The figures share their decimals: three,
    or more for small figures and wherever a judged row's busbw and median would otherwise print alike."""
    judged = [row for row in judgement.rows if row.median is not None]
    decimals = decimals_apart(
        max(3, busbw_decimals(v for row in judgement.rows for v in (row.busbw, row.median) if v is not None)),
        [(row.busbw, row.median) for row in judged if row.median is not None and row.verdict != "ok"],
    )
    out = [HEADER]
    for row in judgement.rows:
        busbw = f"{row.busbw:>10.{decimals}f}"
        if row.median is None or row.mad is None:
            out.append(f"{row.op:>16} {row.size:>12} {busbw} {'-':>10} {'-':>8} {row.runs:>5} "
                       f"{'-':>5} {'-':>6} {'-':>7} {row.verdict}")  # fmt: skip
            continue
        out.append(
            f"{row.op:>16} {row.size:>12} {busbw} {row.median:>10.{decimals}f} {row.mad:>8.{decimals}f} "
            f"{row.runs:>5} {row.rank:>5} {row.percentile:>5.0f}% {row.drop_words():>7} {row.verdict}"
        )
    return out


def best_figures(rows: Sequence[Any]) -> dict[Key, float]:
    """The run's figure per (op, requested size): its best busbw over placements and roots, as the history's
    trend takes it; rows of an isolate group are not the whole job's and are left out."""
    best: dict[Key, float] = {}
    for row in rows:
        if getattr(row, "group", ""):
            continue
        key = (str(row.op), int(row.requested_size))
        best[key] = max(best.get(key, float("-inf")), float(row.busbw))
    return best
