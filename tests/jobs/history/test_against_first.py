"""--against-history says first what it cannot judge (issue 40): the rows with too little history come before
the table's header on stdout and before any regression on stderr."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import delete, select

from jobs.cli.main import main
from jobs.history import schema
from jobs.history.database import open_history
from jobs.history.ingest import record_run
from tests.jobs.rundir import synthetic

THIN = (
    "too little history to judge 1 of 2 row(s): at most 2 healthy run(s) before it with the same cluster, config "
    "fingerprint, node count and world size, at least 3 needed; not judged"
)


def test_rows_too_little_history_judges_are_said_before_the_table_and_the_regressions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'history.sqlite'}"
    with open_history(url) as history:
        past = [synthetic.sweep_run(tmp_path / "past", slower=s) for s in (1.0, 1.02, 0.98, 1.0)]
        for run in past:
            assert record_run(history, run)
        with history.engine.begin() as connection:  # the two oldest runs measured 1 KiB only
            ids = select(schema.runs.c.id).where(schema.runs.c.run_id.in_([r.run_id for r in past[:2]]))
            results = schema.results.c
            connection.execute(delete(schema.results).where(results.run.in_(ids), results.requested_size == 4096))
    slow = synthetic.sweep_run(tmp_path / "new", slower=2.0)
    assert main(["report", str(slow.path), "--against-history", "--db", url]) == 1
    out, err = capsys.readouterr()
    held = out.splitlines()[out.splitlines().index(f"# {THIN}") :]
    assert held[1].startswith(f"# {slow.run_id} against the history"), "the thin rows are said before the header"
    said = [line for line in err.splitlines() if line.startswith("collbench: ")]
    thin = said.index(f"collbench: history: {THIN}")
    regressions = [i for i, line in enumerate(said) if line.startswith("collbench: REGRESSION against the history")]
    assert len(regressions) == 1 and thin < regressions[0], "what cannot be judged first, then the regression"
