"""What one step of a sweep holds in memory at its peak, per rank: plain arithmetic, no torch.

At any moment a rank holds one size's buffers (collectives.sweep frees the previous size's before it
allocates the next) and, on top of them, whichever is larger of: the temporaries of one chunk of at most
WORK_CHUNK_ELEMENTS elements while it writes inputs or checks outputs (collectives.patterns works chunk by
chunk for that reason), and what the backend's call itself stages. The memory guard (collectives.memory)
and the local launcher's host check both read it from here; tests/collectives/test_memory_peak.py and
tests/bench/bench_memory.py hold it against the peak measured on the CPU.
"""

from __future__ import annotations

from collectives.layout import LAYOUTS, BufferCounts

WORK_CHUNK_ELEMENTS = 1 << 22
"""Elements the input fill and the check compute at once: 4 Mi elements keeps their temporaries near
200 MB while a GPU launches a few hundred kernels per GiB, not hundreds of thousands."""

FILL_BYTES_PER_ELEMENT = 32
"""The fill's temporaries per chunk element: the int64 index, the int64 value being hashed, one int64
shift of it, and the first hash's int64 result while the second is computed (patterns.input_values)."""

CHECK_BYTES_PER_ELEMENT = 64
"""The check's per chunk element: the float64 (or int64) accumulator and float64 magnitude of a reduction
and one rank's input being computed (FILL_BYTES_PER_ELEMENT): 48 live at once; measured 56.5 on the CPU for
float32 outputs, whose freed 4-byte temporaries glibc's heap keeps beside the 8-byte ones."""

GLOO_STAGED_OPS = frozenset({"all_gather", "reduce_scatter", "gather"})
"""Ops whose gloo call copies the whole gathered output (or scattered input) through a flat tensor of its
own (torch's ProcessGroupGloo; measured: one more buffer of that size while the call runs). NCCL's calls
read and write the user's buffers directly."""

CPU_HEAP_KEPT_BYTES = 64 << 20
"""Freed memory glibc's heap may keep rather than hand back: it trims only past M_TRIM_THRESHOLD, which it
raises to twice the mmap threshold, itself at most 32 MiB on 64-bit (malloc/malloc.c: free of an mmapped
chunk, DEFAULT_MMAP_THRESHOLD_MAX)."""


def allocates_send(op: str) -> bool:
    """An op measured in place only (all_reduce, broadcast, reduce) reads and writes its receive buffer
    alone: no send buffer is allocated for it."""
    return False in LAYOUTS[op].placements


def buffer_bytes(op: str, counts: BufferCounts, element_size: int) -> int:
    """One size's buffers: the send buffer where an out-of-place run needs one, and a receive buffer that
    in-place runs share (nccl-tests lays the send buffer inside it)."""
    send = counts.send if allocates_send(op) else 0
    return (send + max(counts.send, counts.recv)) * element_size


def staged_bytes(op: str, counts: BufferCounts, element_size: int, backend: str) -> int:
    """What the backend's call allocates for itself while it runs."""
    return max(counts.send, counts.recv) * element_size if backend == "gloo" and op in GLOO_STAGED_OPS else 0


def work_bytes(counts: BufferCounts, check: bool) -> int:
    """The fill's or (with the check on, the larger) the check's temporaries for one chunk."""
    per_element = CHECK_BYTES_PER_ELEMENT if check else FILL_BYTES_PER_ELEMENT
    return min(WORK_CHUNK_ELEMENTS, max(counts.send, counts.recv)) * per_element


def step_bytes(op: str, counts: BufferCounts, element_size: int, check: bool, backend: str) -> int:
    """The most one rank holds at once for one step: its buffers, and one chunk's work or the call's own
    staging, which never overlap (the fill ends before the call, the check starts after it). On gloo (the
    CPU) the heap may still hold some of the fill's freed work while the call stages its copy."""
    work = work_bytes(counts, check)
    staged = staged_bytes(op, counts, element_size, backend)
    kept = min(work, CPU_HEAP_KEPT_BYTES) if staged else 0  # only gloo stages
    return buffer_bytes(op, counts, element_size) + max(work, staged + kept)
