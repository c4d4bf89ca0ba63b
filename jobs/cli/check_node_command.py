"""`collbench check --node`: one node on its own, for a Slurm prolog or HealthCheckProgram. Its local ranks
(one per GPU; on the CPU check.local_ranks) run all_reduce over the loopback, no network, with the local
launcher, within check.local_budget_s; the answer is one line a drain reason can carry. It runs in a scratch
directory removed when it ends (check.node_keep_run keeps it under output_dir), and is recorded in the
history as a check with its verdict (jobs.history.node_check), as check.node_record says."""

from __future__ import annotations

import shutil
import socket
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING

from jobs.cli.exit_codes import EXIT_CANNOT_RUN
from jobs.config.model import Config, derive, load_config
from jobs.inspect.report import OutcomeOnce, RunOutcome
from jobs.isolate.check_plan import check_timing
from jobs.launchers.local import stdio_redirected_to
from jobs.launchers.registry import launcher_for
from jobs.rundir.layout import RunDir

if TYPE_CHECKING:
    from jobs.history.gather import RunRecord
    from jobs.history.node_check import HostCheck, Said
    from jobs.isolate.reasons import Code

CANCEL_WAIT_S = 15.0
COLLECTIVE_SHARE = 0.3
"""Of the budget, the longest wait for a peer: a hung rank is named by the one that gave up on it, seconds
before the budget ends even when the interpreters took seconds to start."""
END_WAIT_S = 1.5
"""Of the budget, what the verdict keeps for itself: the ranks are stopped this long before it ends."""
EXIT_OF: dict[Said, int] = {"OK": 0, "FAIL": 1, "UNKNOWN": EXIT_CANNOT_RUN}
SCRATCH_PREFIX = "collbench-check-node-"


def node_config(name: str | None, words: list[str]) -> Config:
    """The user's config, as one local sweep: all_reduce at check.sizes, bounded by the node budget."""
    settings = load_config(name, [word for word in words if word.startswith(("check.", "backend=", "device="))]).check
    cfg = load_config(name, [*words, "launcher=local", "nodes=1", "task=check-node", f"ranks={settings.local_ranks}"])
    sizes = list(settings.local_sizes)
    timing = check_timing(cfg.backend, settings.tolerance)  # on NCCL: the connections in the warm-up, a floor
    bench = replace(
        cfg.bench,
        ops=["all_reduce"],
        sizes=sizes,
        min_bytes=min(sizes),
        max_bytes=max(sizes),
        warmup_iters=timing.warmup_iters,
        min_iters=timing.min_iters,
        max_iters=max(cfg.bench.max_iters, timing.min_iters),  # check.tolerance sets the floor, not the config
        time_budget_ms=float(round(min(500.0, settings.local_budget_s * 100 / len(sizes)))),
    )
    timeouts = replace(cfg.timeouts, collective_s=max(1.0, settings.local_budget_s * COLLECTIVE_SHARE))
    loopback = {"GLOO_SOCKET_IFNAME": "lo"} if cfg.backend == "gloo" else {}
    return derive(cfg, bench=bench, timeouts=timeouts, env={**cfg.env, **loopback})


def check_node(
    name: str | None, words: list[str], dry_run: bool = False, keep_run: bool = False, show: bool = False
) -> int:
    """Check this node, print the one line, record it in the history; the exit status: 0 OK, 1 FAIL,
    EXIT_CANNOT_RUN when nothing was measured. `keep_run` (or check.node_keep_run): keep the run directory;
    `show` (--drain): print the drain or resume line; drain.apply: run it."""
    started = time.monotonic()
    host = socket.gethostname()
    cfg = node_config(name, words)
    records = _records(cfg)
    if dry_run:
        print(launcher_for(cfg).request(cfg).text, end="")
        return 0
    keep = keep_run or cfg.check.node_keep_run
    record: RunRecord | None = None
    with _run_place(cfg, keep) as output_dir:
        # the run's own end records nothing: this command records it, as the check it is
        run_cfg = derive(cfg, output_dir=output_dir, history=replace(cfg.history, record=False))
        run, ran_out = _measure(run_cfg, started)
        outcome = OutcomeOnce(run)
        said, line, code = _one_line(host, outcome(), cfg, time.monotonic() - started, ran_out)
        print(f"{line}; run kept in {run.path}" if keep else line, flush=True)
        if records:
            from jobs.history.node_check import HostCheck

            record = _gathered(run, HostCheck(host, said, line, code), outcome)  # before the scratch goes
        if said != "UNKNOWN":
            from jobs.cli.drains import act_on_verdict
            from jobs.isolate.reasons import Finding

            findings = [Finding(host, code, line)] if code is not None else []
            act_on_verdict(cfg, run if keep else None, cfg.task, findings, [host] if said == "OK" else [], show)
    if record is not None:
        from jobs.history.node_check import HostCheck, record_node_check

        record_node_check(cfg, record, HostCheck(host, said, line, code))
    return EXIT_OF[said]


