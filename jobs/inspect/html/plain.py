"""What the CLI hands the pages from the results history, as plain data: jobs.inspect sits below
jobs.history and imports none of it (jobs/cli gathers the rows and fills these)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class PlaceRow:
    """One (op, size) of a run against its baseline: `collbench report --against-history`'s table row."""

    op: str
    size: int
    busbw: float
    runs: int
    """Healthy runs the baseline is taken over."""
    verdict: str
    median: float | None = None
    mad: float | None = None
    allowed: float | None = None
    """The largest drop still called ok, as the history judges it: max(tolerance x median, 3 MAD)."""
    rank: int | None = None
    """1: the best of those runs."""
    percentile: float | None = None
    drop: str = ""
    """How far below the median, in words ('4.2%'); empty when not judged."""
    regression: str = ""
    """The judgement's sentence for a row it calls a regression (verdict REGRESSION); '' for any other."""


@dataclass(frozen=True, slots=True)
class HistoryPlace:
    """The run's place in the history: against the baseline of its comparable runs (band and rank)."""

    header: str
    rows: list[PlaceRow]
    lines: list[str] = field(default_factory=list)
    """What the judgement says besides its rows: the runs judged against, too little history, the runs left out."""
    excluded: list[str] = field(default_factory=list)
    """The line saying the run itself is left out of every baseline, where it is."""

    @property
    def regressions(self) -> list[str]:
        """'REGRESSION: ...' for each row the judgement calls a regression, from its row."""
        return [f"REGRESSION: {row.regression}" for row in self.rows if row.regression]

    def said(self) -> list[str]:
        """Every line of the section, in the terminal's order: the run's own exclusion, the regressions, the rest."""
        return [*self.excluded, *self.regressions, *self.lines]


@dataclass(frozen=True, slots=True)
class TrendPoint:
    """One run's point of a trend."""

    run_id: str
    started: float
    value: float
    outcome: str
    excluded: str = ""
    """Why the run is left out of every baseline ('' for a healthy run)."""


@dataclass(frozen=True, slots=True)
class TrendLine:
    """One comparable set of a history trend: its runs, oldest first, and its baseline."""

    label: str
    points: list[TrendPoint]
    median: float | None = None
    mad: float | None = None
    """The baseline over the set's last healthy runs; None with too little history."""
    baseline_runs: int = 0
    higher_is_better: bool = True
    """busbw and algbw; False for time_us, where the bad side of the band is above it."""

    def worse_than_band(self) -> list[TrendPoint]:
        """The runs beyond the baseline's band (median -/+ 3 MAD) on its bad side."""
        return [point for point in self.points if self.is_worse(point)]

    def is_worse(self, point: TrendPoint) -> bool:
        return self.against_band(point) == ("below the band" if self.higher_is_better else "above the band")

    def against_band(self, point: TrendPoint) -> str:
        """'below the band', 'above the band', or '' within it (or with no baseline)."""
        if self.median is None or self.mad is None:
            return ""
        if point.value < self.median - 3 * self.mad:
            return "below the band"
        return "above the band" if point.value > self.median + 3 * self.mad else ""
