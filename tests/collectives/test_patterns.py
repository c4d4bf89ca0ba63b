"""Expected values, and the check's power to catch a wrong, missing or misplaced element."""

import pytest
import torch

from collectives import patterns
from collectives.dtypes import DTYPES

CPU = torch.device("cpu")
ALL_DTYPES = [patterns.dtype_of(name) for name in DTYPES]


def rank_input(rank: int, start: int, count: int, dtype: torch.dtype, reduce_op: str = "sum") -> torch.Tensor:
    buffer = torch.empty(count, dtype=dtype)
    patterns.fill_input(buffer, rank, start, reduce_op)
    return buffer


def test_inputs_differ_between_ranks_at_every_index() -> None:
    a = patterns.input_values(0, 0, 10_000, "sum", CPU)
    b = patterns.input_values(1, 0, 10_000, "sum", CPU)
    assert bool((a != b).all())


def test_inputs_are_not_constant_along_the_buffer() -> None:
    values = patterns.input_values(3, 0, 4096, "sum", CPU)
    assert len(values.unique()) > 10
    # and two chunks of one rank's buffer differ, so a shifted chunk is caught
    assert not torch.equal(values[:1024], values[1024:2048])


@pytest.mark.parametrize("n", [2, 3, 4])
@pytest.mark.parametrize("reduce_op", ["sum", "prod", "min", "max", "avg"])
def test_reduced_matches_an_independent_reduction(n: int, reduce_op: str) -> None:
    inputs = torch.stack([rank_input(r, 100, 512, torch.float64, reduce_op) for r in range(n)])
    manual = {
        "sum": inputs.sum(0),
        "prod": inputs.prod(0),
        "min": inputs.min(0).values,
        "max": inputs.max(0).values,
        "avg": inputs.mean(0),
    }[reduce_op]
    expected = patterns.reduced(n, 100, 512, reduce_op, torch.float64, CPU)
    assert torch.allclose(expected.values, manual)
    assert patterns.count_wrong(manual, expected) == 0


@pytest.mark.parametrize("n", [2, 3, 4])
def test_gathered_is_the_concatenation_of_rank_inputs(n: int) -> None:
    expected = patterns.copied([(k, 0) for k in range(n)], 64, torch.float32, CPU)
    concat = torch.cat([rank_input(r, 0, 64, torch.float32) for r in range(n)])
    assert patterns.count_wrong(concat, expected) == 0


@pytest.mark.parametrize("n", [2, 3, 4])
def test_swapped_gather_chunks_are_caught(n: int) -> None:
    chunks = [rank_input(r, 0, 64, torch.float32) for r in range(n)]
    chunks[0], chunks[1] = chunks[1], chunks[0]
    wrong = patterns.count_wrong(torch.cat(chunks), patterns.copied([(k, 0) for k in range(n)], 64, torch.float32, CPU))
    assert wrong == 2 * 64


@pytest.mark.parametrize("n", [2, 3, 4])
def test_a_missing_chunk_is_caught(n: int) -> None:
    chunks = [rank_input(r, 0, 64, torch.float32) for r in range(n)]
    chunks[-1] = torch.zeros(64)
    wrong = patterns.count_wrong(torch.cat(chunks), patterns.copied([(k, 0) for k in range(n)], 64, torch.float32, CPU))
    assert wrong > 0.8 * 64  # an input element may be 0 by chance


@pytest.mark.parametrize("n", [2, 3, 4])
def test_the_wrong_scatter_chunk_is_caught(n: int) -> None:
    count = 256
    right = patterns.reduced(n, 1 * count, count, "sum", torch.float32, CPU)
    neighbour = patterns.reduced(n, 0, count, "sum", torch.float32, CPU)
    assert patterns.count_wrong(neighbour.values.to(torch.float32), right) > count * 0.8


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_one_corrupted_element_counts_exactly_once(dtype: torch.dtype) -> None:
    expected = patterns.reduced(3, 0, 1000, "sum", dtype, CPU)
    result = expected.values.to(dtype).clone()
    assert patterns.count_wrong(result, expected) == 0
    patterns.corrupt_one_element(result)
    assert patterns.count_wrong(result, expected) == 1