def _records(cfg: Config) -> bool:
    """Whether this check is recorded (history.record and check.node_record not never); a malformed
    history.url is bad input before anything starts, while a history that cannot be reached costs a line
    at the end and changes neither the line nor the exit status."""
    if not cfg.history.record or cfg.check.node_record == "never":
        return False
    from jobs.history.database import parse_url, resolve_history_url  # SQLAlchemy only where it is asked

    parse_url(resolve_history_url(None, cfg))
    return True


@contextmanager
def _run_place(cfg: Config, keep: bool) -> Iterator[str]:
    """Where the check's run directory is made: output_dir when it is kept; else a scratch directory of the
    system's temp dir (TMPDIR), removed when the check ends however it ends: a prolog runs for every job."""
    if keep:
        yield cfg.output_dir
        return
    scratch = tempfile.mkdtemp(prefix=SCRATCH_PREFIX)
    try:
        yield scratch
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _measure(cfg: Config, started: float) -> tuple[RunDir, bool]:
    """The local run, waited for until the budget's end less END_WAIT_S, cancelled past it: the run, and
    whether it ran out of time."""
    launcher = launcher_for(cfg)
    run = launcher.launch(cfg).run
    left = cfg.check.local_budget_s - END_WAIT_S - (time.monotonic() - started)
    with stdio_redirected_to(run.submitit_dir / "controller.log"):  # the ranks' log stays in the run
        [result] = launcher.wait([run], max(0.1, left), None)
        ran_out = result.still_running
        if ran_out:
            launcher.cancel(run)
            launcher.wait([run], CANCEL_WAIT_S, None)
    return run, ran_out


def _gathered(run: RunDir, verdict: HostCheck, outcome_of: Callable[[], RunOutcome]) -> RunRecord | None:
    """The check's history record, gathered from its run directory; None (one line said) when the run cannot
    be read: the verdict stands."""
    from jobs.history.gather import NotEnded
    from jobs.history.node_check import node_check_record
    from jobs.rundir.records.codec import RecordError

    try:
        return node_check_record(run, verdict, outcome_of)
    except (NotEnded, RecordError, OSError, ValueError) as error:
        host = verdict.host
        print(f"collbench: history: check --node of {host} not recorded: {error}", file=sys.stderr, flush=True)
        return None


def _one_line(host: str, outcome: RunOutcome, cfg: Config, took: float, ran_out: bool) -> tuple[Said, str, Code | None]:
    """OK, FAIL or UNKNOWN, the one line, and its reason code (None for OK)."""
    ranks = f"{cfg.world_size} local rank(s)"
    if ran_out:
        why = f": {outcome.problems[0]}" if outcome.problems else ""
        line = f"FAIL {host}: all_reduce over {ranks} did not finish within {cfg.check.local_budget_s:g} s{why}"
        return "FAIL", line, "node_stopped"
    if outcome.problems:
        return "FAIL", f"FAIL {host}: {outcome.problems[0]}", _failure_code(outcome)
    done = [row for row in outcome.rows if row.complete]
    if not done:
        print(f"collbench: check --node measured nothing on {host}", file=sys.stderr)
        return "UNKNOWN", f"UNKNOWN {host}: nothing measured; drain nothing for it", "not_run"
    best = max(row.busbw for row in done)
    floor = cfg.check.local_min_busbw
    if floor and best < floor:
        line = f"FAIL {host}: all_reduce over {ranks} reached {best:.3g} GB/s, under check.local_min_busbw {floor:g}"
        return "FAIL", line, "slow_node"
    return "OK", f"OK {host}: all_reduce over {ranks}, busbw {best:.3g} GB/s, {took:.1f} s", None


def _failure_code(outcome: RunOutcome) -> Code:
    """What the run itself names (a failed set-up, a fabric requirement, wrong elements), else a rank that
    stopped."""
    from jobs.inspect.findings import run_findings

    named = run_findings(outcome)
    return named[0].code if named else "node_stopped"
