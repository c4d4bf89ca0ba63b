"""`collbench export prometheus` of a verdict with units the evidence could not settle, checked by the real
`promtool check metrics`: one collbench_isolate_inconclusive series a unit at its grain, the count, the exit
status 5, the node and rail verdicts `inconclusive`; no finding for any of them."""

from __future__ import annotations

from pathlib import Path

from tests.jobs.cli.test_export_prometheus import _export, _promtool, _samples, prometheus_tools
from tests.jobs.cli.test_export_prometheus_grains import _labels, _value
from tests.jobs.inconclusive_runs import inconclusive_run

__all__ = ["prometheus_tools"]  # the fixture, imported for the tests here


def test_each_inconclusive_unit_is_a_series_at_its_grain_and_no_finding(prometheus_tools: None, tmp_path: Path) -> None:
    run = inconclusive_run(tmp_path)
    result = _export(str(run.path), "--cluster", "lab", "--config-label", "iso", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    checked = _promtool(result.stdout)
    assert checked.returncode == 0 and checked.stdout == "" and checked.stderr == "", checked
    samples = _samples(result.stdout)
    units = [_labels(s) for s in samples["collbench_isolate_inconclusive"] if s.endswith(" 1.0")]
    group = {"cluster": "lab", "config": "iso"}
    assert units == [
        {**group, "hostname": "n3", "grain": "node", "rail": "", "why": "spread"},
        {**group, "hostname": "n5", "grain": "rail", "rail": "1", "why": "few_partners"},
        {**group, "hostname": "n1-n6", "grain": "link", "rail": "0", "why": "once"},
    ]
    assert _value(samples["collbench_isolate_inconclusive_units"], 'config="iso"') == 3.0
    assert _value(samples["collbench_isolate_exit_status"], 'config="iso"') == 5.0
    assert _value(samples["collbench_isolate_bad_found"], 'config="iso"') == 0.0
    node = samples["collbench_isolate_node_verdict"]
    assert _value(node, 'hostname="n3"', 'verdict="inconclusive"') == 1.0
    assert _value(node, 'hostname="n3"', 'verdict="slow"') == 0.0
    assert _value(node, 'hostname="n5"', 'verdict="inconclusive"') == 1.0, "a rail of it not settled"
    assert _value(node, 'hostname="n1"', 'verdict="healthy"') == 1.0, "a link inconclusive: its nodes stay healthy"
    rails = samples["collbench_isolate_rail_verdict"]
    assert _value(rails, 'hostname="n5"', 'rail="1"', 'verdict="inconclusive"') == 1.0
    assert _value(rails, 'hostname="n5"', 'rail="0"', 'verdict="healthy"') == 1.0
    assert "collbench_finding" not in samples
