"""Time-bounded isolate rounds in the config (issue 27): each group measures its sizes smallest first, with
a probe before them, so a member too slow to finish the large sizes still has a figure; the round's
deadline; and the keys' checks. check passes its probe on."""

from __future__ import annotations

import pytest

from collectives.settings import BenchSettings
from jobs.config.check_settings import CheckSettings
from jobs.config.isolate_settings import IsolateSettings
from jobs.config.model import load_config

M, G = 1 << 20, 1 << 30


def test_a_bounded_round_measures_the_probe_first_then_the_sizes_smallest_first() -> None:
    bench = IsolateSettings(sizes=[G, 256 * M]).bench(BenchSettings())
    assert bench.sizes == [M, 256 * M, G] == bench.size_list()
    assert (bench.min_bytes, bench.max_bytes, bench.ops) == (M, G, ["all_reduce"])


@pytest.mark.parametrize(
    ("settings", "sizes"),
    [
        (IsolateSettings(sizes=[256 * 1024, M]), [256 * 1024, M]),  # the probe is not below the smallest size
        (IsolateSettings(sizes=[M, 4 * M], probe_size=M), [M, 4 * M]),  # nor the same size twice
        (IsolateSettings(sizes=[G, 256 * M], round_budget_s=0), [G, 256 * M]),  # unbounded: as given, no probe
    ],
)
def test_the_probe_comes_only_below_the_sizes_of_a_bounded_round(settings: IsolateSettings, sizes: list[int]) -> None:
    bench = settings.bench(BenchSettings())
    assert bench.sizes == sizes and (bench.min_bytes, bench.max_bytes) == (min(sizes), max(sizes))


def test_the_round_deadline_is_its_start_plus_its_budget_or_none() -> None:
    assert IsolateSettings().round_deadline(1000.0) == 1120.0
    assert IsolateSettings(round_budget_s=12.5).round_deadline(1000.0) == 1012.5
    assert IsolateSettings(round_budget_s=0).round_deadline(1000.0) == 0.0


def test_a_negative_budget_and_a_probe_of_no_bytes_are_refused() -> None:
    problems = IsolateSettings(round_budget_s=-1, probe_size=0).problems(4)
    assert "isolate.round_budget_s: -1 must be 0 (no bound) or positive seconds" in problems
    assert "isolate.probe_size: 0 must be a positive size such as 1M" in problems
    assert CheckSettings(probe_size=-5).problems() == ["check.probe_size: -5 must be a positive size such as 1M"]


def test_the_keys_read_sizes_and_check_passes_its_probe_on() -> None:
    cfg = load_config("local", ["isolate.probe_size=4M", "isolate.round_budget_s=30", "check.probe_size=2M"])
    assert (cfg.isolate.probe_size, cfg.isolate.round_budget_s, cfg.check.probe_size) == (4 * M, 30.0, 2 * M)
    assert cfg.check.isolate_settings().probe_size == 2 * M
    assert cfg.check.isolate_settings().bench(BenchSettings()).sizes == [2 * M, 256 * M]
