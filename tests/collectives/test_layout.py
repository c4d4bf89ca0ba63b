"""Sizes and bandwidth factors pinned to nccl-tests' src/*.cu formulas."""

import pytest

from collectives.layout import LAYOUTS


def nccl_tests_busbw_factor(op: str, n: int) -> float:
    # all_reduce.cu: 2*(n-1)/n ; all_gather.cu, reduce_scatter.cu: (n-1)/n
    return {"all_reduce": 2 * (n - 1) / n, "all_gather": (n - 1) / n, "reduce_scatter": (n - 1) / n}[op]


@pytest.mark.parametrize("n", [2, 3, 4, 8])
@pytest.mark.parametrize("op", ["all_reduce", "all_gather", "reduce_scatter"])
def test_busbw_factor_matches_nccl_tests(op: str, n: int) -> None:
    assert LAYOUTS[op].bus_factor(n) == pytest.approx(nccl_tests_busbw_factor(op, n))


@pytest.mark.parametrize("n", [2, 3, 4, 8])
def test_all_reduce_uses_the_per_rank_buffer(n: int) -> None:
    counts = LAYOUTS["all_reduce"].buffer_counts(4096, 4, n)
    assert (counts.send, counts.recv, counts.param) == (1024, 1024, 1024)
    assert counts.size_bytes(4) == 4096
    algbw, busbw = LAYOUTS["all_reduce"].bandwidths(counts.param, 4, n, seconds=1e-3)
    assert algbw == pytest.approx(4096 / 1e9 / 1e-3)
    assert busbw == pytest.approx(algbw * 2 * (n - 1) / n)


@pytest.mark.parametrize("n", [2, 3, 4, 8])
@pytest.mark.parametrize("op", ["all_gather", "reduce_scatter"])
def test_gather_and_scatter_use_the_total_buffer(op: str, n: int) -> None:
    size, element = 1024 * 1024, 4
    counts = LAYOUTS[op].buffer_counts(size, element, n)
    # nccl-tests: base = (count/nranks) & -(16/eltSize)
    base = ((size // element) // n) & -(16 // element)
    assert counts.param == base
    assert max(counts.send, counts.recv) == base * n
    assert counts.size_bytes(element) == base * n * element
    algbw, busbw = LAYOUTS[op].bandwidths(counts.param, element, n, seconds=2e-3)
    assert algbw == pytest.approx(base * element * n / 1e9 / 2e-3)
    assert busbw == pytest.approx(algbw * (n - 1) / n)


@pytest.mark.parametrize(("element", "n", "size", "expected_param"), [(4, 3, 100, 8), (1, 3, 100, 32), (8, 2, 40, 2)])
def test_per_rank_count_is_rounded_down_to_16_bytes(element: int, n: int, size: int, expected_param: int) -> None:
    assert LAYOUTS["all_gather"].buffer_counts(size, element, n).param == expected_param
    assert LAYOUTS["reduce_scatter"].buffer_counts(size, element, n).param == expected_param


def test_small_total_sizes_round_to_zero_per_rank() -> None:
    assert LAYOUTS["all_gather"].buffer_counts(16, 4, 2).param == 0


def test_in_place_offsets_follow_nccl_tests() -> None:
    ag = LAYOUTS["all_gather"].buffer_counts(1024, 4, 4)
    assert (ag.send_inplace_offset, ag.recv_inplace_offset) == (ag.param, 0)
    rs = LAYOUTS["reduce_scatter"].buffer_counts(1024, 4, 4)
    assert (rs.send_inplace_offset, rs.recv_inplace_offset) == (0, rs.param)
