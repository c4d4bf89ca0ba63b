"""The sweep as a list of steps, worked out before anything runs. No torch."""

from __future__ import annotations

from dataclasses import dataclass

from collectives.dtypes import DTYPES
from collectives.footprint import step_bytes
from collectives.layout import LAYOUTS, BufferCounts
from collectives.settings import BenchSettings


@dataclass(frozen=True, slots=True)
class Step:
    """One (op, size, root): measured once per placement torch offers for the op."""

    op: str
    size: int
    """The size asked for; counts.size_bytes() is what nccl-tests prints once rounded."""
    counts: BufferCounts
    root: int
    """-1 for ops without a root."""


@dataclass(frozen=True, slots=True)
class Skipped:
    op: str
    size: int
    reason: str


def plan_sweep(settings: BenchSettings, nranks: int) -> tuple[list[Step], list[Skipped]]:
    element_size = DTYPES[settings.dtype].size
    steps: list[Step] = []
    skipped: list[Skipped] = []
    for op in settings.ops:
        layout = LAYOUTS[op]
        roots = settings.roots(nranks) if layout.rooted else [-1]
        for size in settings.size_list():
            counts = layout.buffer_counts(size, element_size, nranks)
            if counts.param == 0:
                skipped.append(Skipped(op, size, "under 16 bytes per rank once rounded as nccl-tests does"))
                continue
            steps += [Step(op=op, size=size, counts=counts, root=root) for root in roots]
    return steps, skipped


def peak_bytes_per_rank(settings: BenchSettings, nranks: int, backend: str = "gloo") -> tuple[int, Step | None]:
    """The most memory one rank needs at once (collectives.footprint), and the step that needs it. gloo, the
    default, counts what its calls stage besides the buffers; NCCL's calls stage nothing in torch's memory."""
    element_size = DTYPES[settings.dtype].size
    peak, worst = 0, None
    for step in plan_sweep(settings, nranks)[0]:
        need = step_bytes(step.op, step.counts, element_size, settings.check, backend)
        if need > peak:
            peak, worst = need, step
    return peak, worst
