"""Summary rows built by hand, for the report and compare arithmetic."""

from __future__ import annotations

from collectives.results import SummaryRow


def summary_row(op: str, size: int, busbw: float, nranks: int, *, in_place: bool = False, root: int = -1) -> SummaryRow:
    return SummaryRow(
        op=op, size=size - size % nranks, count=size // 4, dtype="float", redop="sum", root=root,
        in_place=in_place, nranks=nranks, ranks_reporting=nranks, time_us=10.0, algbw=busbw, busbw=busbw,
        wrong=0, slowest_rank=0, slowest_host="n1", slowest_time_us=10.0, fastest_rank=0, fastest_host="n1",
        fastest_time_us=10.0, wrong_ranks=[], page_faults_per_iter=0.0, timer="host", requested_size=size,
    )  # fmt: skip
