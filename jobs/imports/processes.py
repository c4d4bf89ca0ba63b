"""Whose rows a table holds: the ranks of rows pasted with no header (--ranks), and the rows several processes
printed, kept apart and never averaged into one row.

A non-MPI build of nccl-tests run under mpirun or srun starts N processes that each run alone (nranks 1) and
each print a whole table. With a launcher's prefix their lines are read apart (prefixes.py) and each is a
table of its own; without one their lines interleave into one table whose `# Using devices` lines repeat
rank 0 (or, pasted with no header, whose rows repeat their sizes): the k-th row of each size is taken as
the k-th process's, the only order the output keeps.

One process may print a size more than once: nccl-tests rounds the count down per rank, so sizes asked for
one after the other can print alike (with a step factor, only as 0 elements: `alltoall_perf -b 8 -g 2`
prints two 0 B rows, for 8 and 16 B). Those are kept once (collapse), never taken for other processes."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from collectives.dtypes import DTYPES
from collectives.layout import LAYOUTS
from jobs.imports.model import DTYPE_OF, BadImport, Device, Row, Table, op_of_program
from jobs.imports.rank_count import infer_ranks
from jobs.imports.text_rows import repeated_keys
from jobs.rundir.records.run import UNKNOWN

ORDER_ONLY = "their rows told apart by the order they were printed (the k-th row of each size is process k's)"


def fill_ranks(table: Table, ranks: int | None, op: str | None, notes: list[str]) -> None:
    """A table with no `# Using devices` lines before its rows: its ranks from --ranks, else from its figures
    where its op's bus factor tells them (rank_count.py, said in `notes`), on the host its launcher's prefix
    names (pdsh, clush) where one does, else unknown."""
    if table.devices:
        return
    if ranks is None:
        ranks, how = infer_ranks(table, op_of_program(table.program) if table.program else op)
        notes.append(f"{table.where}: {how}; give --ranks N to say otherwise")
    table.devices = [Device(rank=rank, host=table.stream_host or UNKNOWN) for rank in range(ranks)]


def apart(table: Table) -> list[Table]:
    """The table as each process printed it, where several printed theirs interleaved into it; [table]
    where one job printed it. BadImport where the processes cannot be told apart."""
    numbers = [device.rank for device in table.devices]
    interleaved = len(set(numbers)) < len(numbers)
    if interleaved and set(numbers) != {0}:
        raise BadImport(
            f"{table.where}: its '# Using devices' lines name rank(s) "
            f"{', '.join(str(n) for n in sorted(set(numbers)))} more than once: several processes printed their "
            "runs interleaved, each on more than one GPU, and their rows cannot be told apart; import each "
            "process's output on its own (srun --label, mpirun --tag-output or --output-filename)"
        )
    if interleaved:
        return _split(table, len(table.devices), table.devices)
    printers = _printers(table)
    if printers == 1:
        _check_one_process(table)
        return [table]
    return _split(table, printers, [table.devices[0]] * printers)


def _printers(table: Table) -> int:
    """How many processes printed a table whose device lines do not say it: one where they list its ranks
    (a job of several ranks prints from one process); for rows pasted alone on one rank, the times each
    size was printed (a size printed as 0 elements aside: one process may print it more than once)."""
    if not table.headerless or len(table.devices) != 1:
        return 1
    return max((times for key, times in repeated_keys(table).items() if not _collapsible(table, key[0])), default=1)


def _check_one_process(table: Table) -> None:
    """A table one process printed holds a size more than once only where nccl-tests' rounding makes two
    sizes asked for print alike, one after the other; BadImport otherwise."""
    for (size, dtype, redop, root, in_place), times in repeated_keys(table).items():
        if _collapsible(table, size) and _in_a_row(table, (size, dtype, redop, root, in_place)):
            continue
        placement = "in-place" if in_place else "out-of-place"
        said = f"size {size} ({dtype} {redop} root {root}, {placement}) appears {times} times"
        if table.headerless:
            raise BadImport(
                f"{table.where}: {said} in one table of {len(table.devices)} ranks: several processes (or pasted "
                "logs) printed their own rows; where each process ran alone give --ranks 1, else import each "
                "process's output on its own"
            )
        raise BadImport(
            f"{table.where}: {said} in a table one process printed (its '# Using devices' lines name each of its "
            f"{len(table.devices)} rank(s) once): nccl-tests prints a size again only where its rounding makes sizes "
            "asked for one after the other print alike (as 0 elements, or with a step in bytes), or where -N "
            "repeats the sweep; import each run's output on its own"
        )


def _collapsible(table: Table, size: int) -> bool:
    """Two sizes asked for one after the other can print as `size`: nccl-tests rounds the count down per
    rank, so with a step factor (2 or more) only sizes that round to 0 elements print alike; with a step in
    bytes (as the header says) smaller than a rank's rounding, any size may."""
    return size == 0 or table.step_bytes > 0


