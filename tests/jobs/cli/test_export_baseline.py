"""`collbench export prometheus` carries, per exported row, the results history's baseline of comparable runs
(median, MAD, how many runs), and for an isolate run each node's level against its own past, from a real
SQLite history the synthetic runs are recorded into; a history that is not there or does not answer leaves
those series out with one line, and creates nothing."""

from __future__ import annotations

from pathlib import Path
from statistics import median

import pytest

from jobs.cli.main import main
from jobs.config.model import load_config, to_yaml
from jobs.history.database import open_history
from jobs.history.gather import gather
from jobs.history.ingest import record_run, write_record
from jobs.history.node_drift import node_drift
from jobs.rundir.layout import RunDir
from tests.jobs.history.drift_runs import NODES, slowed_isolate_run
from tests.jobs.rundir import synthetic

NIGHT = 86400.0
FIRST = 1e9
HEALTHY = (1.0, 1.02, 0.97, 1.01, 0.99)
"""The healthy runs' times, as factors: a little noise, so the MAD is not 0."""
FAULT = "injected fault faults.slow_rank=1"
BASELINE = (
    "collbench_bus_bandwidth_baseline_runs",
    "collbench_bus_bandwidth_baseline_median_bytes_per_second",
    "collbench_bus_bandwidth_baseline_mad_bytes_per_second",
)


def _record(url: str, where: Path, night: int, slower: float, **columns: object) -> list[tuple[int, float]]:
    """A synthetic run recorded as started on `night` (`columns` of its runs row set as gather would find
    them in a run of that kind); its (requested size, busbw) rows."""
    run = synthetic.sweep_run(where, slower=slower)
    record = gather(run)
    record.run.update({"started": FIRST + night * NIGHT, "excluded": "", **columns})
    with open_history(url, say=lambda _line: None) as history:
        assert write_record(history, record).recorded
    return [(int(row["requested_size"]), float(row["busbw"])) for row in record.children["results"]]


def _history(tmp_path: Path) -> tuple[str, dict[int, list[float]]]:
    """A history of healthy runs and of runs no baseline may take; each size's healthy busbw figures."""
    url = f"sqlite:///{tmp_path / 'history.sqlite'}"
    healthy: dict[int, list[float]] = {}
    for night, slower in enumerate(HEALTHY):
        for size, busbw in _record(url, tmp_path / "past", night, slower):
            healthy.setdefault(size, []).append(busbw)
    _record(url, tmp_path / "past", 10, 3.0, excluded=FAULT)
    _record(url, tmp_path / "past", 11, 5.0, outcome="failed")
    _record(url, tmp_path / "past", 12, 0.5, nodes=2)
    _record(url, tmp_path / "past", 13, 0.5, cluster="elsewhere")
    return url, healthy


def _export(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, list[str]], list[str]]:
    """The exit code, the samples by metric name, and stderr's lines."""
    code = main(["export", "prometheus", *args])
    out, err = capsys.readouterr()
    samples: dict[str, list[str]] = {}
    for line in out.splitlines():
        if line and not line.startswith("#"):
            samples.setdefault(line.split("{")[0], []).append(line)
    return code, samples, err.splitlines()


def _value(samples: list[str], size: int) -> float:
    line = next(s for s in samples if f'message_size_bytes="{size}"' in s)
    return float(line.rsplit(" ", 1)[1])


