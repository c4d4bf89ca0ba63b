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
from jobs.imports.label import Label, label_of
from jobs.imports.model import DTYPE_OF, BadImport, Device, Parsed, Table, resolve_op
from jobs.imports.nccl_tests_json import looks_like_json, parse_json
from jobs.imports.nccl_tests_text import parse_text


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


def read_outputs(paths: Sequence[Path], op: str | None = None) -> Job:
    """The job in `paths` (nccl-tests text or JSON); `op` names the op of tables that do not name theirs."""
    if op is not None and op not in LAYOUTS:
        raise BadImport(f"--op: {op!r} is not an op; allowed: {', '.join(LAYOUTS)}")
    parsed = Parsed()
    for path in paths:
        if not path.is_file():
            raise BadImport(f"{path}: no such file")
        try:
            (parse_json if looks_like_json(path) else parse_text)(path, parsed)
        except OSError as error:
            raise BadImport(f"{path}: cannot be read: {error.strerror or error}") from None
    cut = [table.cut_at for table in parsed.tables if not table.complete]
    tables = [table for table in parsed.tables if table.rows]
    if not tables:
        names = ", ".join(str(p) for p in paths)
        raise BadImport(f"{names}: no nccl-tests results in it (no rows of a *_perf table, no JSON results)")
    for table in tables:
        table.op = resolve_op(table, op)
        if not table.devices:
            raise BadImport(f"{table.where}: no '# Using devices' lines before its rows: the ranks are unknown")
        for row in table.rows:
            if row.type not in DTYPE_OF:
                raise BadImport(
                    f"{row.where}: type {row.type!r} has no collbench dtype; allowed: {', '.join(DTYPE_OF)}"
                )
    kept = _without_duplicates(tables, parsed)
    devices = kept[0].devices
    for table in kept[1:]:
        if len(table.devices) != len(devices):
            raise BadImport(
                f"{table.where}: {table.op} ran on {len(table.devices)} ranks, {kept[0].where} on {len(devices)}: "
                "one run directory holds one job's ranks; import them separately"
            )
    try:
        digest = files_digest(paths)
    except OSError as error:
        raise BadImport(f"{error.filename}: cannot be read: {error.strerror or error}") from None
    return Job(
        tables=kept, devices=devices, label=label_of(kept, devices, parsed.logged), digest=digest,
        notes=parsed.notes, skipped=parsed.skipped, first_skipped=parsed.first_skipped, cut=cut,
    )  # fmt: skip


def files_digest(paths: Sequence[Path]) -> str:
    """sha256 over the files' contents, whatever their order and names: the sorted sha256 of each file's
    bytes, one a line, hashed again. A file given twice counts once (its tables are one job's either way)."""
    each = sorted({hashlib.sha256(path.read_bytes()).hexdigest() for path in paths})
    return hashlib.sha256("".join(f"{digest}\n" for digest in each).encode()).hexdigest()


def _without_duplicates(tables: list[Table], parsed: Parsed) -> list[Table]:
    """The first table of each (op, rows, ranks); the others are what every rank of an MPI job printed."""
    kept: list[Table] = []
    seen: dict[tuple[object, ...], Table] = {}
    left_out: list[str] = []
    for table in tables:
        key = (table.op, table.row_keys(), len(table.devices))
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