def _in_a_row(table: Table, key: tuple[int, str, str, int, bool]) -> bool:
    """The key's rows stand one after the other among the rows of their type, op, root and placement."""
    series = [row for row in table.rows if (row.type, row.redop, row.root, row.in_place) == key[1:]]
    places = [index for index, row in enumerate(series) if row.size == key[0]]
    return places == list(range(places[0], places[0] + len(places)))


def collapse(table: Table, notes: list[str]) -> None:
    """One process's rows of a size it printed more than once (nccl-tests' rounding of consecutive sizes
    asked for: apart() let only those through) kept once, the first; the rest are the same measurement,
    which a run directory holds once. Said in `notes`, once per table."""
    kept: list[Row] = []
    seen: dict[tuple[int, str, str, int, bool], int] = {}
    for row in table.rows:
        key = (row.size, row.type, row.redop, row.root, row.in_place)
        seen[key] = seen.get(key, 0) + 1
        if seen[key] == 1:
            kept.append(row)
    repeated = {key: times for key, times in seen.items() if times > 1}
    if not repeated:
        return
    table.rows = kept
    sizes = dict.fromkeys((key[0], key[1]) for key in repeated)
    said = "; ".join(_asked_for(table, size, dtype, max(t for k, t in repeated.items() if k[:2] == (size, dtype)))
                     for size, dtype in sizes)  # fmt: skip
    note = (
        f"{table.where}: {table.op} on {len(table.devices)} rank(s) printed {said}: nccl-tests rounds the count "
        "down per rank, so sizes asked for one after the other print alike; one process's own rows, the first "
        "of each kept"
    )
    if note not in notes:
        notes.append(note)


def _asked_for(table: Table, size: int, dtype: str, times: int) -> str:
    """`size 0 B 2 times (8 and 16 B asked for)`: the sizes asked for as the header's sweep gives them,
    where they are as many as the rows printed; without them where the header does not say the sweep."""
    asked = _sweep_printing(table, size, dtype)
    said = f"size {size} B {times} times"
    if len(asked) != times:
        return said
    return f"{said} ({', '.join(str(n) for n in asked[:-1])} and {asked[-1]} B asked for)"


def _sweep_printing(table: Table, size: int, dtype: str) -> list[int]:
    """The sizes asked for in the header's sweep (common.cu's TimeTest) that print as `size`."""
    if not table.max_bytes or dtype not in DTYPE_OF or table.op not in LAYOUTS:
        return []
    element, layout, nranks = DTYPES[DTYPE_OF[dtype]].size, LAYOUTS[table.op], len(table.devices)
    asked: list[int] = []
    request, bytes_step = table.min_bytes, table.step_bytes
    factor = 0 if bytes_step else int(table.step_factor)
    while 0 < request <= table.max_bytes and len(asked) <= 64:
        if layout.buffer_counts(request, element, nranks).size_bytes(element) == size:
            asked.append(request)
        elif asked:
            break
        request = request * factor if factor > 1 else request + bytes_step
    return asked


def _split(table: Table, count: int, devices: Sequence[Device]) -> list[Table]:
    """`count` tables of one process each, the k-th occurrence of each row key going to process k (of a
    size printed as 0 elements, which each process may print more than once, the k-th to process k modulo
    `count`)."""
    parts = [
        dataclasses.replace(table, devices=[dataclasses.replace(device, rank=0)], rows=[], process=index)
        for index, device in enumerate(devices)
    ]
    seen: dict[tuple[int, str, str, int, bool], int] = {}
    for row in table.rows:
        key = (row.size, row.type, row.redop, row.root, row.in_place)
        index = seen[key] = seen.get(key, -1) + 1
        if row.size == 0:
            index %= count
        elif index >= count:
            raise BadImport(
                f"{row.where}: size {row.size} ({row.type}, {'in' if row.in_place else 'out-of'}-place) appears "
                f"{index + 1} times for {count} processes (one '# Using devices' line each): the rows cannot be "
                "told apart; import each process's output on its own"
            )
        parts[index].rows.append(row)
    if not table.headerless and table.closings < count:
        for part in parts:
            part.complete = False
            part.cut_at = f"{table.where}: {table.closings} of {count} processes printed their closing lines"
    return parts
