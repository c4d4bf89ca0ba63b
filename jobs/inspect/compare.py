"""`collbench compare BASELINE CANDIDATE`: busbw size by size, with a verdict against a tolerance and the
runs' own noise.

Rows are matched on (op, dtype, reduce op, root, size, placement) and rank count; whatever does not
match is stated, never silently compared. Two sweeps are compared node count by node count. A drop is a
regression only beyond the tolerance (a looser one for latency-bound rows) and beyond what the two runs'
noise explains (jobs.inspect.compare_noise): the rows' own errors, and the comparison's scatter.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

from collectives.results import SummaryRow, placement_name
from collectives.sizes import format_size, parse_size
from collectives.table import busbw_decimals
from jobs.config.schema import ConfigError
from jobs.inspect.compare_noise import NO_SPREAD, Spreads, Step, latency_bound, row_noise, scatter_noise

LATENCY_TOLERANCE = "20%"
"""--latency-tolerance's default: the tolerance of a latency-bound row (compare_noise.latency_bound), whose
figure a busy host or a context switch moves by more than 5% from one run to the next."""
MOST_DECIMALS = 12
"""Beyond this a float's own noise shows, not a drop."""


def decimals_apart(decimals: int, side_by_side: Iterable[tuple[float, float]]) -> int:
    """`decimals`, or more where a figure and the one it is set against (a pair of `side_by_side`: a
    regression's busbw and its baseline) differ but would print alike: a drop called a regression is
    visible in the numbers beside it (0.000123 vs 0.000134, never 0.000 vs 0.000)."""
    for a, b in side_by_side:
        while a != b and decimals < MOST_DECIMALS and f"{a:.{decimals}f}" == f"{b:.{decimals}f}":
            decimals += 1
    return decimals


def percent_apart(fraction: float) -> str:
    """A drop (a fraction) as a percentage with one decimal, or more where one would read 0.0% of a real drop."""
    percent = 100 * fraction
    return f"{percent:.{decimals_apart(1, [(percent, 0.0)])}f}%"


def figures_apart(a: float, b: float, digits: int = 3) -> tuple[str, str]:
    """Two figures in words (a regression's line), with `digits` significant digits, or more where they
    differ but would read alike."""
    while a != b and digits < MOST_DECIMALS and f"{a:.{digits}g}" == f"{b:.{digits}g}":
        digits += 1
    return f"{a:.{digits}g}", f"{b:.{digits}g}"


