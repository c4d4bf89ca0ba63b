from pathlib import Path

import pytest

from collectives.results import (
    DamagedLine,
    DamagedResult,
    RankResult,
    iter_rank_results,
    iteration_stats,
    read_rank_results,
    summarize,
)
from collectives.table import SweepHeader, format_time_us, render_op_table


def record(rank: int, time_us: float, in_place: bool = False, wrong: int = 0, size: int = 4096) -> RankResult:
    return RankResult(
        op="all_gather",
        size=size,
        count=size // 4 // 2,
        dtype="float32",
        redop="none",
        root=-1,
        in_place=in_place,
        rank=rank,
        local_rank=rank,
        host=f"n{rank}",
        nranks=2,
        iters=20,
        time_us=time_us,
        algbw=0.0,
        busbw=0.0,
        wrong=wrong,
    )


def test_time_is_the_mean_over_ranks_and_bandwidth_follows_from_it() -> None:
    (row,) = summarize([record(0, 10.0), record(1, 30.0)])
    assert row.time_us == pytest.approx(20.0)
    assert row.algbw == pytest.approx(4096 / 1e9 / 20e-6)
    assert row.busbw == pytest.approx(row.algbw / 2)
    assert (row.slowest_rank, row.slowest_host, row.fastest_rank) == (1, "n1", 0)


def test_wrong_elements_are_summed_and_attributed() -> None:
    (row,) = summarize([record(0, 10.0, wrong=0), record(1, 10.0, wrong=3)])
    assert row.wrong == 3
    assert row.wrong_ranks == [1]


def test_unchecked_rows_report_minus_one() -> None:
    (row,) = summarize([record(0, 10.0, wrong=-1), record(1, 10.0, wrong=-1)])
    assert row.wrong == -1


def test_a_torn_last_line_is_named_with_its_file_and_line_and_left_out(tmp_path: Path) -> None:
    path = tmp_path / "rank-00000.jsonl"
    path.write_text(record(0, 1.0).to_json() + "\n" + record(0, 2.0, size=8192).to_json()[:40])
    damaged: list[DamagedLine] = []
    assert [r.size for r in iter_rank_results([path], on_damage=damaged.append)] == [4096]
    assert [(d.path, d.line, d.last) for d in damaged] == [(path, 2, True)]
    assert "cut off mid-line" in damaged[0].describe() and f"{path}:2:" in damaged[0].describe()
    with pytest.raises(DamagedResult, match=r"rank-00000.jsonl:2: cut off mid-line"):
        read_rank_results([path])  # nobody to tell: the damage is an error, never silently dropped


def test_a_garbled_line_in_the_middle_is_damage_and_the_rest_is_read(tmp_path: Path) -> None:
    path = tmp_path / "rank-00001.jsonl"
    path.write_text(record(1, 1.0).to_json() + "\n{not json\n" + record(1, 2.0, size=8192).to_json() + "\n")
    damaged: list[DamagedLine] = []
    assert [r.size for r in iter_rank_results([path], on_damage=damaged.append)] == [4096, 8192]
    assert [(d.line, d.last) for d in damaged] == [(2, False)] and "not a JSON line" in damaged[0].reason


def test_a_row_names_the_ranks_it_lacks_and_counts_a_rank_once() -> None:
    (row,) = summarize([record(0, 10.0), record(0, 12.0)])
    assert (row.nranks, row.ranks_reporting, row.missing_ranks, row.duplicate_ranks) == (2, 1, [1], [0])
    assert not row.complete and row.time_us == 10.0


@pytest.mark.parametrize(("time_us", "text"), [(12.345, "  12.35"), (123.45, "  123.5"), (12345.6, "  12346")])
def test_time_column_uses_nccl_tests_precision(time_us: float, text: str) -> None:
    assert format_time_us(time_us) == text


GOLDEN = Path(__file__).parent / "golden"
HEADER = SweepHeader(min_bytes=8, max_bytes=4096, step_factor=2, warmup_iters=5, iters=20, check=True, backend="gloo")


def test_table_lines_line_up_with_nccl_tests() -> None:
    """The golden file's column lines are copied from nccl-tests' Reporter format strings."""
    rows = summarize([record(r, 100.0 + r, in_place=p) for r in range(2) for p in (False, True)])
    lines = render_op_table("all_gather", rows, HEADER)
    assert "\n".join(lines) + "\n" == (GOLDEN / "all_gather_table.txt").read_text()


def test_missing_placement_is_shown_as_na() -> None:
    rows = summarize([record(r, 100.0, in_place=True) for r in range(2)])
    data = render_op_table("all_gather", rows, HEADER)[6]
    assert data.split()[5:9] == ["N/A", "N/A", "N/A", "N/A"]


