"""Results made or edited by hand: summary rows for the report and compare arithmetic, slowed-down copies."""

from __future__ import annotations

import json
from pathlib import Path

from collectives.results import SummaryRow
from tests.conftest import read_jsonl


def summary_row(op: str, size: int, busbw: float, nranks: int, *, in_place: bool = False, root: int = -1) -> SummaryRow:
    return SummaryRow(
        op=op, size=size - size % nranks, count=size // 4, dtype="float", redop="sum", root=root,
        in_place=in_place, nranks=nranks, ranks_reporting=nranks, time_us=10.0, algbw=busbw, busbw=busbw,
        wrong=0, slowest_rank=0, slowest_host="n1", slowest_time_us=10.0, fastest_rank=0, fastest_host="n1",
        fastest_time_us=10.0, wrong_ranks=[], page_faults_per_iter=0.0, timer="host", requested_size=size,
    )  # fmt: skip


def slow_down(run: Path, op: str, size: int, factor: float) -> None:
    """Every rank took `factor` times as long for (op, size): busbw falls by the same factor."""
    for path in (run / "results").glob("rank-*.jsonl"):
        records = read_jsonl(path)
        for record in records:
            if record["op"] == op and record["size"] == size:
                record["time_us"] *= factor
                record["times_us"] = [t * factor for t in record["times_us"]]
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
