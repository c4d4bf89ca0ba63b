"""Whose rows a table holds: the ranks of rows pasted with no header (--ranks), and the rows several processes
printed, kept apart and never averaged into one row.

A non-MPI build of nccl-tests run under mpirun or srun starts N processes that each run alone (nranks 1) and
each print a whole table. With a launcher's prefix their lines are read apart (prefixes.py) and each is a
table of its own; without one their lines interleave into one table whose `# Using devices` lines repeat
rank 0 (or, pasted with no header, whose rows repeat their sizes): the k-th row of each size is taken as
the k-th process's, the only order the output keeps."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from jobs.imports.model import BadImport, Device, Table
from jobs.imports.text_rows import repeated_keys
from jobs.rundir.records.run import UNKNOWN

ORDER_ONLY = "their rows told apart by the order they were printed (the k-th row of each size is process k's)"


def fill_ranks(table: Table, ranks: int | None) -> None:
    """A table with no `# Using devices` lines before its rows: its ranks from --ranks, on the host its
    launcher's prefix names (pdsh, clush) where one does, else unknown."""
    if table.devices:
        return
    what = "rows with no header" if table.headerless else "no '# Using devices' lines before its rows"
    if ranks is None:
        raise BadImport(
            f"{table.where}: {what}: the number of ranks is unknown; give it with --ranks N (the ranks of the job "
            "that printed them; --ranks 1 where each process ran alone and printed its own rows)"
        )
    table.devices = [Device(rank=rank, host=table.stream_host or UNKNOWN) for rank in range(ranks)]


def apart(table: Table) -> list[Table]:
    """The table as each process printed it, where several printed theirs interleaved into it; [table]
    where one job printed it. BadImport where the processes cannot be told apart."""
    repeats = repeated_keys(table)
    numbers = [device.rank for device in table.devices]
    interleaved = len(set(numbers)) < len(numbers)
    if not repeats and not interleaved:
        return [table]
    if interleaved and set(numbers) != {0}:
        raise BadImport(
            f"{table.where}: its '# Using devices' lines name rank(s) "
            f"{', '.join(str(n) for n in sorted(set(numbers)))} more than once: several processes printed their "
            "runs interleaved, each on more than one GPU, and their rows cannot be told apart; import each "
            "process's output on its own (srun --label, mpirun --tag-output or --output-filename)"
        )
    if not interleaved and len(table.devices) != 1:
        (size, dtype, redop, root, in_place), times = next(iter(repeats.items()))
        raise BadImport(
            f"{table.where}: size {size} ({dtype} {redop} root {root}, {'in' if in_place else 'out-of'}-place) "
            f"appears {times} times in one table of {len(table.devices)} ranks: several processes (or pasted "
            "logs) printed their own rows; where each process ran alone give --ranks 1, else import each "
            "process's output on its own"
        )
    count = len(table.devices) if interleaved else max(repeats.values())
    return _split(table, count, table.devices if interleaved else [table.devices[0]] * count)


def _split(table: Table, count: int, devices: Sequence[Device]) -> list[Table]:
    """`count` tables of one process each, the k-th occurrence of each row key going to process k."""
    parts = [
        dataclasses.replace(table, devices=[dataclasses.replace(device, rank=0)], rows=[], process=index)
        for index, device in enumerate(devices)
    ]
    seen: dict[tuple[int, str, str, int, bool], int] = {}
    for row in table.rows:
        key = (row.size, row.type, row.redop, row.root, row.in_place)
        index = seen[key] = seen.get(key, -1) + 1
        if index >= count:
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
