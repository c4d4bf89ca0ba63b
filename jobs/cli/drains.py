"""After a verdict stands: the drain and resume steps it makes (jobs.ending.drains), printed for `--drain`, run
when drain.apply is on (drains.json written there), and recorded in the history (`history node` lists them).
No rights to drain costs one line: the verdict and the exit status stand."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from jobs.config.model import Config
from jobs.config.tasks import TaskName
from jobs.ending.drains import Acted, apply_steps, done_lines, refusal_line, step_lines, verdict_steps
from jobs.isolate.reasons import Finding
from jobs.rundir.layout import RunDir
from jobs.rundir.records.drains import DrainRecord
from slurm.runner import SlurmError
from slurm.steps import cluster_name


def act_on_verdict(
    cfg: Config,
    run: RunDir | None,
    task: TaskName,
    findings: Sequence[Finding],
    passed: Sequence[str],
    show: bool,
    run_id: str = "",
) -> Acted | None:
    """Print (`show`) or run (drain.apply) the steps the verdict makes; None when neither was asked or
    Slurm could not say the nodes' states (one line said)."""
    if not (cfg.drain.apply or show):
        return None
    run_id = run_id or (run.run_id if run is not None else "")
    try:
        steps = verdict_steps(task, findings, passed, run_id, cfg.drain.resume)
    except SlurmError as error:
        print(f"collbench: cannot read the nodes' states ({error}); nothing drained or resumed", file=sys.stderr)
        return None
    if not cfg.drain.apply:
        print("\n".join(step_lines(steps, dry_run=True)), flush=True)
        return None
    acted, record = apply_steps(steps, run, task, run_id)
    print("\n".join(done_lines(acted)), flush=True)
    if acted.refused:
        print(refusal_line(acted), file=sys.stderr, flush=True)
    if acted.steps:
        record_in_history(cfg, record)
    return acted


def record_in_history(cfg: Config, record: DrainRecord) -> None:
    """The steps in the history's node_actions (when history.record is on)."""
    if cfg.history.record:
        from jobs.history.node_actions import record_actions  # SQLAlchemy only where it is asked

        record_actions(cfg, cfg.history.cluster or cluster_name(), record)
