"""Every file given to `collbench import`, read into one job's tables: each file's format told by its first
byte (JSON or text), each table's op resolved, duplicate tables (every MPI rank printing its own) left out
and said, the tables checked to be one job's (the same ranks), the job labelled from what the files say
(label.py), and the files' digest taken, by which the same files imported again are found."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from collectives.layout import LAYOUTS
from jobs.imports import deviation, processes
from jobs.imports.label import Label, label_of
from jobs.imports.model import DTYPE_OF, BadImport, Device, Parsed, Table, resolve_op
from jobs.imports.nccl_tests_json import looks_like_json, parse_json
from jobs.imports.nccl_tests_text import parse_text
from jobs.imports.processes import apart, collapse, fill_ranks


@dataclass(kw_only=True, slots=True)
class Job:
    """What one run directory will hold: the tables kept, the ranks, and what was said on the way."""

    tables: list[Table]
    devices: list[Device]
    label: Label
    """What the files say the job ran on."""
    digest: str
    """files_digest of the files read."""
    notes: list[str] = field(default_factory=list)
    skipped: int = 0
    first_skipped: str = ""
    cut: list[str] = field(default_factory=list)
    """Where the output was cut short: the run is incomplete."""


def read_outputs(paths: Sequence[Path], op: str | None = None, ranks: int | None = None) -> Job:
    """The job in `paths` (nccl-tests text or JSON); `op` names the op of tables that do not name theirs,
    `ranks` the ranks of tables that do not list theirs (rows pasted with no header)."""
    if op is not None and op not in LAYOUTS:
        raise BadImport(f"--op: {op!r} is not an op; allowed: {', '.join(LAYOUTS)}")
    if ranks is not None and ranks < 1:
        raise BadImport(f"--ranks: {ranks} is not a number of ranks; allowed: 1 or more")
    parsed = Parsed()
    for path in paths:
        if not path.is_file():
            raise BadImport(f"{path}: no such file")
        try:
            (parse_json if looks_like_json(path) else parse_text)(path, parsed)
        except OSError as error:
            raise BadImport(f"{path}: cannot be read: {error.strerror or error}") from None
    tables = _tables(parsed, paths, op, ranks)
    cut = [table.cut_at for table in parsed.tables if not table.complete and not table.rows]
    cut += list(dict.fromkeys(table.cut_at for table in tables if not table.complete))
    kept = _without_duplicates(tables, parsed)
    for table in kept:  # once per table kept: every MPI rank may have printed the same one
        _judge(table, parsed)
    devices = _ranks_of(kept, parsed)
    try:
        digest = files_digest(paths)
    except OSError as error:
        raise BadImport(f"{error.filename}: cannot be read: {error.strerror or error}") from None
    return Job(
        tables=kept, devices=devices, label=label_of(kept, devices, parsed.logged), digest=digest,
        notes=parsed.notes, skipped=parsed.skipped, first_skipped=parsed.first_skipped, cut=cut,
    )  # fmt: skip


def _tables(parsed: Parsed, paths: Sequence[Path], op: str | None, ranks: int | None) -> list[Table]:
    """The tables with rows, each with its ranks (told by its figures where it lists none and --ranks is not
    given), each process's apart, its op resolved, a size one process printed more than once kept once, and
    its types checked."""
    with_rows = [table for table in parsed.tables if table.rows]
    if not with_rows:
        names = ", ".join(str(p) for p in paths)
        raise BadImport(f"{names}: no nccl-tests results in it (no rows of a *_perf table, no JSON results)")
    tables = []
    for table in with_rows:
        fill_ranks(table, ranks, op, parsed.notes)
        tables += apart(table)
    for table in tables:
        table.op = resolve_op(table, op)
        collapse(table, parsed.notes)
        for row in table.rows:
            if row.type not in DTYPE_OF:
                raise BadImport(
                    f"{row.where}: type {row.type!r} has no collbench dtype; allowed: {', '.join(DTYPE_OF)}"
                )
    if any(table.headerless for table in tables):
        parsed.notes.append(
            "rows with no header: their iterations and warm-up are not said (recorded as nccl-tests' defaults, "
            "20 and 5)"
        )
    return tables


def _judge(table: Table, parsed: Parsed) -> None:
    """The old layout's error column against nccl-tests' tolerance, and its own count beside it."""
    if not any(row.max_delta is not None for row in table.rows):
        return
    beyond = deviation.judge(table.rows, len(table.devices))
    if table.process is None and table.out_of_bounds is not None and table.out_of_bounds != beyond:
        parsed.notes.append(
            f"{table.where}: nccl-tests counted {table.out_of_bounds} row(s) out of bounds, its error column read "
            f"against the tolerance gives {beyond} (the column prints one digit)"
        )


def _ranks_of(tables: list[Table], parsed: Parsed) -> list[Device]:
    """The job's ranks: the tables' own where they share them; one rank per process where each process ran
    alone (nranks 1), each table then numbered with its process (table.process). BadImport where the tables
    are several jobs'."""
    identities = list(dict.fromkeys(_identity(table) for table in tables))
    if len(identities) == 1:
        return tables[0].devices
    first = tables[0]
    other = next(table for table in tables if _identity(table) != _identity(first))
    if any(len(table.devices) != 1 for table in tables):
        said = (
            f"{len(other.devices)} ranks, {first.where} on {len(first.devices)}"
            if len(other.devices) != len(first.devices)
            else f"other ranks ({_hosts(other)}) than {first.where} ({_hosts(first)})"
        )
        raise BadImport(
            f"{other.where}: {other.op} ran on {said}: one run directory holds one job's ranks; import them separately"
        )
    how = f"; {processes.ORDER_ONLY}" if any(table.process is not None for table in tables) else ""
    for table in tables:
        table.process = identities.index(_identity(table))
    parsed.notes.append(
        f"{len(identities)} processes, each alone (nranks 1): kept apart, each a rank of its own in the run "
        f"(group 'process N'), never averaged{how}"
    )
    return [next(t for t in tables if t.process == index).devices[0] for index in range(len(identities))]


