"""The imported launcher's run directory (jobs/launchers/imported.py): the same files imported at once by two
processes make one run, as output_dir is locked while an import looks for an earlier one and writes; an earlier
import is found by its digest, past run directories that cannot be read. Real files, no Slurm."""

from __future__ import annotations

import fcntl
import os
import shutil
import threading
from pathlib import Path

from jobs.imports.read import read_outputs
from jobs.launchers.imported import Imported, find_imported, import_run

LOGS = Path(__file__).parents[1] / "imports" / "logs"
LOG = LOGS / "v2.17-two-runs.log"


def test_imports_at_once_wait_for_the_output_dir_and_make_one_run(tmp_path: Path) -> None:
    job = read_outputs([LOG])
    runs = tmp_path / "runs"
    runs.mkdir()
    made: list[Imported] = []
    imports = [threading.Thread(target=lambda: made.append(import_run(job, str(runs), [str(LOG)]))) for _ in "ab"]
    held = os.open(runs, os.O_RDONLY)
    try:
        fcntl.flock(held, fcntl.LOCK_EX)
        for thread in imports:
            thread.start()
        imports[0].join(0.5)
        assert all(thread.is_alive() for thread in imports) and list(runs.iterdir()) == []
    finally:
        os.close(held)
    for thread in imports:
        thread.join(30)
    assert sorted(imported.earlier for imported in made) == [False, True]
    assert made[0].run.path == made[1].run.path and list(runs.iterdir()) == [made[0].run.path]


def test_an_earlier_import_is_found_past_runs_that_cannot_be_read(tmp_path: Path) -> None:
    job = read_outputs([LOG])
    runs = tmp_path / "runs"
    written = import_run(job, str(runs), [str(LOG)]).run
    damaged = runs / "00000000-000000-imported-000000"
    shutil.copytree(written.path, damaged)
    (damaged / "run.json").write_text("{not json")
    no_config = runs / "00000000-000000-imported-000001"
    shutil.copytree(written.path, no_config)
    (no_config / "config.yaml").unlink()
    assert find_imported(runs, job.digest, ["all_reduce", "reduce_scatter"]) == written
    assert find_imported(runs, job.digest, ["all_reduce"]) is None
    assert find_imported(runs, "0" * 64, ["all_reduce", "reduce_scatter"]) is None
