"""What check and check --node time: on NCCL a warm-up that takes the connections in, and enough timed
calls for the tolerance; on gloo (the CPU stand-in) the two calls they always had."""

from jobs.cli.check_node_command import node_config
from jobs.isolate.check_plan import CONNECT_WARMUP, check_timing, timed_calls


def test_the_floor_grows_as_the_tolerance_tightens() -> None:
    assert timed_calls(0.15) == 45
    assert timed_calls(0.30) == 12
    assert timed_calls(0.05) == 400
    assert timed_calls(0.15, spread=0.05) == 2


def test_nccl_warms_up_past_its_first_call_and_times_the_floor() -> None:
    timing = check_timing("nccl", 0.15)
    assert timing.warmup_iters == CONNECT_WARMUP > 1
    assert timing.min_iters == 45
    assert (check_timing("gloo", 0.15).warmup_iters, check_timing("gloo", 0.15).min_iters) == (1, 2)


def test_check_node_on_gpus_uses_it() -> None:
    bench = node_config(None, ["backend=nccl", "device=cuda", "bench.dtype=float32", "check.tolerance=0.3"]).bench
    assert (bench.warmup_iters, bench.min_iters) == (CONNECT_WARMUP, 12)
    assert node_config(None, []).bench.min_iters == 2
