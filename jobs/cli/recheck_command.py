"""`collbench recheck`: check again the nodes collbench itself drained, and hand back those that pass. Slurm
allocates no drained node, so they are held in a maintenance reservation with an idle partner, resumed into
it (no user's job can land on them there), checked together (`collbench check --apply` in an allocation of
the reservation: a node that fails is drained again with its new reason), and the reservation released.
Only nodes whose drain reason carries collbench's mark are touched (LBNL NHC's rule); the rest are named
and left."""

from __future__ import annotations

import argparse
import getpass
import re
import subprocess
import sys
import time
from dataclasses import dataclass

from jobs.cli.exit_codes import EXIT_CANNOT_RUN, EXIT_FAILED, EXIT_OK
from jobs.config.model import Config, ConfigError, load_config
from jobs.isolate.reasons import OwnDrain, own_drain
from jobs.rundir.records.drains import DrainRecord, DrainStep
from slurm.evidence import NodeState
from slurm.hostlist import BadHostlist, collect_hostlist, expand_hostlist
from slurm.nodes import (
    NodesUnavailable,
    drain_argv,
    node_states,
    release_argv,
    reservation_argv,
    resume_argv,
    run_scontrol,
)
from slurm.steps import cluster_name, command_text

EVERY_NODE = "ALL"
PARTNERS = 2
IMMEDIATE_S = 120
"""How long the check's allocation may wait for its nodes (a partner that turned busy since it was picked):
past it salloc gives up, and the nodes are drained again as they were."""
CHECK_SLACK_MIN = 5
"""The check's allocation: its budget in minutes, plus this for starting the step and the interpreters."""


@dataclass(frozen=True, slots=True)
class Plan:
    targets: dict[str, OwnDrain]
    """Each node drained by collbench, and what its reason says."""
    reasons: dict[str, str]
    partners: list[str]
    left: list[str]
    """One line per node named that is not collbench's to re-check."""
    reservation: str


def add_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    recheck = commands.add_parser(
        "recheck",
        help="check again the nodes collbench drained (held in a maintenance reservation with an idle partner) "
        "and resume those that pass; never a node someone else drained",
        description="Exit status: 0 every node re-checked passed and was resumed (or none to re-check), 1 a node "
        f"failed again (drained again with its new reason), 2 bad input, 3 Slurm unavailable, {EXIT_CANNOT_RUN} "
        "the check could not run (the nodes drained again as they were).",
    )
    recheck.add_argument(
        "nodes", metavar="HOSTLIST", help=f"the nodes to re-check (a Slurm hostlist), or {EVERY_NODE}: every node "
        "of the partition that collbench drained",
    )  # fmt: skip
    recheck.add_argument("words", nargs="*", metavar="KEY=VALUE", help="config overrides for the check")
    recheck.add_argument("--config", metavar="NAME_OR_PATH", default=None, help="a Slurm config (name or path)")
    recheck.add_argument(
        "--partner", metavar="HOSTLIST", help="the healthy nodes to pair them with (default: --partners idle ones)"
    )
    recheck.add_argument(
        "--partners",
        type=int,
        default=PARTNERS,
        metavar="N",
        help=f"how many idle nodes to pair them with (default {PARTNERS}: with one node re-checked, three nodes "
        "tell a slow one from its partners by their own median; a level from the history judges any number)",
    )
    recheck.add_argument("--dry-run", action="store_true", help="print the scontrol and salloc lines; run nothing")
    recheck.set_defaults(handler=cmd_recheck)


def cmd_recheck(args: argparse.Namespace) -> int:
    loose = [word for word in args.words if "=" not in word]
    if loose:
        raise ConfigError(f"recheck: {loose[0]!r} is not KEY=VALUE")
    cfg = load_config(args.config, [*args.words, "launcher=slurm"])
    partition = cfg.slurm.partition
    try:
        states = node_states(_named(args.nodes, partition))
        if args.partners < 1:
            raise ConfigError(f"recheck: --partners {args.partners}: must be 1 or more")
        plan = _plan(states, args.nodes, _partners(args.partner), args.partners, partition)
    except NodesUnavailable as error:
        raise ConfigError(f"recheck: {error}") from None
    for line in plan.left:
        print(f"# leave {line}")
    if not plan.targets:
        print(f"# nothing to re-check: no node of {args.nodes} is drained by collbench")
        return EXIT_OK
    reserve = reservation_argv(plan.reservation, [*plan.targets, *plan.partners], getpass.getuser(),
                               cfg.drain.reservation_minutes)  # fmt: skip
    check = _check_argv(cfg, args, plan)
    if args.dry_run:
        for argv in (reserve, resume_argv(plan.targets), check, release_argv(plan.reservation)):
            print(command_text(argv))
        return EXIT_OK
    return _recheck(cfg, plan, reserve, check)


def _named(nodes: str, partition: str) -> list[str]:
    if nodes == EVERY_NODE:
        return _partition_nodes(partition)
    try:
        return expand_hostlist(nodes)
    except BadHostlist as error:
        raise ConfigError(
            f"recheck: {nodes!r} is not a hostlist ({error}); allowed: a Slurm hostlist or {EVERY_NODE}"
        ) from None