def parse_fraction(text: str, what: str) -> float:
    """'5%' or '0.05' -> 0.05."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(%?)\s*", text)
    if not match:
        raise ConfigError(f"{what}: {text!r} is not a tolerance; allowed: a percentage such as 5% or a fraction 0.05")
    value = float(match.group(1)) / (100 if match.group(2) else 1)
    if not 0 <= value < 1:
        raise ConfigError(f"{what}: {text!r} must be at least 0% and below 100%")
    return value


@dataclass(frozen=True, slots=True)
class Tolerance:
    default: float = 0.05
    bands: tuple[tuple[int, float], ...] = ()
    """(largest size, tolerance) pairs: sizes up to that bound get that tolerance (smallest bound first)."""
    latency: float = 0.0
    """The least tolerance of a latency-bound row (the command line's default: LATENCY_TOLERANCE)."""

    @classmethod
    def parse(cls, default: str, bands: list[str], latency: str = LATENCY_TOLERANCE) -> Tolerance:
        parsed = []
        for band in bands:
            size, sep, fraction = band.partition(":")
            if not sep:
                raise ConfigError(f"--band-tolerance: {band!r} is not SIZE:TOLERANCE; e.g. 64K:20%")
            try:
                limit = parse_size(size)
            except ValueError as error:
                raise ConfigError(f"--band-tolerance: {error}") from None
            parsed.append((limit, parse_fraction(fraction, "--band-tolerance")))
        return cls(
            default=parse_fraction(default, "--tolerance"),
            bands=tuple(sorted(parsed)),
            latency=parse_fraction(latency, "--latency-tolerance"),
        )

    def for_size(self, size: int) -> float:
        return next((fraction for limit, fraction in self.bands if size <= limit), self.default)

    def for_row(self, size: int, bound_by_latency: bool) -> float:
        """The size's tolerance, or the latency one where the row is latency-bound and that is looser."""
        return max(self.for_size(size), self.latency if bound_by_latency else 0.0)

    def describe(self) -> str:
        bands = [f"sizes <= {format_size(limit)}: {fraction:.0%}" for limit, fraction in self.bands]
        if self.latency:
            bands.append(f"latency-bound sizes: {self.latency:.0%}")
        return f"{self.default:.0%}" + (f" ({', '.join(bands)})" if bands else "")


RowChange = Literal["ok", "faster", "REGRESSION", "INCOMPLETE"]


@dataclass(frozen=True, slots=True)
class ComparedRow:
    label: str
    """The node count of a sweep comparison ('2n'); empty for two runs."""
    op: str
    size: int
    in_place: bool
    root: int
    base_busbw: float
    cand_busbw: float
    tolerance: float
    """The tolerance of this row: its size's, or the latency one where it is latency-bound."""
    nranks: int = 0
    base_ranks: int = 0
    """Ranks behind the baseline's figure; fewer than nranks makes the row incomplete."""
    cand_ranks: int = 0
    noise: float | None = None
    """The drop (a fraction) the two runs' noise explains for this row: NOISE_Z of its errors or of the
    comparison's scatter, the larger; None where only the figures were compared."""
    latency_bound: bool = False

    @property
    def band(self) -> float:
        """The drop a regression must exceed: the tolerance, or the noise where that is wider."""
        return max(self.tolerance, self.noise or 0.0)

    @property
    def incomplete(self) -> list[str]:
        """The sides whose figure is not over every rank."""
        sides = (("baseline", self.base_ranks), ("candidate", self.cand_ranks))
        return [f"{side} {ranks}/{self.nranks} ranks" for side, ranks in sides if ranks < self.nranks]

    @property
    def ratio(self) -> float:
        if self.base_busbw > 0:
            return self.cand_busbw / self.base_busbw
        return float("inf") if self.cand_busbw > 0 else 1.0

    @property
    def verdict(self) -> RowChange:
        if self.incomplete:
            return "INCOMPLETE"
        if self.ratio < 1 - self.band:
            return "REGRESSION"
        return "faster" if self.ratio * (1 - self.band) > 1 else "ok"  # as far above as a regression is below

    @property
    def placement(self) -> str:
        return placement_name(self.in_place)

    def line(self, decimals: int, ratio_decimals: int = 3) -> str:
        name = f"{self.label}: {self.op}" if self.label else self.op
        return (
            f"{name:>16} {self.size:>12} {self.placement:>12} {self.root:>5} {self.base_busbw:>11.{decimals}f} "
            f"{self.cand_busbw:>11.{decimals}f} {self.ratio:>7.{ratio_decimals}f} {self.tolerance:>5.0%} "
            f"{'-' if self.noise is None else f'{self.noise:.1%}':>6} {self.verdict}"
        )

    def _noise_words(self) -> str:
        return "" if self.noise is None else f", the runs' noise {self.noise:.1%}"

    def regression(self) -> str:
        prefix = f"{self.label}: " if self.label else ""
        cand, base = figures_apart(self.cand_busbw, self.base_busbw)
        return (
            f"{prefix}{self.op} {self.size} B {self.placement}: busbw {cand} GB/s is "
            f"{percent_apart(1 - self.ratio)} below the baseline's {base} "
            f"(tolerance {self.tolerance:.0%}{', latency-bound' if self.latency_bound else ''}{self._noise_words()})"
        )


@dataclass(slots=True)
class Comparison:
    rows: list[ComparedRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def regressions(self) -> list[str]:
        return [row.regression() for row in self.rows if row.verdict == "REGRESSION"]

    @property
    def incomplete(self) -> list[str]:
        return [
            f"{row.label + ': ' if row.label else ''}{row.op} {row.size} B {row.placement}: not every rank reported "
            f"({', '.join(row.incomplete)}), so it cannot be called ok"
            for row in self.rows
            if row.verdict == "INCOMPLETE"
        ]

    @property
    def exit_code(self) -> int:
        return 1 if self.regressions or self.incomplete or not self.rows else 0

    def lines(self) -> list[str]:
        """The table's rows, every busbw with the same decimals: nccl-tests' two, or more for small figures
        and wherever a regression's two figures would otherwise print alike (its ratio too)."""
        judged = [row for row in self.rows if row.verdict in ("REGRESSION", "faster")]
        decimals = decimals_apart(
            busbw_decimals(v for row in self.rows for v in (row.base_busbw, row.cand_busbw)),
            [(row.cand_busbw, row.base_busbw) for row in judged],
        )
        ratio_decimals = decimals_apart(3, [(row.ratio, 1.0) for row in judged if row.ratio != float("inf")])
        return [row.line(decimals, ratio_decimals) for row in self.rows]

    def to_plain(self) -> dict[str, Any]:
        return {
            "compared": len(self.rows),
            "regressions": self.regressions,
            "incomplete": self.incomplete,
            "notes": self.notes,
            "rows": [
                {**asdict(row), "ratio": row.ratio, "band": row.band, "verdict": row.verdict} for row in self.rows
            ],
        }


HEADER = (
    f"#{'op':>15} {'size (B)':>12} {'placement':>12} {'root':>5} {'base busbw':>11} {'cand busbw':>11} "
    f"{'ratio':>7} {'tol':>5} {'noise':>6} verdict"
)


def compare_rows(
    base: list[SummaryRow],
    cand: list[SummaryRow],
    tolerance: Tolerance,
    label: str = "",
    spreads: tuple[Spreads, Spreads] | None = None,
) -> Comparison:
    """Every row of both, matched; `spreads`: each run's (compare_noise.read_spreads), whose noise widens a
    row's band (a row with no per-iteration times on a side: NO_SPREAD); None compares the figures alone."""
    result = Comparison()
    prefix = f"{label}: " if label else ""
    empty = [side for side, rows in (("baseline", base), ("candidate", cand)) if not rows]
    if empty:
        result.notes.append(f"{prefix}no results in the {' or the '.join(empty)} (did its job run?), nothing compared")
        return result
    base_ranks, cand_ranks = {r.nranks for r in base}, {r.nranks for r in cand}
    if base_ranks != cand_ranks:
        result.notes.append(
            f"{prefix}rank counts differ ({sorted(base_ranks)} vs {sorted(cand_ranks)}): busbw is not comparable, "
            "nothing compared"
        )
        return result
    result.notes += _mismatches(base, cand, prefix)
    bound = latency_bound(base, spreads[0] if spreads else {})
    cand_by_key = {r.key: r for r in cand}
    for row in base:
        other = cand_by_key.get(row.key)
        if other is not None:
            result.rows.append(
                ComparedRow(
                    label=label, op=row.op, size=row.size, in_place=row.in_place, root=row.root,
                    base_busbw=row.busbw, cand_busbw=other.busbw,
                    tolerance=tolerance.for_row(row.size, row.key in bound), nranks=row.nranks,
                    base_ranks=row.ranks_reporting, cand_ranks=other.ranks_reporting, latency_bound=row.key in bound,
                )
            )  # fmt: skip
    if spreads is not None:
        result.rows, unmeasured = _with_noise(result.rows, base, spreads)
        if unmeasured:
            result.notes.append(
                f"{prefix}{unmeasured} row(s) with no per-iteration times on a side (a loop timer, or an import): "
                f"their noise is taken as {NO_SPREAD:.0%}; bench.per_iteration=true measures it"
            )
        result.notes += _wide_noise(result.rows, prefix)
    return result


def _wide_noise(rows: list[ComparedRow], prefix: str) -> list[str]:
    """One line where the runs are noisier than the tolerance: what a drop must then exceed."""
    wide = [row for row in rows if (row.noise or 0.0) > row.tolerance]
    if not wide:
        return []
    return [
        f"{prefix}the runs' noise is wider than the tolerance on {len(wide)} of {len(rows)} row(s), up to "
        f"{max(row.band for row in wide):.0%}: a drop within it is not called a regression (more iterations or a "
        "quieter machine narrow it)"
    ]


def _with_noise(
    rows: list[ComparedRow], base: list[SummaryRow], spreads: tuple[Spreads, Spreads]
) -> tuple[list[ComparedRow], int]:
    """The rows with the noise their runs explain, and how many had no spread to measure it by."""
    keys = {(r.op, r.size, r.in_place, r.root): r.key for r in base}
    scatter = scatter_noise(
        Step((row.op, row.in_place, row.root), row.size, row.latency_bound, row.ratio) for row in rows
    )
    noisy, unmeasured = [], 0
    for row in rows:
        key = keys[(row.op, row.size, row.in_place, row.root)]
        own = row_noise(spreads[0].get(key), spreads[1].get(key))
        unmeasured += own is None
        noise = max(NO_SPREAD if own is None else own, scatter.get(row.latency_bound, 0.0))
        noisy.append(replace(row, noise=noise))
    return noisy, unmeasured


def _mismatches(base: list[SummaryRow], cand: list[SummaryRow], prefix: str) -> list[str]:
    notes = []
    base_ops, cand_ops = {r.op for r in base}, {r.op for r in cand}
    for side, only in (("baseline", base_ops - cand_ops), ("candidate", cand_ops - base_ops)):
        if only:
            notes.append(f"{prefix}ops only in the {side}, not compared: {', '.join(sorted(only))}")
    for op in sorted(base_ops & cand_ops):
        dtypes = ({r.dtype for r in base if r.op == op}, {r.dtype for r in cand if r.op == op})
        redops = ({r.redop for r in base if r.op == op}, {r.redop for r in cand if r.op == op})
        if dtypes[0] != dtypes[1]:
            notes.append(
                f"{prefix}{op}: dtypes differ ({'/'.join(sorted(dtypes[0]))} vs {'/'.join(sorted(dtypes[1]))})"
            )
        elif redops[0] != redops[1]:
            notes.append(
                f"{prefix}{op}: reduce ops differ ({'/'.join(sorted(redops[0]))} vs {'/'.join(sorted(redops[1]))})"
            )
        unmatched = {r.key for r in base if r.op == op} ^ {r.key for r in cand if r.op == op}
        if unmatched and dtypes[0] == dtypes[1] and redops[0] == redops[1]:
            notes.append(f"{prefix}{op}: {len(unmatched)} size/placement/root row(s) present on one side only")
    return notes


def merge(parts: list[Comparison]) -> Comparison:
    return Comparison(rows=[r for p in parts for r in p.rows], notes=[n for p in parts for n in p.notes])
