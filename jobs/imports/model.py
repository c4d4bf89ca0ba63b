"""What `collbench import` reads out of nccl-tests' output, whatever the format: tables of rows, each table
one `*_perf` run of one op, with the ranks it ran on. Plain data; the parsers (nccl_tests_text.py,
nccl_tests_json.py) fill it, jobs/launchers/imported.py turns it into a run directory."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from collectives.dtypes import DTYPES
from collectives.layout import LAYOUTS


class BadImport(ValueError):
    """nccl-tests output collbench cannot import: one line naming the file (and line) and what is wrong."""


PROGRAMS = {
    "all_reduce": "all_reduce",
    "all_gather": "all_gather",
    "reduce_scatter": "reduce_scatter",
    "broadcast": "broadcast",
    "reduce": "reduce",
    "alltoall": "all_to_all",
    "gather": "gather",
    "scatter": "scatter",
    "sendrecv": "sendrecv",
}
"""nccl-tests' binary (`<name>_perf`, `<name>_perf_mpi`) -> collbench's op. hypercube and alltoallv have none."""
BINARY_OF = {op: binary for binary, op in PROGRAMS.items()}
"""collbench's op -> nccl-tests' binary name (all_to_all -> alltoall)."""

DTYPE_OF = {spec.nccl_name: name for name, spec in DTYPES.items()}
"""nccl-tests' `type` column -> collbench's dtype."""

NCCL_TESTS_TEXT = "nccl-tests' text"
NCCL_TESTS_JSON = "nccl-tests' JSON"
COLLBENCH_JSON = "collbench's JSON of a run it ran"
"""Who wrote a table (Table.written_by): a `*_perf` binary, which runs NCCL, or `collbench run`'s own export,
whose run may have been gloo on GPUs (its JSON does not say)."""


@dataclass(kw_only=True, slots=True)
class Device:
    """One `#  Rank N Group G Pid P on HOST device D [BUSID] NAME` line (or config.devices[] in JSON)."""

    rank: int
    group: int = 0
    pid: int = 0
    host: str
    device: int | None = None
    bus_id: str = ""
    """PCI dddd:bb:dd as nccl-tests prints it (2.13.6 on); '' where it printed only the bus byte."""
    name: str = ""


@dataclass(kw_only=True, slots=True)
class Row:
    """One placement of one table row: nccl-tests' time, algbw, busbw and #wrong."""

    size: int
    count: int
    type: str
    """nccl-tests' type name (float, half, ...)."""
    redop: str
    root: int
    in_place: bool
    time_us: float
    algbw: float
    busbw: float
    wrong: int
    """#wrong over every rank; -1 for N/A (validation off), and for a row of the old layout beyond its
    tolerance (max_delta): that layout printed no count of wrong elements."""
    where: str
    """FILE:LINE of the row (FILE:results[i] in JSON)."""
    times_us: list[float] = field(default_factory=list)
    """Per-iteration times (JSON with per-iteration timing): the max over processes per iteration."""
    per_process: list[list[float]] = field(default_factory=list)
    """Each process's own per-iteration times, when the JSON holds them."""
    max_delta: float | None = None
    """The old layout's `error` column (nccl-tests up to 2.11): the largest |expected - actual| over every
    rank, not a count; None where #wrong was printed."""
    tolerance: float | None = None
    """nccl-tests' own bound for max_delta (deviation.tolerance), once the ranks are known."""

    @property
    def beyond_tolerance(self) -> bool:
        """The old layout's row is wrong as nccl-tests judged it: its max deviation over the type's bound."""
        return self.max_delta is not None and self.tolerance is not None and self.max_delta > self.tolerance


