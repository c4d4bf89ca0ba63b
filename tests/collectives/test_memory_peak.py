"""The memory guard against the peak a sweep really reaches, measured as the kernel counts it (max RSS of a
rank process above the same run at 8 B): at 64 MiB of reduce_scatter, the op with both buffers, a gloo call
that stages a third, and a reduction to check; in float64, for the fewest elements to fill and check (about
5 s). tests/bench/bench_memory.py measures every op at 256 MiB."""

from __future__ import annotations

import pytest

from collectives.plan import peak_bytes_per_rank
from collectives.settings import BenchSettings
from tests.collectives.memory_probe import Probe, peak_bytes

pytestmark = pytest.mark.integration

SIZE = 64 << 20


def test_the_guard_holds_the_measured_peak_and_not_much_more() -> None:
    probe = Probe("reduce_scatter", SIZE, dtype="float64")
    settings = BenchSettings(ops=["reduce_scatter"], sizes=[SIZE], dtype="float64")
    guard, _ = peak_bytes_per_rank(settings, probe.ranks, "gloo")
    measured = peak_bytes(probe)
    assert measured <= guard, f"measured {measured >> 20} MiB above the guard's {guard >> 20} MiB"
    assert measured >= 0.7 * guard, f"the guard's {guard >> 20} MiB is far above the {measured >> 20} MiB measured"
