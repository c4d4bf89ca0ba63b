"""The header nccl-tests prints before its tables (the versions, each rank's device and host), from the run's
env/rank-N.json records, and the rows a run waited for shows as rank 0 records them."""

from __future__ import annotations

import time
from pathlib import Path

from collectives.layout import LAYOUTS
from collectives.results import RankResult
from collectives.table import RankPlace
from jobs.config.model import load_config, to_yaml
from jobs.inspect.live_table import LiveTable
from jobs.inspect.report import assess, render_tables
from jobs.inspect.run_header import environment_of, rank_places, versions_line
from jobs.rundir.layout import RunDir
from jobs.rundir.records.rank import STATUS, RankState, RankStatus
from jobs.rundir.writing import write_json_atomic
from tests.jobs.rundir.synthetic import sweep_run


def _gpu_env(rank: int, torch: str = "2.5.1+cu124", driver: str = "550.54.15") -> dict[str, object]:
    """env/rank-N.json as jobs/runtime/environment.py writes it for a rank on a GPU."""
    return {
        "hostname": f"n{rank // 8 + 1}",
        "collbench": "0.1.0",
        "torch": torch,
        "cuda": "12.4",
        "nccl": "2.21.5",
        "gpu": {
            "index": rank % 8,
            "name": "NVIDIA H100 80GB HBM3",
            "uuid": "GPU-1",
            "pci_bus_id": f"0000:{0x1B + rank % 8:02x}:00.0",
            "memory_bytes": 85_000_000_000,
            "driver": driver,
        },
        "variables": {},
    }


def _cpu_env(host: str) -> dict[str, object]:
    return {"hostname": host, "collbench": "0.1.0", "torch": "2.13.0+cpu", "cuda": "none", "nccl": "none", "gpu": None}


def _status(rank: int, host: str, device: str) -> RankStatus:
    return RankStatus(
        rank=rank, host=host, pid=1234 + rank, device=device, state=RankState.RUNNING, started=0.0, updated=0.0
    )


def test_a_gpu_rank_is_named_as_nccl_tests_names_it() -> None:
    env = environment_of(0, _gpu_env(0))
    (place,) = rank_places({0: _status(0, "n1", "cuda:0")}, {0: env})
    line = "#  Rank  0 Group  0 Pid   1234 on         n1 device  0 [0000:1b:00] NVIDIA H100 80GB HBM3"
    assert f"#{place.device_line()}" == line
    assert versions_line({0: env}, "nccl") == (
        "collbench version 0.1.0 torch 2.5.1+cu124 backend nccl NCCL 2.21.5 CUDA 12.4 driver 550.54.15"
    )


def test_a_cpu_rank_says_cpu_and_gloo_names_no_nccl() -> None:
    env = environment_of(0, _cpu_env("vm"))
    (place,) = rank_places({0: _status(0, "vm", "cpu")}, {0: env})
    assert place.device_line() == "  Rank  0 Group  0 Pid   1234 on         vm device cpu"
    assert versions_line({0: env}, "gloo") == "collbench version 0.1.0 torch 2.13.0+cpu backend gloo device cpu"


def test_versions_the_ranks_disagree_on_name_the_ranks_that_differ() -> None:
    envs = {rank: environment_of(rank, _gpu_env(rank)) for rank in range(16)}
    for rank in range(8, 16):
        envs[rank] = environment_of(rank, _gpu_env(rank, torch="2.4.0", driver="535.1"))
    line = versions_line(envs, "nccl")
    assert "torch 2.5.1+cu124 (rank(s) 8-15: 2.4.0)" in line and "driver 550.54.15 (rank(s) 8-15: 535.1)" in line


def test_a_record_without_a_version_says_so_and_a_rank_without_a_record_keeps_its_status_device() -> None:
    old = environment_of(0, {"hostname": "vm", "torch": "2.13.0"})
    assert versions_line({0: old}, "nccl") == "collbench torch 2.13.0 backend nccl NCCL ? device cpu"
    place = rank_places({1: _status(1, "vm", "cuda:1")}, {})[0]
    assert place == RankPlace(rank=1, host="vm", pid=1235, device="cuda:1")
    assert place.device_line().endswith("device cuda:1")


def test_report_opens_with_the_versions_line(tmp_path: Path) -> None:
    run = sweep_run(tmp_path)
    lines = render_tables(assess(run))
    assert lines[:2] == ["# collbench torch 2.13.0 backend gloo device cpu", "#"]
    assert lines[2].startswith("# collbench all_reduce: 2 ranks")


