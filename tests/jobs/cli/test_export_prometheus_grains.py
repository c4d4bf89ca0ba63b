"""`collbench export prometheus` of verdicts at the fabric's own grain, checked by the real `promtool check
metrics` (tests/jobs/cli/test_export_prometheus.py installs it): each (node, rail) with its HCA and verdict,
each slow switch link with its ratio, and the node's leaf switch on its series when the topology is known."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from jobs.inspect.exports.prometheus import _Collected, _Families, add_isolate_verdict, exposition
from jobs.rundir.records.isolate import IsolateVerdict, SwitchVerdict
from tests.jobs.cli.test_export_prometheus import _export, _promtool, _samples, prometheus_tools
from tests.jobs.history.fabric_runs import across, rail_isolate_run
from tests.jobs.rundir.synthetic import isolate_run

__all__ = ["prometheus_tools"]  # the fixture, imported for the tests here


def _checked(text: str) -> dict[str, list[str]]:
    checked = _promtool(text)
    assert checked.returncode == 0 and checked.stdout == "" and checked.stderr == "", checked
    return _samples(text)


def _value(samples: list[str], *labels: str) -> float:
    (line,) = [s for s in samples if all(label in s for label in labels)]
    return float(line.rsplit(" ", 1)[1])


def _labels(sample: str) -> dict[str, str]:
    inside = sample.split("{", 1)[1].rsplit("}", 1)[0]
    return dict((k, v.strip('"')) for k, v in (pair.split("=", 1) for pair in inside.split('",') if pair))


def test_a_slow_rail_is_its_host_rail_and_hca_and_the_node_carries_its_leaf(
    prometheus_tools: None, tmp_path: Path
) -> None:
    run = rail_isolate_run(tmp_path, lambda pair, rail: rail == 1 and 2 in pair)  # n3's rail 1 (mlx5_1)
    result = _export(str(run.path), "--cluster", "lab", "--config-label", "iso", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    samples = _checked(result.stdout)
    verdicts = samples["collbench_isolate_rail_verdict"]
    assert len(verdicts) == 6 * 2 * 3, "each node's two rails, one series a state"
    slow = [_labels(s) for s in verdicts if 'verdict="slow"' in s and s.endswith(" 1.0")]
    assert slow == [
        {"cluster": "lab", "config": "iso", "hostname": "n3", "rail": "1", "hca": "mlx5_1", "verdict": "slow"}
    ]
    assert _value(verdicts, 'hostname="n3"', 'rail="0"', 'hca="mlx5_0"', 'verdict="healthy"') == 1.0
    assert _value(samples["collbench_isolate_rail_level_ratio"], 'hostname="n3"', 'rail="1"') == pytest.approx(
        0.02, abs=0.01
    )
    assert len(samples["collbench_isolate_rail_bus_bandwidth_bytes_per_second"]) == 12
    node = samples["collbench_isolate_node_verdict"]
    assert _value(node, 'hostname="n3"', 'leaf="s1"', 'verdict="slow_rail"') == 1.0, "drained for its rail"
    assert _value(node, 'hostname="n5"', 'leaf="s2"', 'verdict="healthy"') == 1.0
    assert all('leaf="s' in s for s in samples["collbench_isolate_node_level_ratio"])
    assert "collbench_isolate_switch_link_level_ratio" not in samples


def test_a_slow_switch_link_is_one_series_with_its_ratio(prometheus_tools: None, tmp_path: Path) -> None:
    run = rail_isolate_run(tmp_path, lambda pair, rail: rail == 1 and across(pair))  # s1-s2 on rail 1
    samples = _checked(_export(str(run.path), "--cluster", "lab", "--config-label", "iso", cwd=tmp_path).stdout)
    (line,) = samples["collbench_isolate_switch_link_level_ratio"]
    assert _labels(line) == {"cluster": "lab", "config": "iso", "switch": "s1-s2", "rail": "1"}
    assert float(line.rsplit(" ", 1)[1]) == pytest.approx(0.02, abs=0.01)
    (busbw,) = samples["collbench_isolate_switch_link_bus_bandwidth_bytes_per_second"]
    assert 'switch="s1-s2"' in busbw
    healthy = [s for s in samples["collbench_isolate_node_verdict"] if 'verdict="healthy"' in s]
    assert len(healthy) == 6 and all(s.endswith(" 1.0") for s in healthy), "no node drained for a link"
    assert not [s for s in samples["collbench_isolate_rail_verdict"] if 'verdict="slow"' in s and s.endswith(" 1.0")]


def test_without_topology_leaf_is_empty_and_node_grain_has_no_rail_series(
    prometheus_tools: None, tmp_path: Path
) -> None:
    run = isolate_run(tmp_path)
    samples = _checked(_export(str(run.path), cwd=tmp_path).stdout)
    assert all('leaf=""' in s for s in samples["collbench_isolate_node_verdict"])
    assert (
        "collbench_isolate_rail_verdict" not in samples and "collbench_isolate_switch_link_level_ratio" not in samples
    )


def test_an_uplink_and_a_cut_on_every_rail_have_their_own_series(prometheus_tools: None) -> None:
    sides = [["n1", "n2"], ["n3", "n4"]]
    record = IsolateVerdict(
        run_id="RUN", mode="pairs", hosts=["n1", "n2", "n3", "n4"], rounds=[], round_seconds=[], unfinished=[],
        found=True, stopped=[], exclude="", drain="", problems=[], level=10.0,
        switch_faults=[
            SwitchVerdict(["s1"], -1, sides, 4, 4, 4.0, 0.4, "s1 uplink on every rail: ..."),
            SwitchVerdict([], 0, sides, 4, 4, 2.0, 0.2, "n[1-2] | n[3-4] on rail 0: ..."),
        ],
    )  # fmt: skip
    families = _Families()
    add_isolate_verdict(families, record, ["lab", "iso"])
    registry = CollectorRegistry(auto_describe=True)
    registry.register(_Collected(families))
    ratios = _checked(exposition(registry))["collbench_isolate_switch_link_level_ratio"]
    assert _value(ratios, 'switch="s1 uplink"', 'rail=""') == 0.4
    assert _value(ratios, 'switch="n[1-2] | n[3-4]"', 'rail="0"') == 0.2