def files_digest(paths: Sequence[Path]) -> str:
    """sha256 over the files' contents, whatever their order and names: the sorted sha256 of each file's
    bytes, one a line, hashed again. A file given twice counts once (its tables are one job's either way)."""
    each = sorted({hashlib.sha256(path.read_bytes()).hexdigest() for path in paths})
    return hashlib.sha256("".join(f"{digest}\n" for digest in each).encode()).hexdigest()


def _identity(table: Table) -> tuple[object, ...]:
    """Who ran the table: its ranks' hosts and devices (and, for a process alone, its pid: several such
    processes may share a host and a device), or the process it was told apart as."""
    if table.process is not None:
        return (table.where, table.process)
    alone = len(table.devices) == 1
    return tuple((d.rank, d.host, d.device, d.bus_id, d.pid if alone else 0) for d in table.devices)


def _hosts(table: Table) -> str:
    return ", ".join(dict.fromkeys(device.host for device in table.devices))


def _without_duplicates(tables: list[Table], parsed: Parsed) -> list[Table]:
    """The first table of each (op, rows, ranks); the others are the same job's table printed again (logs
    concatenated twice, every rank of an MPI job printing its own)."""
    kept: list[Table] = []
    seen: dict[tuple[object, ...], Table] = {}
    left_out: list[str] = []
    for table in tables:
        key = (table.op, table.row_keys(), _identity(table))
        if key in seen:
            left_out.append(table.where)
            continue
        seen[key] = table
        kept.append(table)
    if left_out:
        parsed.notes.append(
            f"{len(left_out)} duplicate table(s) left out, the first of each kept (each rank of an MPI job printed "
            f"its own): {', '.join(left_out[:5])}{' ...' if len(left_out) > 5 else ''}"
        )
    return kept
