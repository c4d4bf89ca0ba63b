"""isolate.json and isolate-matrix.csv: an isolate run's verdict (jobs.inspect.isolate_verdict), written once."""

from __future__ import annotations

import csv
import io

from jobs.ending.summary import READ_ONLY
from jobs.inspect.isolate_verdict import IsolateOutcome, matrix_rows, verdict_record
from jobs.rundir.layout import RunDir
from jobs.rundir.records.isolate import ISOLATE_VERDICT
from jobs.rundir.writing import create_exclusive, write_atomic


def record_isolate(run: RunDir, iso: IsolateOutcome, job_over: bool = False) -> bool:
    """Write isolate.json and isolate-matrix.csv once: only when the run has ended (or `job_over`, as for
    record_summary) and isolate.json does not exist yet (created exclusively: of racing writers one
    wins). True when this call wrote them; a run directory that cannot be written is left as it is
    (False). Called, like record_summary, by the first `wait` or `isolate wait` that sees the run end;
    every other read only assesses."""
    if not (iso.ended or job_over) or run.isolate_verdict.exists():
        return False
    text = io.StringIO()
    csv.writer(text).writerows(matrix_rows(iso))
    try:
        if not create_exclusive(run.isolate_verdict, ISOLATE_VERDICT.encode(verdict_record(iso)) + b"\n"):
            return False
        write_atomic(run.isolate_matrix, text.getvalue().encode())
    except OSError as error:
        if error.errno in READ_ONLY:
            return False
        raise
    return True
