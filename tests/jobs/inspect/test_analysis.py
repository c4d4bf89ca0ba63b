"""The report's per-rank view on synthetic runs: stragglers, time outliers, wrong elements, env drift."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from collectives.results import RankResult
from jobs.inspect.analysis import analyse, environment_differences
from jobs.rundir.layout import RunDir


def record(rank: int, host: str, time_us: float, started_at: float, size: int = 1024, wrong: int = 0) -> RankResult:
    return RankResult(
        op="all_reduce", size=size, count=size // 4, dtype="float32", redop="sum", root=-1, in_place=True,
        rank=rank, local_rank=0, host=host, nranks=0, iters=5, time_us=time_us, algbw=0, busbw=0, wrong=wrong,
        started_at=started_at, first_wrong_index=7 if wrong else -1,
    )  # fmt: skip


def sweep(nranks: int, late: dict[int, float], slow: dict[int, float], sizes: int = 10) -> list[RankResult]:
    records = []
    for step in range(sizes):
        for rank in range(nranks):
            started = 1000.0 + step + late.get(rank, 0.0) + 0.0005 * ((rank * 7 + step) % 3)
            records.append(record(rank, f"n{rank // 4}", 100.0 * slow.get(rank, 1.0), started, size=1 << step))
    return records


@pytest.mark.parametrize("nranks", [2, 3, 16])
def test_a_straggler_is_named_with_its_host(nranks: int, tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    result = analyse(sweep(nranks, late={nranks - 1: 0.05}, slow={}), run)
    assert [(f.rank, f.host) for f in result.late_ranks] == [(nranks - 1, f"n{(nranks - 1) // 4}")]
    assert re.search(r"starts its measurements 5\d\.\d ms after the first rank", result.late_ranks[0].what)
    if nranks == 16:
        assert result.slowest_host.startswith("n3 ")


def test_jitter_alone_flags_nobody(tmp_path: Path) -> None:
    result = analyse(sweep(16, late={}, slow={}), RunDir(tmp_path))
    assert result.late_ranks == [] and result.slow_ranks == []


def test_a_rank_with_outlying_times_is_flagged(tmp_path: Path) -> None:
    result = analyse(sweep(16, late={}, slow={5: 1.8}), RunDir(tmp_path))
    assert [f.rank for f in result.slow_ranks] == [5]
    assert "1.80x the typical rank" in result.slow_ranks[0].what


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
