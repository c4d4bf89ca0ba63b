"""`collbench compare BASELINE CANDIDATE`: busbw size by size, with a verdict against a tolerance.

Rows are matched on (op, dtype, reduce op, root, size, placement) and rank count; whatever does not
match is stated, never silently compared. Two sweeps are compared node count by node count.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from collectives.results import SummaryRow
from collectives.sizes import format_size, parse_size
from jobs.schema import ConfigError

MatchKey = tuple[str, str, str, int, int, bool]


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

    @classmethod
    def parse(cls, default: str, bands: list[str]) -> Tolerance:
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
        return cls(default=parse_fraction(default, "--tolerance"), bands=tuple(sorted(parsed)))

    def for_size(self, size: int) -> float:
        return next((fraction for limit, fraction in self.bands if size <= limit), self.default)

    def describe(self) -> str:
        bands = ", ".join(f"sizes <= {format_size(limit)}: {fraction:.0%}" for limit, fraction in self.bands)
        return f"{self.default:.0%}" + (f" ({bands})" if bands else "")


@dataclass(slots=True)
class Comparison:
    lines: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    compared: int = 0
    regressions: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return 1 if self.regressions or not self.compared else 0


def _key(row: SummaryRow) -> MatchKey:
    return (row.op, row.dtype, row.redop, row.root, row.size, row.in_place)


HEADER = (
    f"#{'op':>15} {'size (B)':>12} {'placement':>12} {'root':>5} {'base busbw':>11} {'cand busbw':>11} "
    f"{'ratio':>7} {'tol':>5} verdict"
)


def compare_rows(base: list[SummaryRow], cand: list[SummaryRow], tolerance: Tolerance, label: str = "") -> Comparison:
    result = Comparison()
    prefix = f"{label}: " if label else ""
    base_ranks, cand_ranks = {r.nranks for r in base}, {r.nranks for r in cand}
    if base and cand and base_ranks != cand_ranks:
        result.notes.append(
            f"{prefix}rank counts differ ({sorted(base_ranks)} vs {sorted(cand_ranks)}): busbw is not comparable, "
            "nothing compared"
        )
        return result
    result.notes += _mismatches(base, cand, prefix)
    cand_by_key = {_key(r): r for r in cand}
    for row in base:
        other = cand_by_key.get(_key(row))
        if other is None:
            continue
        result.compared += 1
        tol = tolerance.for_size(row.size)
        ratio = other.busbw / row.busbw if row.busbw > 0 else float("inf") if other.busbw > 0 else 1.0
        verdict = "REGRESSION" if ratio < 1 - tol else "faster" if ratio > 1 + tol else "ok"
        placement = "in-place" if row.in_place else "out-of-place"
        result.lines.append(
            f"{(prefix + row.op):>16} {row.size:>12} {placement:>12} {row.root:>5} {row.busbw:>11.3f} "
            f"{other.busbw:>11.3f} {ratio:>7.3f} {tol:>5.0%} {verdict}"
        )
        if verdict == "REGRESSION":
            result.regressions.append(
                f"{prefix}{row.op} {row.size} B {placement}: busbw {other.busbw:.3f} GB/s is {1 - ratio:.1%} below "
                f"the baseline's {row.busbw:.3f} (tolerance {tol:.0%})"
            )
    return result


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
        unmatched = {_key(r) for r in base if r.op == op} ^ {_key(r) for r in cand if r.op == op}
        if unmatched and dtypes[0] == dtypes[1] and redops[0] == redops[1]:
            notes.append(f"{prefix}{op}: {len(unmatched)} size/placement/root row(s) present on one side only")
    return notes


def merge(parts: list[Comparison]) -> Comparison:
    total = Comparison()
    for part in parts:
        total.lines += part.lines
        total.notes += part.notes
        total.compared += part.compared
        total.regressions += part.regressions
    return total
