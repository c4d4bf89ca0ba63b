"""What the memory guard counts for one step: the buffers the sweep allocates, one chunk's work, and what a
gloo call stages; the sizes that fit, and the refusal that names them."""

from __future__ import annotations

import pytest

from collectives import footprint
from collectives.layout import LAYOUTS, BufferCounts
from collectives.memory import NotEnoughMemory, check_fits, largest_fitting_size
from collectives.plan import peak_bytes_per_rank
from collectives.settings import BenchSettings

GIB = 1 << 30
CHUNK_CHECK = footprint.WORK_CHUNK_ELEMENTS * footprint.CHECK_BYTES_PER_ELEMENT


def counts(op: str, size: int, element_size: int = 2, nranks: int = 8) -> BufferCounts:
    return LAYOUTS[op].buffer_counts(size, element_size, nranks)


@pytest.mark.parametrize("op", ["all_reduce", "broadcast", "reduce"])
def test_an_op_measured_in_place_only_holds_its_receive_buffer_alone(op: str) -> None:
    assert not footprint.allocates_send(op)
    assert footprint.buffer_bytes(op, counts(op, 8 * GIB), 2) == 8 * GIB


def test_an_op_measured_out_of_place_holds_both_buffers() -> None:
    gathered = counts("all_gather", 8 * GIB)
    assert footprint.buffer_bytes("all_gather", gathered, 2) == 8 * GIB + GIB  # the gathered output and one share
    assert footprint.buffer_bytes("reduce_scatter", counts("reduce_scatter", 8 * GIB), 2) == 16 * GIB


def test_the_fill_and_the_check_cost_one_chunk_however_large_the_buffer() -> None:
    large, small = counts("all_reduce", 8 * GIB), counts("all_reduce", 4096)
    assert footprint.work_bytes(large, check=True) == CHUNK_CHECK
    chunk_fill = footprint.WORK_CHUNK_ELEMENTS * footprint.FILL_BYTES_PER_ELEMENT
    assert footprint.work_bytes(large, check=False) == chunk_fill
    assert footprint.work_bytes(small, check=True) == 2048 * footprint.CHECK_BYTES_PER_ELEMENT


@pytest.mark.parametrize("op", sorted(footprint.GLOO_STAGED_OPS))
def test_gloo_stages_a_copy_of_the_large_buffer_where_nccl_does_not(op: str) -> None:
    c = counts(op, GIB)
    on_nccl = footprint.step_bytes(op, c, 2, check=False, backend="nccl")
    on_gloo = footprint.step_bytes(op, c, 2, check=False, backend="gloo")
    assert on_nccl == footprint.buffer_bytes(op, c, 2) + footprint.work_bytes(c, check=False)
    kept = min(footprint.work_bytes(c, check=False), footprint.CPU_HEAP_KEPT_BYTES)
    assert on_gloo == footprint.buffer_bytes(op, c, 2) + GIB + kept


def test_the_peak_is_the_largest_step_of_the_sweep() -> None:
    settings = BenchSettings(ops=["all_reduce", "reduce_scatter"], max_bytes=8 * GIB, dtype="bfloat16")
    need, step = peak_bytes_per_rank(settings, 32, "nccl")
    assert step is not None and (step.op, step.size) == ("reduce_scatter", 8 * GIB)
    assert need == 16 * GIB + CHUNK_CHECK


H100_SWEEP = BenchSettings(ops=["all_reduce", "all_gather", "reduce_scatter"], max_bytes=8 * GIB, dtype="bfloat16")


def test_the_largest_size_that_fits_is_one_of_the_sweeps_own() -> None:
    have = 10 * 10**9  # reduce_scatter at 4G needs 8.6 GB and at 8G 17.4 GB
    assert largest_fitting_size(H100_SWEEP, 32, have, "nccl") == 4 * GIB
    assert largest_fitting_size(H100_SWEEP, 32, 1000, "nccl") == 16  # all_reduce alone runs at 8 and 16 B
    assert largest_fitting_size(H100_SWEEP, 32, 100, "nccl") is None


def test_a_refusal_names_the_size_and_dtype_that_fit_and_the_setting_to_lower() -> None:
    with pytest.raises(NotEnoughMemory) as refused:
        check_fits(H100_SWEEP, 32, 10 * 10**9, "free memory on cuda:0", "bench.max_bytes", "nccl")
    assert str(refused.value) == (
        "reduce_scatter at 8G of bfloat16 needs 17.45 GB per rank (buffers and the check); the largest that "
        "fits is 4G of bfloat16 (bench.max_bytes up to 4G) in the 10.00 GB available (free memory on cuda:0); "
        "lower bench.max_bytes"
    )


def test_the_size_a_refusal_names_is_one_that_starts() -> None:
    fit = largest_fitting_size(H100_SWEEP, 32, 10 * 10**9, "nccl")
    assert fit is not None
    lowered = BenchSettings(ops=H100_SWEEP.ops, max_bytes=fit, dtype="bfloat16")
    check_fits(lowered, 32, 10 * 10**9, "free memory on cuda:0", "bench.max_bytes", "nccl")


def test_a_refusal_says_so_when_not_even_the_smallest_size_fits() -> None:
    with pytest.raises(NotEnoughMemory, match=r"not even its smallest size of bfloat16 fits in the 0\.00 GB"):
        check_fits(H100_SWEEP, 32, 100, "a tiny GPU", "isolate.sizes", "nccl")