def _result(rank: int, op: str, size: int, in_place: bool) -> RankResult:
    count = size // 4 // 2 if op == "all_gather" else size // 4
    algbw, busbw = LAYOUTS[op].bandwidths(count, 4, 2, 1e-4)
    return RankResult(
        op=op, size=size, count=count, dtype="float32", redop="none" if op == "all_gather" else "sum", root=-1,
        in_place=in_place, rank=rank, local_rank=rank, host="vm", nranks=2, iters=5, time_us=100.0, algbw=algbw,
        busbw=busbw, wrong=0, started_at=time.time(), requested_size=size,
    )  # fmt: skip


def _running_run(tmp_path: Path) -> RunDir:
    cfg = load_config(None, ["ranks=2", "bench.ops=[all_gather,all_reduce]", "bench.max_bytes=2K"])
    run = RunDir.create(tmp_path, "local")
    run.config_file.write_text(to_yaml(cfg))
    run.update_meta(run_id=run.run_id, launcher="local", world_size=2, nodes=1, job_id="1")
    return run


def _append(run: RunDir, *results: RankResult, cut: str = "") -> None:
    with run.rank_results(0).open("a") as handle:
        handle.write("".join(result.to_json() + "\n" for result in results) + cut)


def _rows(lines: list[str]) -> list[str]:
    return [line for line in lines if not line.startswith("#")]


def test_the_header_waits_for_rank_0s_environment_and_the_ranks_set_up(tmp_path: Path) -> None:
    run = _running_run(tmp_path)
    table = LiveTable(run)
    assert table.lines() == []
    STATUS.write(run.rank_status(0), _status(0, "vm", "cpu"))
    write_json_atomic(run.rank_env(0), _cpu_env("vm"))
    assert table.lines() == [], "rank 1 has not recorded its environment, and rank 0 has measured nothing"
    STATUS.write(run.rank_status(1), _status(1, "vm", "cpu"))
    write_json_atomic(run.rank_env(1), _cpu_env("vm"))
    header = table.lines()
    assert header[0] == "# collbench version 0.1.0 torch 2.13.0+cpu backend gloo device cpu"
    assert header[2:5] == [
        "# Using devices",
        "#  Rank  0 Group  0 Pid   1234 on         vm device cpu",
        "#  Rank  1 Group  0 Pid   1235 on         vm device cpu",
    ]
    assert table.lines() == [], "the header is shown once"


def test_a_row_is_shown_once_its_placements_are_measured_and_each_op_under_its_own_headers(tmp_path: Path) -> None:
    run = _running_run(tmp_path)
    write_json_atomic(run.rank_env(0), _cpu_env("vm"))
    table = LiveTable(run)
    _append(run, _result(0, "all_gather", 32, False))
    first = table.lines()
    assert first[0].startswith("# collbench version") and _rows(first) == [], "in-place is still to come"
    assert any("out-of-place" in line for line in first) is False
    half = _result(0, "all_gather", 64, False).to_json() + "\n"
    _append(run, _result(0, "all_gather", 32, True), cut=half[:20])  # the writer is midway through a line
    shown = table.lines()
    assert shown[0] == "# collbench all_gather: 2 ranks, backend gloo"
    assert any("out-of-place" in line and "in-place" in line for line in shown)
    (row,) = _rows(shown)
    assert row.split()[:5] == ["32", "4", "float", "none", "-1"] and row.count("N/A") == 0
    _append(run, cut=half[20:])
    assert table.lines() == []
    _append(run, _result(0, "all_reduce", 8, True))  # all_gather 64 B's in-place never came: its line is over
    shown = table.lines()
    assert [row.split()[0] for row in _rows(shown)] == ["64", "8"]
    assert _rows(shown)[0].count("N/A") == 4, "the placement not measured"
    assert "# collbench all_reduce: 2 ranks, backend gloo" in shown, "a new op gets its caption"


def test_the_last_row_comes_when_the_wait_is_over_and_a_new_attempts_carried_lines_not_again(tmp_path: Path) -> None:
    run = _running_run(tmp_path)
    write_json_atomic(run.rank_env(0), _cpu_env("vm"))
    table = LiveTable(run)
    _append(run, _result(0, "all_gather", 32, False), _result(0, "all_gather", 32, True))
    _append(run, _result(0, "all_gather", 64, False))
    assert len(_rows(table.lines())) == 1
    run.rank_results(0).unlink()  # the next attempt files the old results away and carries its lines over
    _append(run, _result(0, "all_gather", 32, False), _result(0, "all_gather", 32, True))
    assert _rows(table.lines()) == []
    assert [row.split()[0] for row in _rows(table.lines(final=True))] == ["64"]
