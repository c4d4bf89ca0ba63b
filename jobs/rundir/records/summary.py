"""summary.json: the run's verdict and every aggregated row, written once when the run has ended."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from collectives.results import SummaryRow
from jobs.rundir.records.codec import Format, Plain


@dataclass(frozen=True, slots=True)
class SetupTime:
    """The process group's set-up time over the ranks that recorded it."""

    ranks: int
    """Ranks that recorded their set-up."""
    slowest_rank: int
    slowest_host: str
    slowest_s: float
    median_s: float
    last_arrival_rank: int
    """The rank that entered the set-up last: the others waited for it."""
    last_arrival_host: str
    arrival_spread_s: float
    """How long after the first rank the last one entered the set-up."""
    after_all_arrived_s: float
    """From the last rank's arrival to the last rank's completion: the set-up itself."""
    connect_ranks: int = 0
    """Ranks that recorded their first collective (status setup.connect_s); 0: none did (the figures
    below are then unset)."""
    connect_slowest_rank: int = -1
    connect_slowest_host: str = ""
    connect_slowest_s: float = 0.0
    """The longest first collective: on NCCL the connections the communicator makes on first use (since
    NCCL 2.22), which the set-up leaves out. A rank's time includes its wait for ranks set up after it."""
    connect_median_s: float = 0.0

    def describe(self, backend: str) -> str:
        what = "NCCL communicator, created eagerly" if backend == "nccl" else f"{backend} process group"
        return (
            f"set-up ({what}): slowest rank {self.slowest_rank} on {self.slowest_host} {self.slowest_s:.3f} s, "
            f"median {self.median_s:.3f} s over {self.ranks} rank(s); last to arrive rank {self.last_arrival_rank} "
            f"on {self.last_arrival_host}, {self.arrival_spread_s:.3f} s after the first; "
            f"{self.after_all_arrived_s:.3f} s from its arrival to the last rank ready{self._connect_clause(backend)}"
        )

    def _connect_clause(self, backend: str) -> str:
        if not self.connect_ranks:
            return ""
        what = "first collective (NCCL's connections)" if backend == "nccl" else "first collective"
        over = f" over {self.connect_ranks} rank(s)" if self.connect_ranks != self.ranks else ""
        return (
            f"; {what} slowest rank {self.connect_slowest_rank} on {self.connect_slowest_host} "
            f"{_short(self.connect_slowest_s)}, median {_short(self.connect_median_s)}{over}"
        )


def _short(seconds: float) -> str:
    """A time that may be well under a millisecond (gloo's first call) still reads as more than 0.000 s."""
    return f"{seconds:.3f} s" if seconds >= 0.1 else f"{seconds * 1e3:.3g} ms"


SUMMARY_VERSION = 3


@dataclass(kw_only=True, slots=True)
class Summary:
    """summary.json."""

    run_id: str
    passed: bool
    problems: list[str] = field(default_factory=list)
    """One line per failed rank, missing rank or wrong result, cause first."""
    setup: SetupTime | None = None
    fabric: dict[str, Any] | None = None
    """The fabric section (jobs.inspect.fabric.FabricReport.to_json): hosts, findings, failures (in words),
    failure_records (each with its hosts), notes; a summary written before failure_records has none."""
    rows: list[SummaryRow] = field(default_factory=list)
    version: int = SUMMARY_VERSION
    """The format of this file."""


def _from_v1(plain: Plain) -> Plain:
    return plain


def _from_v2(plain: Plain) -> Plain:
    """Format 3 added setup's connect_* figures; a format 2 summary had none (connect_ranks 0)."""
    return plain


SUMMARY = Format("summary.json", Summary, SUMMARY_VERSION, {1: _from_v1, 2: _from_v2}, pretty=True)
