"""Recording runs and reading them back, on SQLite and PostgreSQL alike (the history_url fixture)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import func, select, update

from jobs.config.model import Config, load_config
from jobs.history import schema
from jobs.history.database import History, open_history, resolve_history_url
from jobs.history.gather import gather, rank0_env
from jobs.history.hook import record_ended_run
from jobs.history.ingest import ingest, record_run
from jobs.history.node_record import node_record
from jobs.history.queries import Filters, baseline, list_runs, trend
from jobs.imports.read import read_outputs
from jobs.launchers.imported import import_run
from jobs.rundir.layout import RunDir
from jobs.rundir.records.attempts import Attempt, Attempts
from jobs.rundir.records.config import load_run_config
from tests.jobs.rundir import synthetic

IMPORTS = Path(__file__).parents[1] / "imports" / "logs"


def _count(history: History, table: str) -> int:
    with history.engine.connect() as connection:
        return int(connection.execute(select(func.count()).select_from(schema.metadata.tables[table])).scalar_one())


def test_the_migrations_build_exactly_the_schema_the_queries_use(history_url: str) -> None:
    history = open_history(history_url)
    with history.engine.connect() as connection:
        differences = compare_metadata(MigrationContext.configure(connection), schema.metadata)
    assert differences == []


def test_ingesting_twice_adds_nothing_and_keeps_sweeps_and_isolate_verdicts(history_url: str, tmp_path: Path) -> None:
    out = tmp_path / "runs"
    plain = synthetic.sweep_run(out)
    sweep = synthetic.scale_sweep(out / "sweeps", counts=(1, 2))
    isolate = synthetic.isolate_run(out)
    history = open_history(history_url)
    first = ingest(history, [sweep.path, out])
    assert sorted(first.recorded) == sorted([plain.run_id, isolate.run_id, *_sweep_run_ids(sweep.path)])
    counts = {table: _count(history, table) for table in schema.metadata.tables}
    again = ingest(history, [out, sweep.path])
    assert again.recorded == [] and len(again.already) == 4
    assert {table: _count(history, table) for table in schema.metadata.tables} == counts
    assert counts["sweeps"] == 1 and counts["results"] >= 2 * len(synthetic.SIZES)
    (link,) = node_record(history, "n2")
    assert link.what == "isolate link" and "n2-n3" in link.detail


def _sweep_run_ids(sweep: Path) -> list[str]:
    return [Path(e["run_dir"]).name for e in json.loads((sweep / "sweep.json").read_text())["entries"]]


def test_a_later_attempt_replaces_the_record_of_an_earlier_one(history_url: str, tmp_path: Path) -> None:
    run = synthetic.sweep_run(tmp_path)
    history = open_history(history_url)
    assert record_run(history, run)
    assert not record_run(history, run)
    _write_attempts(run)  # Slurm requeued the job: attempt 1 is now the top level
    assert record_run(history, run)
    (row,) = list_runs(history, Filters())
    assert row.attempt == 1 and _count(history, "runs") == 1 and _count(history, "attempts") == 2
    assert _count(history, "results") == len(synthetic.SIZES)


def _write_attempts(run: RunDir) -> None:
    from jobs.rundir.attempts import attempts_file
    from jobs.rundir.records.attempts import ATTEMPTS

    attempts = [Attempt(number=0, nodes="vm", started=1.0), Attempt(number=1, nodes="vm", started=2.0)]
    ATTEMPTS.write(attempts_file(run), Attempts(attempts=attempts))


def test_list_filters_trend_baseline_and_too_little_history(history_url: str, tmp_path: Path) -> None:
    runs = [synthetic.sweep_run(tmp_path, slower=s) for s in (1.0, 1.1, 0.9, 1.0, 3.0)]
    history = open_history(history_url)
    for offset, run in enumerate(runs):
        record_run(history, run)
        with history.engine.begin() as connection:  # five nights, one a night
            night = update(schema.runs).where(schema.runs.c.run_id == run.run_id)
            connection.execute(night.values(started=1e9 + offset * 86400))
    assert len(list_runs(history, Filters(op="all_reduce"))) == 5
    assert list_runs(history, Filters(op="broadcast")) == []
    assert [r.run_id for r in list_runs(history, Filters(since=1e9 + 3 * 86400))] == [runs[4].run_id, runs[3].run_id]
    config = list_runs(history, Filters())[0].config
    assert len(list_runs(history, Filters(config=config[:4], nodes=1, cluster="local", outcome="passed"))) == 5
    points = trend(history, "all_reduce", synthetic.SIZES[-1], Filters())
    assert [p.run_id for p in points] == [r.run_id for r in runs]
    assert points[-1].value < 0.5 * points[0].value  # the slow night shows
    base = baseline(points[:-1])
    assert base is not None and base.runs == [r.run_id for r in runs[:-1]]
    values = [p.value for p in points[:-1]]
    assert base.median == statistics.median(values)
    assert base.mad == statistics.median(abs(v - base.median) for v in values) > 0
    assert baseline(points[:2]) is None


def test_an_unreachable_history_costs_one_line_and_ingest_catches_up(history_url: str, tmp_path: Path) -> None:
    run = synthetic.sweep_run(tmp_path, ranks=2)
    config = run.config_file.read_text()
    run.config_file.write_text(config.replace("url: ''", f"url: postgresql://nobody@/x?host={tmp_path}/no-server"))
    said: list[str] = []
    assert not record_ended_run(run, said.append)
    assert len(said) == 1 and run.run_id in said[0] and "history ingest" in said[0]
    history = open_history(history_url)
    assert ingest(history, [tmp_path]).recorded == [run.run_id]


def test_one_resolver_names_the_history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))

    def never() -> Config:
        raise AssertionError("the config is loaded only when no URL was given")

    assert resolve_history_url("sqlite:///x.sqlite", never) == "sqlite:///x.sqlite"
    team = load_config(None, ["history.url=postgresql://me@db/h"])
    assert resolve_history_url(None, team) == resolve_history_url(None, lambda: team) == "postgresql://me@db/h"
    default = f"sqlite:///{tmp_path / 'collbench' / 'history.sqlite'}"
    assert resolve_history_url(None, load_config(None, [])) == resolve_history_url("") == default
    with open_history("") as history:  # closed at the block's end
        assert history.where.startswith("sqlite") and history.where.endswith(f":///{default[len('sqlite:///') :]}")
        assert list_runs(history, Filters()) == []


def test_an_imported_run_is_labelled_from_what_its_files_say_and_unknown_stays_unknown(tmp_path: Path) -> None:
    source = IMPORTS / "v3-all_gather.json"
    run = import_run(read_outputs([source]), str(tmp_path), [str(source)]).run
    said = run.read_meta().imported_as
    assert said is not None
    platform = ("backend", "device", "nccl_version", "cuda_version", "torch_version")
    recorded = gather(run).run
    assert [recorded[key] for key in platform] == [getattr(said, key) for key in platform]
    assert recorded["nccl_version"] == "2.27.3" and recorded["torch_version"] == "unknown"
    run.update_meta(imported_as=dict.fromkeys(platform, "unknown"))  # files that say nothing
    recorded = gather(run).run
    assert [recorded[key] for key in platform] == ["unknown"] * 5, "never the config's nccl on cuda"
    run.update_meta(imported_as=None)  # imported before run.json said what the files say
    recorded = gather(run).run
    cfg, env = load_run_config(run), rank0_env(run)
    assert (recorded["backend"], recorded["device"]) == (cfg.backend, cfg.device)
    assert (recorded["torch_version"], recorded["nccl_version"]) == (env["torch"], env["nccl"])


def test_a_run_collbench_ran_is_labelled_from_its_config_and_rank_0_s_environment(tmp_path: Path) -> None:
    recorded = gather(synthetic.sweep_run(tmp_path)).run
    assert (recorded["backend"], recorded["device"], recorded["torch_version"]) == ("gloo", "cpu", "2.13.0")
