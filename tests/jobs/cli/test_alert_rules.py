"""The alerting rules shipped in examples/prometheus/ against Debian's `promtool` (package prometheus, the
prometheus_tools fixture): `promtool check rules` passes, `promtool test rules` passes, every alert has a
unit test that fires it and one that keeps it quiet, and every metric a rule reads is one a real export
carries (or one another part of issue 30 is adding), so that the rules and the exporter cannot drift apart."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from jobs.cli.main import main
from jobs.history.database import open_history
from jobs.history.ingest import record_run
from jobs.rundir.records.drains import DRAINS, DrainRecord, DrainStep
from tests.conftest import REPO
from tests.jobs.cli.test_export_baseline import _history
from tests.jobs.cli.test_export_prometheus import prometheus_tools
from tests.jobs.history.drift_runs import slowed_isolate_run
from tests.jobs.rundir import synthetic

__all__ = ["prometheus_tools"]  # the fixture, imported for the tests here

EXAMPLES = REPO / "examples" / "prometheus"
RULES = EXAMPLES / "collbench.rules.yml"
TESTS = EXAMPLES / "collbench.rules.test.yml"
ALERTS = {
    "CollbenchBusbwBelowBaseline",
    "CollbenchRunFailed",
    "CollbenchBadNodeRailOrLink",
    "CollbenchIsolateBadFound",
    "CollbenchIsolateInconclusive",
    "CollbenchStale",
    "CollbenchNodeDrained",
    "CollbenchNodeDrift",
}

METRIC = re.compile(r"\bcollbench_[a-z_]+\b")


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["promtool", *args], cwd=EXAMPLES, capture_output=True, text=True, check=False)


def _rules() -> list[dict[str, Any]]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return [rule for group in groups for rule in group["rules"]]


def test_promtool_checks_the_rules(prometheus_tools: None) -> None:
    checked = _promtool("check", "rules", RULES.name)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"SUCCESS: {len(_rules())} rules found" in checked.stdout


def test_promtool_s_unit_tests_of_the_rules_pass(prometheus_tools: None) -> None:
    tested = _promtool("test", "rules", TESTS.name)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "SUCCESS" in tested.stdout and "FAILED" not in tested.stdout


def test_every_alert_is_labelled_worded_and_fired_and_kept_quiet_by_a_unit_test() -> None:
    rules = _rules()
    assert {rule["alert"] for rule in rules} == ALERTS
    for rule in rules:
        assert rule["labels"]["severity"] in ("warning", "critical"), rule["alert"]
        words = rule["annotations"]["summary"] + rule["annotations"]["description"]
        assert "{{ $labels.cluster }}" in words, rule["alert"]
        labels = set(re.findall(r"\$labels\.(\w+)", words))
        assert labels <= {"cluster", "config", "hostname", "code", "collective", "message_size", "placement", "root"}
    cases = [case for test in yaml.safe_load(TESTS.read_text())["tests"] for case in test["alert_rule_test"]]
    for alert in ALERTS:
        mine = [case for case in cases if case["alertname"] == alert]
        assert any(case["exp_alerts"] for case in mine), f"{alert}: no unit test fires it"
        assert any(not case["exp_alerts"] for case in mine), f"{alert}: no unit test keeps it quiet"


def _exported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> set[str]:
    """Every metric name a real export prints: a sweep run and an isolate run, each with a history behind it."""
    url, _ = _history(tmp_path)
    with open_history(url) as history:
        for noise in (1.0, 1.004, 0.996):
            assert record_run(history, slowed_isolate_run(tmp_path / "past", {}, noise))
    isolate = slowed_isolate_run(tmp_path / "isolate", {"n3": 0.9})
    named = slowed_isolate_run(tmp_path / "named", {"n3": 0.3})  # named slow, and drained after it
    step = DrainStep("n3", "drain", ["slow_node"], "collbench:slow_node by isolate run=R x", "isolate named it", True)
    DRAINS.create(named.drains_file, DrainRecord(run_id=named.run_id, task="isolate", at=1.0, steps=[step]))
    names: set[str] = set()
    for run in (synthetic.sweep_run(tmp_path / "runs", slower=1.3), isolate, named):
        assert main(["export", "prometheus", str(run.path), "--db", url]) == 0
        out = capsys.readouterr().out
        names |= {line.split()[2] for line in out.splitlines() if line.startswith("# TYPE ")}
    return names


def test_every_metric_the_rules_read_is_one_the_export_carries(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    exported = _exported(tmp_path, capsys)
    read = {name for rule in _rules() for name in METRIC.findall(rule["expr"])}
    assert {
        "collbench_bus_bandwidth_baseline_median_bytes_per_second",
        "collbench_bus_bandwidth_baseline_mad_bytes_per_second",
        "collbench_bus_bandwidth_baseline_runs",
        "collbench_run_end_time_seconds",
        "collbench_isolate_bad_found",
        "collbench_node_drift_mads",
    } <= read & exported
    assert {"collbench_finding", "collbench_node_drained"} <= read & exported
    missing = read - exported
    assert not missing, f"the rules read metrics no export carries: {sorted(missing)}"


def _below_baseline_expr() -> str:
    return str(next(rule["expr"] for rule in _rules() if rule["alert"] == "CollbenchBusbwBelowBaseline"))


def _series(text: str) -> tuple[list[dict[str, str]], dict[str, float], dict[str, float]]:
    """A real export's samples as promtool's input series (each held for ten minutes), and each row's busbw
    and baseline median by its labels."""
    series, busbw, median = [], {}, {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name_labels, value = line.rsplit(" ", 1)
        series.append({"series": name_labels, "values": f"{value}x10"})
        name, labels = name_labels.split("{", 1)
        if name == "collbench_bus_bandwidth_bytes_per_second":
            busbw["{" + labels] = float(value)
        elif name == "collbench_bus_bandwidth_baseline_median_bytes_per_second":
            median["{" + labels] = float(value)
    return series, busbw, median


@pytest.mark.parametrize(("slower", "fires"), [(1.3, True), (1.0, False)])
def test_the_baseline_rule_on_a_real_export_fires_on_a_slowed_run_only(
    prometheus_tools: None, tmp_path: Path, capsys: pytest.CaptureFixture[str], slower: float, fires: bool
) -> None:
    url, _ = _history(tmp_path)
    run = synthetic.sweep_run(tmp_path / "runs", slower=slower)
    assert main(["export", "prometheus", str(run.path), "--db", url]) == 0
    series, busbw, median = _series(capsys.readouterr().out)
    assert len(busbw) == len(median) == 2
    expected = [{"labels": labels, "value": busbw[labels] / median[labels]} for labels in busbw] if fires else []
    tests = {
        "rule_files": [str(RULES)],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": series,
                "promql_expr_test": [{"expr": _below_baseline_expr(), "eval_time": "5m", "exp_samples": expected}],
            }
        ],
    }
    (tmp_path / "real.test.yml").write_text(yaml.safe_dump(tests))
    tested = subprocess.run(
        ["promtool", "test", "rules", "real.test.yml"], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert tested.returncode == 0, tested.stdout + tested.stderr
