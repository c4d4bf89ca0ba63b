"""The report's per-rank view on synthetic runs: stragglers, time outliers, wrong elements, env drift."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from collectives.results import RankResult, SummaryRow
from jobs.inspect.analysis import ROUNDS_UNJUDGED, RunScope, analyse, environment_differences
from jobs.inspect.fabric import LineRate
from jobs.rundir.layout import RunDir
from tests.jobs.rows import summary_row


def record(
    rank: int, host: str, time_us: float, started_at: float, size: int = 1024, wrong: int = 0, ended_at: float = 0.0
) -> RankResult:
    return RankResult(
        op="all_reduce", size=size, count=size // 4, dtype="float32", redop="sum", root=-1, in_place=True,
        rank=rank, local_rank=0, host=host, nranks=0, iters=5, time_us=time_us, algbw=0, busbw=0, wrong=wrong,
        started_at=started_at, ended_at=ended_at, first_wrong_index=7 if wrong else -1,
    )  # fmt: skip


def sweep(nranks: int, own_s: dict[int, float], late: dict[int, float], sizes: int = 10) -> list[RankResult]:
    """Every rank measures `sizes` sizes one after another: each measurement takes 0.2 s, the ranks in
    `late` start and end it that much later (they finish a collective last), and the ranks in `own_s` spend
    that long of their own between measurements (the others 0.5 ms, with some jitter)."""
    records = []
    for rank in range(nranks):
        clock = 1000.0 + late.get(rank, 0.0)
        for step in range(sizes):
            clock += own_s.get(rank, 0.0005 + 0.0001 * ((rank * 7 + step) % 3))
            slowest = 100.0 * (1.5 if rank in late else 1.0)
            records.append(record(rank, f"n{rank // 4}", slowest, clock, size=1 << step, ended_at=clock + 0.2))
            clock += 0.2
    return records


@pytest.mark.parametrize("nranks", [2, 3, 16])
def test_a_rank_slow_at_its_own_work_is_named_with_its_host(nranks: int, tmp_path: Path) -> None:
    result = analyse(sweep(nranks, own_s={nranks - 1: 0.3}, late={}), RunDir(tmp_path))
    host = f"n{(nranks - 1) // 4}"
    assert [(f.rank, f.host) for f in result.slow_ranks] == [(nranks - 1, host)]
    assert re.search(r"300\.0 ms of its own between measurements \(median over 9; the other ranks 0\.\d ms",
                     result.slow_ranks[0].what)  # fmt: skip
    assert [line.split(":")[0] for line in result.slow_hosts] == [host]
    assert result.verdict()[0].startswith(f"slow host: {host}: rank(s) {nranks - 1} slow at their own work")


def test_an_isolate_or_check_run_does_not_judge_own_work(tmp_path: Path) -> None:
    """Ranks of a quick group wait at the round's end for its slow group: a check with n5 slowed named the
    healthy n3 and n4 'slow at their own work' on its page. Between rounds the gap is not a rank's own."""
    result = analyse(sweep(4, own_s={3: 0.3}, late={}), RunDir(tmp_path), RunScope(in_rounds=True))
    assert result.slow_ranks == [] and result.slow_hosts == [] and result.verdict() == []
    assert f"#   {ROUNDS_UNJUDGED}" in result.lines()


def test_start_lag_and_finishing_last_in_a_collective_accuse_nobody(tmp_path: Path) -> None:
    """A slow link elsewhere makes ranks start late and end last: that is not evidence against their host."""
    result = analyse(sweep(4, own_s={}, late={0: 0.055, 1: 0.055}), RunDir(tmp_path))
    assert result.slow_ranks == [] and result.slow_hosts == [] and result.verdict() == []
    assert "n0" not in "\n".join(result.lines())


def test_jitter_alone_flags_nobody(tmp_path: Path) -> None:
    result = analyse(sweep(16, own_s={}, late={}), RunDir(tmp_path))
    assert result.slow_ranks == [] and result.slow_hosts == []


def bandwidth_row(busbw: float, size: int = 1 << 20) -> SummaryRow:
    return summary_row("all_reduce", size, busbw, nranks=4)


