"""The memory guard each rank applies before its process group: ib-h100's acceptance sweep fits an 80 GB
H100 with room to spare, as nccl-tests' does, and a refusal names the size that fits for the task's own
setting."""

from __future__ import annotations

from dataclasses import replace

import pytest

from collectives.device_memory import NCCL_ROOM_BYTES
from collectives.memory import NotEnoughMemory, check_fits, largest_fitting_size
from collectives.plan import peak_bytes_per_rank
from jobs.config.model import load_config

GIB = 1 << 30
H100_FREE = 80 * 10**9 - NCCL_ROOM_BYTES
"""What the guard lets a rank use on an 80 GB H100 once NCCL's room is set aside."""
NCCL_TESTS_PEAK = 3 * 8 * GIB
"""nccl-tests' -b 8 -e 8G -d bfloat16 -c 1: send, receive and expected buffers of the largest size."""


@pytest.mark.parametrize("nodes", [4, 16, 64])
def test_ib_h100s_sweep_fits_an_h100_within_what_nccl_tests_takes(nodes: int) -> None:
    cfg = load_config("ib-h100", [f"nodes={nodes}"])
    need, step = peak_bytes_per_rank(cfg.bench, cfg.world_size, cfg.backend)
    assert step is not None and (step.op, step.size) == ("reduce_scatter", 8 * GIB)
    assert need <= NCCL_TESTS_PEAK < H100_FREE
    check_fits(cfg.bench, cfg.world_size, H100_FREE, "an H100", cfg.largest_size_key(), cfg.backend)


def test_the_largest_bf16_all_reduce_ib_h100_runs_on_an_h100_is_64g() -> None:
    cfg = load_config("ib-h100")
    all_reduce = replace(cfg.bench, ops=["all_reduce"], max_bytes=1 << 40)
    assert largest_fitting_size(all_reduce, cfg.world_size, H100_FREE, cfg.backend) == 64 * GIB


@pytest.mark.parametrize(
    ("words", "key"), [([], "bench.max_bytes"), (["task=isolate", "isolate.mode=check"], "check.sizes")]
)
def test_a_refusal_names_the_largest_size_of_the_tasks_own_setting(words: list[str], key: str) -> None:
    cfg = load_config("ib-h100", ["nodes=4", *words])
    bench = cfg.measured_bench()
    smaller = largest_fitting_size(bench, cfg.world_size, GIB, cfg.backend)
    assert smaller is not None and smaller < max(bench.size_list())
    with pytest.raises(NotEnoughMemory, match=rf"\(free memory on cuda:0\); lower {key}$") as refused:
        check_fits(bench, cfg.world_size, GIB, "free memory on cuda:0", cfg.largest_size_key(), cfg.backend)
    spelled = f"{smaller >> 20}M" if smaller < GIB else f"{smaller >> 30}G"
    assert f"the largest that fits is {spelled} of bfloat16 ({key} up to {spelled})" in str(refused.value)