def test_integer_sums_wrap_like_the_dtype() -> None:
    n = 64
    inputs = [rank_input(r, 0, 2048, torch.int8) for r in range(n)]
    total = inputs[0].clone()
    for other in inputs[1:]:
        total += other  # int8 arithmetic wraps, as the backends do
    assert patterns.count_wrong(total, patterns.reduced(n, 0, 2048, "sum", torch.int8, CPU)) == 0


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_low_precision_sums_in_another_order_stay_within_tolerance(dtype: torch.dtype) -> None:
    n = 16
    inputs = [rank_input(r, 0, 4096, dtype) for r in range(n)]
    backwards = inputs[-1].clone()
    for other in reversed(inputs[:-1]):
        backwards += other
    assert patterns.count_wrong(backwards, patterns.reduced(n, 0, 4096, "sum", dtype, CPU)) == 0


def test_nan_is_wrong() -> None:
    expected = patterns.reduced(2, 0, 8, "sum", torch.float32, CPU)
    result = expected.values.to(torch.float32)
    result[3] = float("nan")
    assert patterns.count_wrong(result, expected) == 1


def nccl_avg(total: int, nranks: int, bits: int, signed: bool) -> int:
    """NCCL's FuncSumPostDiv<T>::divide (src/device/reduce_kernel.h) on the sum's bit pattern: negative when
    signed with the top bit set; the absolute value divided, the sign put back; then read as the dtype."""
    mask = (1 << bits) - 1
    x = total & mask  # the sum wrapped around in the dtype
    negative = signed and bool(x >> (bits - 1))
    quotient = ((-x) & mask if negative else x) // nranks
    result = (-quotient) & mask if negative else quotient
    return result - (1 << bits) if signed and result >> (bits - 1) else result


@pytest.mark.parametrize(("dtype", "bits", "signed"), [(torch.int8, 8, True), (torch.uint8, 8, False)])
def test_integer_avg_is_the_wrapped_sum_divided_as_nccl_computes_it(
    dtype: torch.dtype, bits: int, signed: bool
) -> None:
    n, count = 64, 4096  # the sums overflow 8 bits
    sums = sum(patterns.input_values(r, 0, count, "avg", CPU).to(dtype).to(torch.int64) for r in range(n))
    assert isinstance(sums, torch.Tensor)
    nccl = torch.tensor([nccl_avg(int(s), n, bits, signed) for s in sums], dtype=dtype)
    assert patterns.count_wrong(nccl, patterns.reduced(n, 0, count, "avg", dtype, CPU)) == 0
    unwrapped = torch.div(sums, n, rounding_mode="trunc").to(dtype)  # divided before wrapping: not NCCL's
    assert patterns.count_wrong(unwrapped, patterns.reduced(n, 0, count, "avg", dtype, CPU)) > 0


def test_the_fill_writes_the_same_values_chunk_by_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(patterns, "WORK_CHUNK_ELEMENTS", 100)
    buffer = torch.empty(1050, dtype=torch.int32)
    patterns.fill_input(buffer, 2, 7, "sum")
    assert torch.equal(buffer, patterns.input_values(2, 7, 1050, "sum", CPU).to(torch.int32))


def test_the_check_counts_and_places_wrong_elements_across_pieces_and_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(patterns, "WORK_CHUNK_ELEMENTS", 100)
    gathered = patterns.Copies(((0, 0), (1, 0), (2, 0)), 250)
    output = patterns.copied(list(gathered.sources), 250, torch.float32, CPU).values.to(torch.float32)
    assert patterns.check(output, gathered) == (0, -1)
    output[[260, 130, 749]] += 1  # in the second part's first piece, the first part's second, the last element
    assert patterns.check(output, gathered) == (3, 130)
    summed = patterns.Reduction(3, 40, 750, "sum")
    total = patterns.reduced(3, 40, 750, "sum", torch.bfloat16, CPU).values.to(torch.bfloat16)
    total[[640, 333]] = float("nan")
    assert patterns.check(total, summed) == (2, 333)


def test_the_check_leaves_a_float64_output_as_it_was() -> None:
    output = patterns.reduced(2, 0, 300, "sum", torch.float64, CPU).values.clone()
    before = output.clone()
    assert patterns.check(output, patterns.Reduction(2, 0, 300, "sum")) == (0, -1)
    assert torch.equal(output, before)


def test_an_output_of_another_length_than_expected_is_an_error() -> None:
    with pytest.raises(ValueError, match="output of 10 elements checked against 20 expected"):
        patterns.check(torch.zeros(10), patterns.Copies(((0, 0),), 20))
