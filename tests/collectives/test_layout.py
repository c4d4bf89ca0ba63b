"""Sizes and bandwidth factors of every op, pinned to nccl-tests' src/<op>.cu formulas."""

import pytest

from collectives.layout import LAYOUTS

ALL_OPS = list(LAYOUTS)
N = [2, 3, 4, 8]


def nccl_tests_counts(op: str, size: int, elt: int, n: int) -> tuple[int, int, int]:
    """(sendcount, recvcount, paramcount), transcribed from nccl-tests' *GetCollByteCount."""
    count = size // elt
    base = (count // n) & -(16 // elt)
    return {
        "all_reduce": (count, count, count),
        "broadcast": (count, count, count),
        "reduce": (count, count, count),
        "sendrecv": (count, count, count),
        "all_gather": (base, base * n, base),
        "gather": (base, base * n, base),
        "reduce_scatter": (base * n, base, base),
        "scatter": (base * n, base, base),
        "all_to_all": (base * n, base * n, base),
    }[op]


def nccl_tests_bw(op: str, count: int, elt: int, n: int, sec: float) -> tuple[float, float]:
    """(algBw, busBw), transcribed from nccl-tests' *GetBw."""
    per_rank_ops = {"all_gather", "reduce_scatter", "all_to_all", "gather", "scatter"}
    base = count * elt * (n if op in per_rank_ops else 1) / 1.0e9 / sec
    factor = {"all_reduce": 2 * (n - 1) / n, "broadcast": 1, "reduce": 1, "sendrecv": 1}.get(op, (n - 1) / n)
    return base, base * factor


@pytest.mark.parametrize("n", N)
@pytest.mark.parametrize("op", ALL_OPS)
@pytest.mark.parametrize(("size", "elt"), [(1 << 20, 4), (1000, 4), (12345, 2), (777, 1), (4096, 8)])
def test_buffer_counts_match_nccl_tests(op: str, n: int, size: int, elt: int) -> None:
    counts = LAYOUTS[op].buffer_counts(size, elt, n)
    assert (counts.send, counts.recv, counts.param) == nccl_tests_counts(op, size, elt, n)
    assert counts.size_bytes(elt) == max(counts.send, counts.recv) * elt


@pytest.mark.parametrize("n", N)
@pytest.mark.parametrize("op", ALL_OPS)
def test_bandwidths_match_nccl_tests(op: str, n: int) -> None:
    counts = LAYOUTS[op].buffer_counts(1 << 24, 4, n)
    algbw, busbw = LAYOUTS[op].bandwidths(counts.param, 4, n, 1.5e-3)
    expected_alg, expected_bus = nccl_tests_bw(op, counts.param, 4, n, 1.5e-3)
    assert algbw == pytest.approx(expected_alg)
    assert busbw == pytest.approx(expected_bus)


@pytest.mark.parametrize(
    ("op", "factor"), [("all_reduce", 1.5), ("all_gather", 0.75), ("all_to_all", 0.75), ("broadcast", 1.0)]
)
def test_bus_factor_spot_values_for_four_ranks(op: str, factor: float) -> None:
    assert LAYOUTS[op].bus_factor(4) == factor


def test_rooted_ops_are_the_ones_nccl_tests_gives_a_root() -> None:
    assert {op for op, layout in LAYOUTS.items() if layout.rooted} == {"broadcast", "reduce", "gather", "scatter"}


def test_in_place_offsets_follow_nccl_tests() -> None:
    ag = LAYOUTS["all_gather"].buffer_counts(1024, 4, 4)
    assert (ag.send_inplace_offset, ag.recv_inplace_offset) == (ag.param, 0)
    rs = LAYOUTS["reduce_scatter"].buffer_counts(1024, 4, 4)
    assert (rs.send_inplace_offset, rs.recv_inplace_offset) == (0, rs.param)
    sc = LAYOUTS["scatter"].buffer_counts(1024, 4, 4)
    assert (sc.send_inplace_offset, sc.recv_inplace_offset) == (0, sc.param)


def test_small_totals_round_to_zero_per_rank() -> None:
    assert LAYOUTS["all_gather"].buffer_counts(16, 4, 2).param == 0
    assert LAYOUTS["all_to_all"].buffer_counts(60, 4, 4).param == 0
