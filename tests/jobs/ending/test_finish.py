"""A run's end on the launcher's side (jobs.ending.finish.finish_run, as jobs.launchers.run_end.end_run calls
it): the final files, the history record and the exports, fed by one read of the run; at thousands of ranks
each read takes seconds. Rank 0's end (jobs.ending.summary.record_summary) writes the final files alone."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import collectives.results
import jobs.ending.exports
from jobs.config.model import load_config, to_yaml
from jobs.ending.finish import finish_run
from jobs.ending.summary import record_summary
from jobs.history.database import open_history
from jobs.history.queries import Filters, list_runs
from jobs.inspect.report import RunOutcome, assess
from jobs.launchers.run_end import end_run
from jobs.rundir.layout import RunDir
from tests.jobs.rundir import synthetic


def _counting_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every results line decoded, wherever from: a full read of the run decodes each line once."""
    decoded: list[str] = []
    real = collectives.results._parse_line

    def counted(line: bytes, where: str) -> Any:
        decoded.append(where)
        return real(line, where)

    monkeypatch.setattr(collectives.results, "_parse_line", counted)
    return decoded


def _lines(run: RunDir) -> list[str]:
    return [f"{path}:{n}" for path in sorted(run.path.glob("results/rank-*.jsonl")) for n in (1, 2)]


def _ended_run(tmp_path: Path) -> tuple[RunDir, str, Path]:
    run = synthetic.sweep_run(tmp_path / "runs")
    url, textfile = f"sqlite:///{tmp_path / 'history.sqlite'}", tmp_path / "collbench.prom"
    words = ["ranks=2", "bench.ops=[all_reduce]", "bench.min_bytes=1K", "bench.max_bytes=4K", f"history.url={url}",
             f"exports.prometheus_textfile={textfile}"]  # fmt: skip
    run.config_file.write_text(to_yaml(load_config(None, words)))
    return run, url, textfile


@pytest.mark.parametrize("rank0_wrote_them", [False, True], ids=["nobody wrote the final files", "rank 0 did"])
def test_a_run_s_end_reads_the_run_once_for_its_files_history_and_exports(
    rank0_wrote_them: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run, url, textfile = _ended_run(tmp_path)
    if rank0_wrote_them:
        record_summary(run, assess(run))
    reads = _counting_reads(monkeypatch)
    end_run(run)
    assert sorted(reads) == _lines(run), "one read feeds the summary, the history's record and the textfile"
    assert run.summary_file.is_file() and run.table_file.is_file()
    with open_history(url) as history:
        [recorded] = list_runs(history, Filters())
    assert recorded.run_id == run.run_id
    assert f'run_id="{run.run_id}"' in textfile.read_text()


def test_a_run_s_end_reads_nothing_when_nothing_needs_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = synthetic.sweep_run(tmp_path / "runs")
    words = ["ranks=2", "bench.ops=[all_reduce]", "bench.min_bytes=1K", "bench.max_bytes=4K", "history.record=false"]
    run.config_file.write_text(to_yaml(load_config(None, words)))
    record_summary(run, assess(run))
    reads = _counting_reads(monkeypatch)
    end_run(run)
    assert reads == [], "rank 0 wrote the final files, and neither a history nor an export asks for the run"


def test_rank_0_s_end_writes_the_final_files_and_neither_records_nor_exports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rank 0 may not reach the database (and never loads its driver): its end is the final files alone."""
    run, url, textfile = _ended_run(tmp_path)
    exported: list[str] = []
    monkeypatch.setattr(jobs.ending.exports, "export_ended_run", lambda run, **_: exported.append(run.run_id))
    from jobs.runtime import rank_job  # torch: only for this test

    rank_job._record_summary(run, world_size=2)
    assert run.summary_file.is_file() and run.table_file.is_file()
    assert exported == [] and not textfile.exists()
    assert not Path(url.removeprefix("sqlite:///")).exists(), "no history was opened"


def test_finish_run_records_through_the_recorder_it_is_handed(tmp_path: Path) -> None:
    """jobs.ending sits below jobs.history: the record is injected, and given the one shared read."""
    run, _, textfile = _ended_run(tmp_path)
    recorded: list[str] = []

    def record(ended: RunDir, *, outcome_of: Callable[[], RunOutcome]) -> bool:
        recorded.append(f"{ended.run_id} {outcome_of().passed}")
        return True

    finish_run(run, record=record)
    assert recorded == [f"{run.run_id} True"]
    assert run.summary_file.is_file() and textfile.is_file()