@dataclass(kw_only=True, slots=True)
class Table:
    """One `*_perf` run: its parameters, its ranks, its rows."""

    where: str
    """FILE:LINE where it starts."""
    written_by: str = NCCL_TESTS_TEXT
    """NCCL_TESTS_TEXT, NCCL_TESTS_JSON or COLLBENCH_JSON."""
    program: str = ""
    """`all_reduce_perf`, where the output names it (text from 2.17, JSON's args[0])."""
    op: str = ""
    """collbench's op, once resolved (resolve_op)."""
    tests_version: str = ""
    """nccl-tests' own version, where printed (2.18 on)."""
    nccl_version: int | None = None
    """NCCL_VERSION_CODE of the library (text: `nccl-library=`; JSON: nccl_version); None where not said."""
    nthreads: int = 1
    ngpus: int = 1
    min_bytes: int = 0
    max_bytes: int = 0
    step_factor: float = 2.0
    step_bytes: int = 0
    warmup_iters: int = 5
    iters: int = 20
    validation: bool = True
    graph: int = 0
    cputime: bool = False
    per_iteration: bool = False
    devices: list[Device] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    out_of_bounds: int | None = None
    avg_busbw: float | None = None
    complete: bool = False
    """Its footer (`# Avg bus bandwidth`, JSON's end_time) was seen: not cut short."""
    cut_at: str = ""
    """Where it was cut short, in words, when not complete."""
    started: str = ""
    ended: str = ""
    env: list[str] = field(default_factory=list)
    """NAME=VALUE, as nccl-tests' JSON records them."""
    errors: list[str] = field(default_factory=list)
    closings: int = 0
    """`# Avg bus bandwidth` lines seen: one per process that printed the table to its end."""
    headerless: bool = False
    """Rows with no `# nThread` line before them (pasted alone): their ranks come from --ranks."""
    stream: str = ""
    """The launcher's prefix its lines carried (`srun task 3`, `[1,0]`, `host n1`); '' where none."""
    stream_host: str = ""
    """The host that prefix names (pdsh, clush): the only place a host appears for rows with no header."""
    process: int | None = None
    """Where several processes each ran alone (nranks 1) and are kept apart: this table's process, its rank
    in the imported run; None for a table every rank of the job ran."""

    def row_keys(self) -> frozenset[tuple[int, str, str, int, bool]]:
        return frozenset((r.size, r.type, r.redop, r.root, r.in_place) for r in self.rows)


@dataclass(frozen=True, kw_only=True, slots=True)
class LoggedVersion:
    """NCCL's own `NCCL version 2.27.3+cuda12.9` line (NCCL_DEBUG=INFO or VERSION) in a text log."""

    nccl: str
    cuda: str
    """The CUDA version NCCL was built for."""
    where: str


@dataclass(kw_only=True, slots=True)
class Parsed:
    """Everything read from the files given, in order."""

    tables: list[Table] = field(default_factory=list)
    skipped: int = 0
    """Lines that are none of nccl-tests' (NCCL INFO lines, a launcher's messages): skipped, counted."""
    first_skipped: str = ""
    """FILE:LINE of the first of them."""
    notes: list[str] = field(default_factory=list)
    """Warnings, one line each: an older JSON format, duplicate tables left out."""
    logged: list[LoggedVersion] = field(default_factory=list)
    """NCCL's version lines among the lines skipped."""

    def skip(self, where: str) -> None:
        self.skipped += 1
        self.first_skipped = self.first_skipped or where


def op_of_program(program: str) -> str | None:
    """`./build/all_reduce_perf_mpi` -> all_reduce; None for a name that is no nccl-tests binary."""
    name = Path(program).name
    for suffix in ("_mpi", "_perf"):
        name = name.removesuffix(suffix)
    return PROGRAMS.get(name)


def fits(op: str, table: Table, nranks: int) -> bool:
    """The table's columns are what nccl-tests prints for `op` on `nranks` ranks."""
    layout = LAYOUTS[op]
    for row in table.rows:
        size = DTYPES[DTYPE_OF[row.type]].size if row.type in DTYPE_OF else 0
        per_rank = nranks if layout.param_is_per_rank else 1
        if (row.redop != "none") != layout.reduces or (row.root >= 0) != layout.rooted:
            return False
        if size and row.size != row.count * size * per_rank:
            return False
        if row.algbw >= 0.5 and abs(row.busbw / row.algbw - layout.bus_factor(nranks)) > 0.03:
            return False
    return True


def resolve_op(table: Table, given: str | None) -> str:
    """The table's op: from the binary's name where the output gives it, else --op, else the one op whose
    columns the rows fit (nccl-tests before 2.17 does not name its binary). BadImport otherwise."""
    if table.program:
        op = op_of_program(table.program)
        if op is None:
            raise BadImport(
                f"{table.where}: {table.program!r} is not an nccl-tests binary collbench has an op for; "
                f"allowed: {', '.join(f'{name}_perf' for name in PROGRAMS)}"
            )
        return op
    if given:
        return given
    fitting = [op for op in LAYOUTS if fits(op, table, len(table.devices))]
    if len(fitting) == 1:
        return fitting[0]
    if not fitting:
        raise BadImport(
            f"{table.where}: the table does not name its binary and its columns fit no op collbench knows on "
            f"{len(table.devices)} rank(s); name it with --op (allowed: {', '.join(LAYOUTS)})"
        )
    unnamed = (
        "rows with no header name no binary and their"
        if table.headerless
        else "the table does not name its binary (nccl-tests before 2.17 prints no 'Collective test starting' line) "
        "and its"
    )
    raise BadImport(f"{table.where}: {unnamed} columns fit {' and '.join(fitting)} alike; name it with --op")
