"""What one sweep measures: the `bench` section of a collbench config."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from collectives.dtypes import DTypeName, ReduceOpName
from collectives.layout import OpName
from collectives.sizes import parse_size

TimerName = Literal["auto", "loop", "per_call"]
AverageName = Literal["mean", "min", "max", "rank0"]
"""nccl-tests' -a: 1 mean over ranks, 2 min, 3 max, 0 rank 0's."""


def _all_seed_ops() -> list[OpName]:
    return ["all_reduce", "all_gather", "reduce_scatter"]


def parse_size_list(value: object) -> list[int]:
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise ValueError(f"expected a list of sizes such as [1K, 3000, 1M], got {value!r}")
    return [parse_size(v) for v in value]


@dataclass(kw_only=True, slots=True)
class BenchSettings:
    ops: list[OpName] = field(default_factory=_all_seed_ops)
    """Collectives to run, in this order: all_reduce, all_gather, reduce_scatter, broadcast, reduce,
    all_to_all, gather, scatter, sendrecv."""
    min_bytes: int = field(default=8, metadata={"parse": parse_size})
    """Smallest message size (bytes, or with a K/M/G suffix), as nccl-tests' -b."""
    max_bytes: int = field(default=4 * 1024 * 1024, metadata={"parse": parse_size})
    """Largest message size, as nccl-tests' -e."""
    step_factor: float = 2.0
    """Multiply the size by this between steps, as nccl-tests' -f; must be > 1 unless step_bytes is set."""
    step_bytes: int = field(default=0, metadata={"parse": parse_size})
    """Add this many bytes between steps instead (nccl-tests' -i); 0 uses step_factor."""
    sizes: list[int] = field(default_factory=list, metadata={"parse": parse_size_list})
    """An explicit list of sizes; when set, min/max/step are not used."""
    dtype: DTypeName = "float32"
    """Element type of the buffers."""
    reduce_op: ReduceOpName = "sum"
    """Reduction for all_reduce, reduce_scatter and reduce."""
    root: int | Literal["all"] = 0
    """Root of broadcast, reduce, gather and scatter; 'all' runs every root in turn (nccl-tests' -r -1)."""
    warmup_iters: int = 5
    """Untimed iterations before each size, as nccl-tests' -w."""
    iters: int = 20
    """Timed iterations per size, as nccl-tests' -n (unless time_budget_ms is set)."""
    time_budget_ms: float = 0.0
    """Instead of a fixed count, run each size for about this long; 0 uses iters."""
    min_iters: int = 5
    """Fewest timed iterations under a time budget."""
    max_iters: int = 10000
    """Most timed iterations under a time budget."""
    cuda_graph_launches: int = 0
    """CUDA only: capture the iterations in a CUDA graph and replay it this many times (nccl-tests' -G);
    time = one clock around every replay and the synchronisation / (replays x iters)."""
    timer: TimerName = "auto"
    """The table's time: loop (one host clock around all iterations and the stream synchronisation,
    / iters: nccl-tests' BenchTime), per_call (each call timed on its own: host clock around a blocking
    call, or CUDA events), or auto: loop on CUDA, per_call on the CPU."""
    per_iteration: bool = False
    """Also time every call on its own in a separate pass (nccl-tests' -I): the per-iteration
    distribution (min, median, p99, max, CV). An extra view, never the table's time."""
    average: AverageName = "mean"
    """How the ranks' times make the table's time (nccl-tests' -a): mean (1), min (2), max (3), rank0 (0)."""
    report_cputime: bool = False
    """The time column shows the host's enqueue time per call (nccl-tests' -C); bandwidths stay
    from the full time."""
    check: bool = True
    """Check every result element after timing each size, as nccl-tests' -c."""

    def size_list(self) -> list[int]:
        """The message sizes to measure, in order."""
        from collectives.sizes import size_sweep

        if self.sizes:
            return list(self.sizes)
        if self.step_bytes > 0:
            return list(range(self.min_bytes, self.max_bytes + 1, self.step_bytes))
        return size_sweep(self.min_bytes, self.max_bytes, self.step_factor)

    def roots(self, nranks: int) -> list[int]:
        return list(range(nranks)) if self.root == "all" else [int(self.root)]
