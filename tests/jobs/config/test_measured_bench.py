"""The bench a task measures is what memory is checked against: isolate and check measure their own op and
sizes, not the bench section (issue 32: ib-h100's isolate was refused for the 8G sweep it never runs)."""

from __future__ import annotations

import pytest

from collectives.memory import NotEnoughMemory, check_fits
from collectives.plan import peak_bytes_per_rank
from jobs.config.model import load_config

H100_BYTES = 80 * 10**9


def test_a_sweep_measures_its_bench_section() -> None:
    cfg = load_config("ib-h100")
    assert cfg.measured_bench() is cfg.bench and cfg.largest_size_key() == "bench.max_bytes"
    assert load_config("ib-h100", ["bench.sizes=[1G]"]).largest_size_key() == "bench.sizes", "the key that was set"


@pytest.mark.parametrize(
    ("words", "key"), [(["task=isolate"], "isolate.sizes"), (["task=isolate", "isolate.mode=check"], "check.sizes")]
)
def test_isolate_and_check_measure_their_op_and_sizes_and_are_checked_for_them(words: list[str], key: str) -> None:
    cfg = load_config("ib-h100", ["nodes=4", *words])
    bench = cfg.measured_bench()
    assert (bench.ops, bench.max_bytes) == ([cfg.isolate.op], max(cfg.isolate.sizes))
    assert bench.sizes == [cfg.isolate.probe_size, *cfg.isolate.sizes], "the probe first: rounds are time-bounded"
    assert cfg.largest_size_key() == key
    check_fits(bench, cfg.world_size, H100_BYTES, "an H100", key)  # isolate's 1G fits an 80 GB GPU
    with pytest.raises(NotEnoughMemory, match=r"\(a 10 GB GPU\); lower bench.max_bytes$"):
        check_fits(cfg.bench, cfg.world_size, 10 * 10**9, "a 10 GB GPU")  # the 8G sweep it does not run would not
    need, _ = peak_bytes_per_rank(bench, cfg.world_size)
    with pytest.raises(NotEnoughMemory, match=rf"lower {key}$"):
        check_fits(bench, cfg.world_size, need - 1, "a smaller GPU", key)