def test_iteration_stats_of_one_rank() -> None:
    stats = iteration_stats([10.0, 20.0, 30.0, 40.0, 1000.0])
    assert stats["min_us"] == 10.0 and stats["max_us"] == 1000.0
    assert stats["median_us"] == 30.0
    assert stats["p99_us"] == 1000.0
    assert stats["cv"] == pytest.approx(390.128 / 220, rel=1e-4)  # population standard deviation / mean
    assert iteration_stats([5.0])["cv"] == 0.0


def test_page_faults_in_the_timed_call_earn_a_note() -> None:
    quiet = summarize([record(r, 100.0) for r in range(2)])
    assert not any("allocates inside the timed call" in line for line in render_op_table("all_gather", quiet, HEADER))
    noisy = [record(r, 100.0) for r in range(2)]
    noisy[1].page_faults_per_iter = 8193.0
    lines = render_op_table("all_gather", summarize(noisy), HEADER)
    assert (
        "# Note: gloo allocates inside the timed call from 4096 B up (8193 page faults per call at 4096 B)"
        in "\n".join(lines)
    )


@pytest.mark.parametrize(
    ("average", "time_us", "enqueue_us"),
    [("mean", 20.0, 3.0), ("min", 10.0, 4.0), ("max", 30.0, 2.0), ("rank0", 30.0, 2.0)],
)
def test_the_average_combines_the_ranks_as_nccl_tests_a_does(average: str, time_us: float, enqueue_us: float) -> None:
    records = [record(1, 10.0), record(0, 30.0)]  # rank 0 is the slow one, and is read second
    records[0].enqueue_us, records[1].enqueue_us = 4.0, 2.0
    (row,) = summarize(records, average)
    assert (row.time_us, row.enqueue_us, row.average) == (time_us, enqueue_us, average)
    assert row.algbw == pytest.approx(4096 / 1e9 / (time_us * 1e-6)), "bandwidth follows the combined time"
    assert (row.slowest_rank, row.fastest_rank) == (0, 1), "the spread is the same whatever the average"


def test_rank0_without_rank_0_falls_back_to_the_mean_of_the_ranks_that_reported() -> None:
    (row,) = summarize([record(1, 10.0)], "rank0")
    assert row.time_us == 10.0 and row.ranks_reporting == 1


def test_an_unknown_average_names_the_choices() -> None:
    with pytest.raises(ValueError, match="average 'median' is not one of mean, min, max, rank0"):
        summarize([record(0, 1.0)], "median")


def test_report_cputime_shows_the_enqueue_time_and_keeps_the_bandwidth_of_the_full_time() -> None:
    records = [record(r, 100.0) for r in range(2)]
    for r in records:
        r.enqueue_us = 12.5
    (row,) = summarize(records)
    header = SweepHeader(**{**vars_of(HEADER), "report_cputime": True})
    data = render_op_table("all_gather", [row], header)[6].split()
    assert data[5] == "12.50", "the time column is the enqueue time"
    assert float(data[6]) == pytest.approx(row.algbw, abs=0.01), "algbw from the full 100 us"
    lines = "\n".join(render_op_table("all_gather", [row], header))
    assert "# Note: the time columns are the host's enqueue time per call (-C)" in lines


def test_small_messages_whose_time_is_the_hosts_enqueue_are_said_to_be_host_bound() -> None:
    records = []
    for size, time_us, enqueue_us in ((8, 20.0, 19.5), (4096, 24.0, 22.0), (1 << 20, 80.0, 21.0)):
        for rank in range(2):
            one = record(rank, time_us, size=size)
            one.timer, one.enqueue_us = "cuda_loop", enqueue_us
            records.append(one)
    lines = "\n".join(render_op_table("all_gather", summarize(records), HEADER))
    assert (
        "# Note: host-bound at 2 sizes from 8 B to 4096 B: the host took 19.5 us of the 20.0 us per call to enqueue "
        "it (8 B), so the GPU waited" in lines
    )
    assert "graphs mode (bench.cuda_graph_launches > 0)" in lines
    for one in records:
        one.timer = "host_loop"  # on the CPU the enqueue is the work itself
    assert "host-bound" not in "\n".join(render_op_table("all_gather", summarize(records), HEADER))


def test_a_per_call_cuda_time_and_a_non_default_average_are_noted_under_the_table() -> None:
    records = [record(r, 100.0) for r in range(2)]
    for r in records:
        r.timer = "cuda_events"
    header = SweepHeader(**{**vars_of(HEADER), "average": "max"})
    lines = "\n".join(render_op_table("all_gather", summarize(records, "max"), header))
    assert "# Note: time is the slowest rank's (-a 3)" in lines
    assert "includes the host's launch gap" in lines


def vars_of(header: SweepHeader) -> dict[str, object]:
    return {name: getattr(header, name) for name in header.__dataclass_fields__}
