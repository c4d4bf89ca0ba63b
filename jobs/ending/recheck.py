"""`collbench recheck`'s work apart from its arguments: which of the named nodes collbench drained (its mark in
the drain reason: LBNL NHC's rule) and which it leaves, the idle partners they are checked with, the check in an
allocation of the maintenance reservation (slurm.maintenance holds the nodes), and each node settled after it:
drained again as it was when the check could not run, handed back when it passed. The check's run is found by
its run directory (its own output folder, named after the reservation), never by reading its output. The
history record is the caller's (contract 6)."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from jobs.config.exit_codes import EXIT_FAILED, EXIT_INCONCLUSIVE, EXIT_OK
from jobs.config.model import Config, ConfigError
from jobs.isolate.reasons import OwnDrain, own_drain
from jobs.rundir.layout import RunDir
from jobs.rundir.records.drains import DrainRecord, DrainStep
from slurm.evidence import NodeState
from slurm.hostlist import collect_hostlist
from slurm.maintenance import MaintenanceReservation, drain, idle_nodes, reserved, run_in_allocation
from slurm.nodes import node_states

IMMEDIATE_S = 120
"""How long the check's allocation may wait for its nodes (a partner that turned busy since it was picked):
past it salloc gives up, and the nodes are drained again as they were."""
CHECK_SLACK_MIN = 5
"""The check's allocation: its budget in minutes, plus this for starting the step and the interpreters."""
RAN = (EXIT_OK, EXIT_FAILED)
"""The check's exit statuses that say it ran and settled every node: all passed, or a node failed (drained)."""


@dataclass(frozen=True, slots=True)
class Plan:
    targets: dict[str, OwnDrain]
    """Each node drained by collbench, and what its reason says."""
    reasons: dict[str, str]
    partners: list[str]
    left: list[str]
    """One line per node named that is not collbench's to re-check."""
    reservation: str


@dataclass(frozen=True, slots=True)
class Settled:
    code: int
    """The check's exit status (salloc's own when it allocated nothing)."""
    ran: bool
    """The check ran and settled every node; when not, every node was drained again as it was."""
    run_id: str
    """The check's run, '' when it made none."""
    resumed: list[str]
    """One line per node handed back."""
    record: DrainRecord | None
    """What recheck did to the nodes after the check (for the history), None when nothing."""


def plan_recheck(
    states: dict[str, NodeState], named: Sequence[str], every: bool, partners: Sequence[str], count: int, partition: str
) -> Plan:
    """The nodes to re-check among `named` (`every`: the whole partition, whose nodes not drained go unsaid),
    with `partners` or `count` idle ones; ConfigError when no partner can be found."""
    targets: dict[str, OwnDrain] = {}
    left = []
    for host in named:
        state = states.get(host)
        own = own_drain(state.reason) if state is not None else None
        if state is None:
            left.append(f"{host}: Slurm does not know it")
        elif not state.out_of_service:
            if not every:
                left.append(f"{host}: {state.words}, not drained: nothing to re-check")
        elif own is None:
            left.append(
                f"{host}: {state.words} by someone else ({state.reason or 'no reason'}): only its owner resumes it"
            )
        else:
            targets[host] = own
    chosen = list(partners) or (idle_nodes(partition, targets, count) if targets else [])
    if targets and not chosen:
        raise ConfigError(
            f"recheck: no idle node in partition {partition or '(default)'} to pair with; name one with --partner"
        )
    reasons = {host: states[host].reason for host in targets}
    return Plan(targets, reasons, chosen, left, f"collbench-recheck-{int(time.time())}")


def reservation_of(plan: Plan, user: str, minutes: int) -> MaintenanceReservation:
    """The plan's nodes as slurm.maintenance holds them: for `user` alone, `minutes` at most."""
    return MaintenanceReservation(tuple(plan.targets), tuple(plan.partners), plan.reservation, user, minutes)


def check_folder(cfg: Config, reservation: MaintenanceReservation) -> Path:
    """Where the check's run directory is made: a folder of the output_dir of its own, named after the
    reservation, so that the one run in it is the check's."""
    return Path(cfg.output_dir).expanduser().absolute() / reservation.name


def check_argv(cfg: Config, config: str | None, words: Sequence[str], reservation: MaintenanceReservation) -> list[str]:
    """salloc of the reservation running `collbench check --apply` on its nodes."""
    minutes = int(cfg.check.budget_s // 60) + CHECK_SLACK_MIN
    named = ["--config", config] if config else []
    output_dir = f"output_dir={check_folder(cfg, reservation)}"
    command = [sys.executable, "-m", "jobs.cli", "check", *named, *words, output_dir, "drain.apply=true"]
    return reservation.allocation_argv(cfg.slurm.partition, minutes, IMMEDIATE_S, command)


def recheck(cfg: Config, plan: Plan, reservation: MaintenanceReservation, check: Sequence[str]) -> Settled:
    """Reserve the nodes (slurm.maintenance.Refused when Slurm refuses the reservation or the resume), run the
    check in them, settle each node, then release the reservation."""
    with reserved(reservation):
        print(f"# {reservation_text(reservation)}", flush=True)
        code = run_in_allocation(check)
        run_id = checked_run_id(check_folder(cfg, reservation))
        return settle(plan, code, run_id)


def reservation_text(reservation: MaintenanceReservation) -> str:
    return (
        f"{collect_hostlist(reservation.targets)} resumed into reservation {reservation.name} with "
        f"{collect_hostlist(reservation.partners)}"
    )


def checked_run_id(folder: Path) -> str:
    """The run id of the check's run (the one run directory in `folder`), '' when it made none."""
    runs = sorted(path for path in folder.iterdir() if RunDir(path).meta_file.is_file()) if folder.is_dir() else []
    return RunDir(runs[-1]).run_id if runs else ""


def settle(plan: Plan, code: int, run_id: str) -> Settled:
    """After the check (`run_id`: its run, '' when it made none): a node it drained again stays so; a node in
    service passed and is handed back (the resume recorded); a check that could not run puts every node back
    as it was."""
    ran = code in RAN and bool(run_id)
    states = node_states(list(plan.targets))
    steps, resumed = [], []
    for host, own in plan.targets.items():
        state = states.get(host)
        if not ran:
            error = drain([host], plan.reasons[host])
            why = (
                "recheck's check was inconclusive: drained again as it was"
                if code == EXIT_INCONCLUSIVE
                else "recheck could not run its check: drained again as it was"
            )
            steps.append(DrainStep(host, "drain", list(own.codes), plan.reasons[host], why, not error, error))
        elif state is not None and not state.out_of_service:
            why = f"recheck passed it (drained by collbench for {','.join(own.codes)} in {own.run_id})"
            steps.append(DrainStep(host, "resume", list(own.codes), plan.reasons[host], why, True))
            resumed.append(f"RESUMED {host}: {why}")
    record = DrainRecord(run_id=run_id or "recheck", task="check", at=time.time(), steps=steps) if steps else None
    return Settled(code, ran, run_id, resumed, record)
