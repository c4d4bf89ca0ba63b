"""What one sweep measures: the `bench` section of a collbench config."""

from __future__ import annotations

from dataclasses import dataclass, field

from collectives.dtypes import DTypeName, ReduceOpName
from collectives.layout import OpName
from collectives.sizes import parse_size


def _all_ops() -> list[OpName]:
    return ["all_reduce", "all_gather", "reduce_scatter"]


@dataclass(kw_only=True, slots=True)
class BenchSettings:
    ops: list[OpName] = field(default_factory=_all_ops)
    """Collectives to run, in this order."""
    min_bytes: int = field(default=8, metadata={"parse": parse_size})
    """Smallest message size (bytes, or with a K/M/G suffix), as nccl-tests' -b."""
    max_bytes: int = field(default=4 * 1024 * 1024, metadata={"parse": parse_size})
    """Largest message size, as nccl-tests' -e."""
    step_factor: float = 2.0
    """Multiply the size by this between steps, as nccl-tests' -f; must be > 1."""
    dtype: DTypeName = "float32"
    """Element type of the buffers."""
    reduce_op: ReduceOpName = "sum"
    """Reduction for all_reduce and reduce_scatter."""
    warmup_iters: int = 5
    """Untimed iterations before each size, as nccl-tests' -w."""
    iters: int = 20
    """Timed iterations per size, as nccl-tests' -n."""
    check: bool = True
    """Check every result element after timing each size, as nccl-tests' -c."""