def test_a_run_slow_as_a_whole_says_every_rank_waited_and_how_to_find_the_node_or_link(tmp_path: Path) -> None:
    line = LineRate(10.0, "eth0 at 10 Gb/s (the slowest of n[1-2])")
    scope = RunScope(rows=[bandwidth_row(0.0068), bandwidth_row(0.9, size=4096)], line=line, hosts=["n1", "n2"],
                     isolate_config="/runs/r/config.yaml")  # fmt: skip
    result = analyse(sweep(4, own_s={}, late={0: 0.055}), RunDir(tmp_path), scope)
    assert result.whole_run.startswith(
        "every rank waited; the run as a whole is 184x below the line rate of eth0 at 10 Gb/s (the slowest of "
        "n[1-2]): best busbw 0.0068 GB/s (all_reduce 1048576 B) against 1.25 GB/s; no host stands out"
    )
    assert result.isolate_command == "collbench isolate --config /runs/r/config.yaml nodes=2 'slurm.nodelist=n[1-2]'"
    assert result.verdict()[-1] == f"to find the node or link: {result.isolate_command}"


def test_a_healthy_run_or_one_without_bandwidth_bound_sizes_is_not_called_slow(tmp_path: Path) -> None:
    line = LineRate(10.0, "eth0 at 10 Gb/s")
    for rows in ([bandwidth_row(0.3)], [bandwidth_row(0.001, size=65536)]):
        scope = RunScope(rows=rows, line=line, hosts=["n1", "n2"], isolate_config="/runs/r/config.yaml")
        result = analyse(sweep(4, own_s={}, late={}), RunDir(tmp_path), scope)
        assert result.whole_run == "" and result.isolate_command == "" and result.verdict() == []


def test_a_host_slow_at_its_own_work_is_named_instead_of_the_whole_run(tmp_path: Path) -> None:
    scope = RunScope(rows=[bandwidth_row(0.001)], line=LineRate(10.0, "eth0"), hosts=["n0", "n1"],
                     isolate_config="/runs/r/config.yaml")  # fmt: skip
    result = analyse(sweep(8, own_s={5: 0.3}, late={}), RunDir(tmp_path), scope)
    assert result.slow_hosts[0].startswith("n1: rank(s) 5") and result.whole_run == ""


def test_wrong_elements_are_attributed_to_rank_host_and_first_index(tmp_path: Path) -> None:
    records = [record(0, "n0", 10, 1), record(1, "n1", 10, 1, wrong=3), record(1, "n1", 10, 2, size=2048, wrong=1)]
    (line,) = analyse(records, RunDir(tmp_path)).wrong
    assert (
        line == "rank 1 on n1: 4 wrong element(s) in 2 measurement(s); first in all_reduce 1024 B in-place, element 7"
    )


def write_env(folder: Path, rank: int, host: str, variables: dict[str, str], nccl: str = "2.21.5") -> Path:
    path = folder / f"rank-{rank:05d}.json"
    path.write_text(json.dumps({"hostname": host, "torch": "2.13.0", "nccl": nccl, "variables": variables}))
    return path


def test_environment_differences_name_the_odd_host(tmp_path: Path) -> None:
    paths = [
        write_env(tmp_path, 0, "n1", {"NCCL_IB_HCA": "mlx5_0", "SLURM_PROCID": "0"}),
        write_env(tmp_path, 1, "n1", {"NCCL_IB_HCA": "mlx5_0", "SLURM_PROCID": "1"}),
        write_env(tmp_path, 2, "n2", {"NCCL_IB_HCA": "mlx5_9", "SLURM_PROCID": "2"}, nccl="2.18.1"),
        write_env(tmp_path, 3, "n3", {"SLURM_PROCID": "3"}),
    ]
    lines = environment_differences(paths)
    assert "NCCL_IB_HCA: 'mlx5_0' on 2 rank(s) (n1); 'mlx5_9' on 1 rank(s) (n2); '<unset>' on 1 rank(s) (n3)" in lines
    assert "nccl: '2.21.5' on 3 rank(s) (n1, n3); '2.18.1' on 1 rank(s) (n2)" in lines
    assert not any(line.startswith("SLURM_PROCID") or line.startswith("hostname") for line in lines)


def test_per_rank_file_paths_are_not_environment_drift(tmp_path: Path) -> None:
    paths = []
    for rank, host in enumerate(["n1", "n1", "n2"]):
        path = tmp_path / f"rank-{rank:05d}.json"
        variables = {"NCCL_DEBUG_FILE": f"/runs/x/logs/nccl-rank-{rank:05d}.log", "NCCL_IB_HCA": "mlx5_0"}
        if rank == 2:
            variables["NCCL_IB_HCA"] = "mlx5_1"
        path.write_text(json.dumps({"hostname": host, "variables": variables}))
        paths.append(path)
    assert environment_differences(paths) == ["NCCL_IB_HCA: 'mlx5_0' on 2 rank(s) (n1); 'mlx5_1' on 1 rank(s) (n2)"]