def test_each_row_carries_the_median_and_mad_of_the_healthy_comparable_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url, healthy = _history(tmp_path)
    run = synthetic.sweep_run(tmp_path / "runs", slower=1.3)
    code, samples, err = _export(capsys, str(run.path), "--db", url)
    assert code == 0 and err == []
    assert len(samples["collbench_bus_bandwidth_bytes_per_second"]) == len(healthy) == 2
    for size, figures in healthy.items():
        centre = median(figures)
        mad = median(abs(f - centre) for f in figures)
        assert mad > 0
        assert _value(samples["collbench_bus_bandwidth_baseline_runs"], size) == len(HEALTHY)
        assert _value(samples[BASELINE[1]], size) == pytest.approx(centre * 1e9)
        assert _value(samples[BASELINE[2]], size) == pytest.approx(mad * 1e9)
        busbw = _value(samples["collbench_bus_bandwidth_bytes_per_second"], size)
        assert busbw < centre * 1e9 - 3 * mad * 1e9, "the slowed run is below its baseline by more than 3 MAD"
    labels = [line.split("{", 1)[1].split("}")[0] for line in samples["collbench_bus_bandwidth_bytes_per_second"]]
    for name in BASELINE:
        assert sorted(line.split("{", 1)[1].split("}")[0] for line in samples[name]) == sorted(labels), name