def _partition_nodes(partition: str) -> list[str]:
    where = ["-p", partition] if partition else []
    done = subprocess.run(["sinfo", "-h", "-N", *where, "-o", "%N"], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise NodesUnavailable(f"sinfo failed: {done.stderr.strip()}")
    return sorted(set(done.stdout.split()))


def _partners(given: str | None) -> list[str]:
    if not given:
        return []
    try:
        return expand_hostlist(given)
    except BadHostlist as error:
        raise ConfigError(f"recheck: --partner {given!r} is not a hostlist ({error})") from None


def _plan(states: dict[str, NodeState], nodes: str, partners: list[str], count: int, partition: str) -> Plan:
    named = _named(nodes, partition) if nodes != EVERY_NODE else sorted(states)
    targets: dict[str, OwnDrain] = {}
    left = []
    for host in named:
        state = states.get(host)
        own = own_drain(state.reason) if state is not None else None
        if state is None:
            left.append(f"{host}: Slurm does not know it")
        elif not state.held:
            if nodes != EVERY_NODE:
                left.append(f"{host}: {state.words}, not drained: nothing to re-check")
        elif own is None:
            left.append(
                f"{host}: {state.words} by someone else ({state.reason or 'no reason'}): only its owner resumes it"
            )
        else:
            targets[host] = own
    chosen = partners or (_idle_partners(partition, targets, count) if targets else [])
    if targets and not chosen:
        raise ConfigError(
            f"recheck: no idle node in partition {partition or '(default)'} to pair with; name one with --partner"
        )
    reasons = {host: states[host].reason for host in targets}
    return Plan(targets, reasons, chosen, left, f"collbench-recheck-{int(time.time())}")


def _idle_partners(partition: str, targets: dict[str, OwnDrain], count: int) -> list[str]:
    where = ["-p", partition] if partition else []
    argv = ["sinfo", "-h", "-N", *where, "-t", "idle", "-o", "%N"]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    idle = sorted(set(done.stdout.split()) - set(targets)) if done.returncode == 0 else []
    return idle[:count]


def _check_argv(cfg: Config, args: argparse.Namespace, plan: Plan) -> list[str]:
    hosts = [*plan.targets, *plan.partners]
    minutes = int(cfg.check.budget_s // 60) + CHECK_SLACK_MIN
    where = [f"--partition={cfg.slurm.partition}"] if cfg.slurm.partition else []
    config = ["--config", args.config] if args.config else []
    return [
        "salloc", f"--reservation={plan.reservation}", *where, f"--nodelist={collect_hostlist(hosts)}",
        f"--nodes={len(hosts)}", f"--time={minutes}", f"--immediate={IMMEDIATE_S}", "--job-name=collbench-recheck",
        sys.executable, "-m", "jobs.cli", "check", *config, *args.words, "drain.apply=true",
    ]  # fmt: skip


def _recheck(cfg: Config, plan: Plan, reserve: list[str], check: list[str]) -> int:
    error = run_scontrol(reserve)
    if error:
        print(f"collbench: recheck: the reservation was refused ({error}); nothing resumed", file=sys.stderr)
        return EXIT_FAILED
    try:
        error = run_scontrol(resume_argv(plan.targets))
        if error:
            print(f"collbench: recheck: Slurm refused the resume ({error}); nothing re-checked", file=sys.stderr)
            return EXIT_FAILED
        print(
            f"# {collect_hostlist(plan.targets)} resumed into reservation {plan.reservation} with "
            f"{collect_hostlist(plan.partners)}",
            flush=True,
        )
        done = subprocess.run(check, check=False, capture_output=True, text=True)
        sys.stdout.write(done.stdout)
        sys.stderr.write(done.stderr)
        return _settle(cfg, plan, done.returncode, _run_id(done.stdout))
    finally:
        run_scontrol(release_argv(plan.reservation))


def _run_id(stdout: str) -> str:
    found = re.search(r"^# collbench check (\S+):", stdout, re.M)
    return found.group(1) if found else ""


def _settle(cfg: Config, plan: Plan, code: int, run_id: str) -> int:
    """After the check: a node it drained again stays so; a node in service passed and is handed back (the
    resume recorded); a check that could not run puts every node back as it was."""
    states = node_states(list(plan.targets))
    steps = []
    for host, own in plan.targets.items():
        state = states.get(host)
        if code not in (EXIT_OK, EXIT_FAILED):
            error = run_scontrol(drain_argv([host], plan.reasons[host]))
            why = "recheck could not run its check: drained again as it was"
            steps.append(DrainStep(host, "drain", list(own.codes), plan.reasons[host], why, not error, error))
        elif state is not None and not state.held:
            why = f"recheck passed it (drained by collbench for {','.join(own.codes)} in {own.run_id})"
            steps.append(DrainStep(host, "resume", list(own.codes), plan.reasons[host], why, True))
            print(f"RESUMED {host}: {why}")
    if steps:
        _record(cfg, DrainRecord(run_id=run_id or "recheck", task="check", at=time.time(), steps=steps))
    if code not in (EXIT_OK, EXIT_FAILED):
        print(f"collbench: recheck: the check could not run (exit {code}); the nodes drained again as they were",
              file=sys.stderr)  # fmt: skip
        return EXIT_CANNOT_RUN
    return code


def _record(cfg: Config, record: DrainRecord) -> None:
    if cfg.history.record:
        from jobs.history.node_actions import record_actions  # SQLAlchemy only where it is asked

        record_actions(cfg, cfg.history.cluster or cluster_name(), record)
