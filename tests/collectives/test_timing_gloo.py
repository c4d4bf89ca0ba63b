"""The timers over a real gloo process group of 2 ranks: nccl-tests' loop timer gives the same time per
call as the per-call host timer of the same run, within noise; the per-call pass is a separate view."""

from __future__ import annotations

import socket
import statistics
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from collectives.timing import Timing, resolve_timer, time_iterations, warm_up

pytestmark = pytest.mark.integration

SIZES = (64 * 1024, 1024 * 1024)
ROUNDS = 7
ITERS = 20


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _rank(rank: int, port: int, out: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    cpu = torch.device("cpu")
    lines = []
    for size in SIZES:
        tensor = torch.ones(size // 4)

        def call(tensor: torch.Tensor = tensor) -> None:
            dist.all_reduce(tensor)

        warm_up(call, 3, cpu)
        for round_ in range(ROUNDS):
            loop = time_iterations(call, ITERS, cpu, timer="loop", per_iteration=True)
            per_call = time_iterations(call, ITERS, cpu, timer="per_call")
            lines.append(_line(size, round_, "loop", loop))
            lines.append(_line(size, round_, "per_call", per_call))
    dist.destroy_process_group()
    Path(out, f"rank{rank}.txt").write_text("\n".join(lines) + "\n")


def _line(size: int, round_: int, name: str, t: Timing) -> str:
    samples = ",".join(f"{s:.9f}" for s in t.samples)
    return f"{size} {round_} {name} {t.timer} {t.calls} {t.time_s:.9f} {t.enqueue_s:.9f} {samples}"


@pytest.fixture(scope="module")
def timings(tmp_path_factory: pytest.TempPathFactory) -> list[list[str]]:
    out = tmp_path_factory.mktemp("timing")
    mp.start_processes(_rank, args=(_free_port(), str(out)), nprocs=2, start_method="spawn")
    return [line.split(" ") for line in (out / "rank0.txt").read_text().splitlines()]


def test_each_timer_reports_what_it_measured(timings: list[list[str]]) -> None:
    for _size, _, name, timer, calls, time_s, enqueue_s, *samples in timings:
        per_call = [float(s) for s in samples[0].split(",")] if samples and samples[0] else []
        assert int(calls) == ITERS
        if name == "loop":
            assert timer == "host_loop"
            assert len(per_call) == ITERS, "per_iteration adds the per-call pass"
            assert 0 < float(enqueue_s) <= float(time_s), "a blocking loop enqueues and completes at once"
        else:
            assert timer == "host"
            assert len(per_call) == ITERS
            assert float(time_s) == pytest.approx(statistics.fmean(per_call), rel=1e-6), "per_call: the mean"
            assert float(enqueue_s) == float(time_s)


@pytest.mark.parametrize("size", SIZES)
def test_the_loop_timer_agrees_with_the_per_call_times_of_the_same_run(timings: list[list[str]], size: int) -> None:
    loop = [float(t[5]) for t in timings if int(t[0]) == size and t[2] == "loop"]
    same_pass = [
        statistics.fmean(float(s) for s in t[7].split(",")) for t in timings if int(t[0]) == size and t[2] == "loop"
    ]
    per_call = [float(t[5]) for t in timings if int(t[0]) == size and t[2] == "per_call"]
    ratio = statistics.median(loop) / statistics.median(per_call)
    print(f"{size} B: loop {statistics.median(loop) * 1e6:.1f} us, per call {statistics.median(per_call) * 1e6:.1f} us")
    assert 0.75 < ratio < 1.33, f"loop timer {ratio:.2f}x the per-call timer at {size} B"
    ratio_same = statistics.median(loop) / statistics.median(same_pass)
    assert 0.75 < ratio_same < 1.33, f"loop timer {ratio_same:.2f}x its own per-iteration pass at {size} B"


def test_auto_is_the_loop_on_cuda_and_per_call_on_the_cpu() -> None:
    assert resolve_timer("auto", torch.device("cpu")) == "per_call"
    assert resolve_timer("auto", torch.device("cuda", 0)) == "loop"
    assert resolve_timer("loop", torch.device("cpu")) == "loop"
