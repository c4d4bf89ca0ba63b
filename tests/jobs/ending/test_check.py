"""collbench check's files (jobs.ending.check_files): written into the run's check/ by the run's end, with the
isolate verdict and as often (once), and the same files wherever the command copies them (--out)."""

from __future__ import annotations

from pathlib import Path

from jobs.config.model import load_config, to_yaml
from jobs.ending.check_files import FILES, write_check_files
from jobs.ending.finish import finish_run
from jobs.inspect.check_verdict import assess_check
from jobs.inspect.report import assess
from jobs.rundir.layout import RunDir
from tests.jobs.rundir.files import fingerprint
from tests.jobs.rundir.synthetic import isolate_run


def _check_run(tmp_path: Path) -> RunDir:
    run = isolate_run(tmp_path / "runs")
    cfg = load_config("testcluster", ["task=isolate", "nodes=4", "isolate.mode=check", "history.record=false"])
    run.config_file.write_text(to_yaml(cfg))
    run.update_meta(task=cfg.task)
    return run


def test_a_check_run_s_end_writes_its_check_files_once_beside_the_isolate_verdict(tmp_path: Path) -> None:
    run = _check_run(tmp_path)
    finish_run(run, job_over=True)
    assert run.isolate_verdict.is_file()
    assert sorted(p.name for p in run.check_dir.iterdir()) == sorted(FILES)
    written = fingerprint(run.path)
    out = tmp_path / "out"
    write_check_files(assess_check(run, assess(run)), out)
    assert fingerprint(out) == fingerprint(run.check_dir), "the command's --out copy is the same verdict"
    finish_run(run, job_over=True)
    assert fingerprint(run.path) == written, "the run's end writes them once"


def test_an_isolate_run_that_is_no_check_gets_no_check_files(tmp_path: Path) -> None:
    run = isolate_run(tmp_path / "runs")
    finish_run(run, job_over=True)
    assert run.isolate_verdict.is_file() and not run.check_dir.exists()