def test_a_run_of_a_set_with_no_past_says_zero_runs_and_no_median(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url, _ = _history(tmp_path)
    run = synthetic.sweep_run(tmp_path / "runs", ranks=3)  # 3 ranks: no run of the history is comparable
    code, samples, err = _export(capsys, str(run.path), "--db", url)
    assert code == 0 and err == []
    assert [line.rsplit(" ", 1)[1] for line in samples["collbench_bus_bandwidth_baseline_runs"]] == ["0.0", "0.0"]
    assert BASELINE[1] not in samples and BASELINE[2] not in samples


def test_the_run_s_own_history_url_is_used_and_no_history_leaves_the_series_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url, _ = _history(tmp_path)
    run = synthetic.sweep_run(tmp_path / "runs")
    cfg = load_config(
        None, ["bench.ops=[all_reduce]", "bench.min_bytes=1K", "bench.max_bytes=4K", f"history.url={url}"]
    )
    run.config_file.write_text(to_yaml(cfg))
    code, samples, err = _export(capsys, str(run.path))
    assert code == 0 and err == []
    assert [line.rsplit(" ", 1)[1] for line in samples[BASELINE[0]]] == [f"{len(HEALTHY)}.0"] * 2
    code, samples, err = _export(capsys, str(run.path), "--no-history", "--cluster", "lab")
    assert code == 0 and err == []
    assert not set(BASELINE) & set(samples)
    assert "collbench_bus_bandwidth_bytes_per_second" in samples


def _no_baseline(run: RunDir, capsys: pytest.CaptureFixture[str], url: str) -> str:
    code, samples, err = _export(capsys, str(run.path), "--db", url)
    assert code == 0
    assert "collbench_bus_bandwidth_bytes_per_second" in samples and not set(BASELINE) & set(samples)
    assert len(err) == 1, err
    assert err[0].startswith("collbench: export prometheus: exported without the history's baseline series: ")
    return err[0]


def test_a_missing_history_is_said_in_one_line_and_not_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = synthetic.sweep_run(tmp_path / "runs")
    missing = tmp_path / "no-such" / "history.sqlite"
    line = _no_baseline(run, capsys, f"sqlite:///{missing}")
    assert str(missing) in line
    assert not missing.exists() and not missing.parent.exists()
    missing.parent.mkdir()
    assert _no_baseline(run, capsys, f"sqlite:///{missing}")
    assert list(missing.parent.iterdir()) == [], "a reader never creates a history"


def test_a_history_that_does_not_answer_is_said_once_for_a_whole_sweep(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sweep = synthetic.scale_sweep(tmp_path / "runs")
    code, samples, err = _export(capsys, str(sweep.path), "--db", "postgresql://nobody@127.0.0.1:1/none")
    assert code == 0 and len(samples["collbench_run_success"]) == 2
    assert not set(BASELINE) & set(samples)
    assert len(err) == 1 and "127.0.0.1" in err[0], err


def test_db_and_no_history_are_one_or_the_other(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = synthetic.sweep_run(tmp_path / "runs")
    with pytest.raises(SystemExit) as exited:
        main(["export", "prometheus", str(run.path), "--db", "sqlite:///x.sqlite", "--no-history"])
    assert exited.value.code == 2
    assert "not allowed with" in capsys.readouterr().err


def test_the_default_history_is_used_when_there_and_its_absence_is_no_news(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    default = tmp_path / "data" / "collbench" / "history.sqlite"
    run = synthetic.sweep_run(tmp_path / "runs")
    code, samples, err = _export(capsys, str(run.path))
    assert code == 0 and err == [] and not set(BASELINE) & set(samples), "nothing recorded yet: nothing to say"
    assert not default.exists() and not default.parent.exists()
    default.parent.mkdir(parents=True)
    _history(tmp_path)
    (tmp_path / "history.sqlite").rename(default)
    code, samples, err = _export(capsys, str(run.path))
    assert code == 0 and err == []
    assert [line.rsplit(" ", 1)[1] for line in samples[BASELINE[0]]] == [f"{len(HEALTHY)}.0"] * 2


DRIFT = (
    "collbench_node_level_bytes_per_second",
    "collbench_node_baseline_median_bytes_per_second",
    "collbench_node_drift_mads",
)


def _host_value(samples: list[str], host: str) -> float:
    line = next(s for s in samples if f'hostname="{host}"' in s)
    return float(line.rsplit(" ", 1)[1])


def test_an_isolate_run_carries_each_node_s_drift_from_its_own_past(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A node slowed a little more in each run, above isolate's fixed tolerance (no verdict names it), is
    more than 3 MAD below its own past in the export, recorded or not; its healthy neighbours are not."""
    url = f"sqlite:///{tmp_path / 'history.sqlite'}"
    with open_history(url, say=lambda _line: None) as history:
        for factors, noise in [({}, n) for n in (1.0, 1.004, 0.996, 1.002, 0.998)] + [({"n3": 0.97}, 1.001)]:
            assert record_run(history, slowed_isolate_run(tmp_path / "past", factors, noise))
    run = slowed_isolate_run(tmp_path / "runs", {"n3": 0.93}, 1.002)
    code, before, err = _export(capsys, str(run.path), "--db", url)
    assert code == 0 and err == []
    assert before["collbench_isolate_bad_found"][0].endswith(" 0.0"), "no verdict names n3: above 0.85"
    hosts = [f"n{node}" for node in range(1, NODES + 1)]
    assert sorted(_host_value(before[DRIFT[0]], host) for host in hosts)[0] == _host_value(before[DRIFT[0]], "n3")
    assert _host_value(before[DRIFT[2]], "n3") > 3
    assert all(abs(_host_value(before[DRIFT[2]], host)) < 1 for host in hosts if host != "n3")
    with open_history(url) as history:
        assert record_run(history, run)
        drift = node_drift(history, "n3")
    assert drift is not None and drift.latest.run_id == run.run_id and drift.drifted
    code, after, err = _export(capsys, str(run.path), "--db", url)
    assert code == 0 and err == []
    for name in DRIFT:
        assert after[name] == before[name], "recorded or not, the run is held against the runs before it"
    assert _host_value(after[DRIFT[2]], "n3") == pytest.approx(drift.mads_below)
    assert _host_value(after[DRIFT[1]], "n3") == pytest.approx(drift.median * 1e9)
    assert _host_value(after[DRIFT[0]], "n3") == pytest.approx(drift.latest.busbw * 1e9)


def test_a_sweep_run_has_no_node_series_and_a_first_isolate_run_has_only_its_levels(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url, _ = _history(tmp_path)
    code, samples, _ = _export(capsys, str(synthetic.sweep_run(tmp_path / "runs").path), "--db", url)
    assert code == 0 and not set(DRIFT) & set(samples)
    code, samples, err = _export(capsys, str(slowed_isolate_run(tmp_path / "iso").path), "--db", url)
    assert code == 0 and err == []
    assert len(samples[DRIFT[0]]) == NODES and DRIFT[1] not in samples and DRIFT[2] not in samples
