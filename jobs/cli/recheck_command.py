"""`collbench recheck`: check again the nodes collbench itself drained, and hand back those that pass. Slurm
allocates no drained node, so they are put in a maintenance reservation with an idle partner, resumed into
it (no user's job can land on them there), checked together (`collbench check --apply` in an allocation of
the reservation: a node that fails is drained again with its new reason), and the reservation released.
Only nodes whose drain reason carries collbench's mark are touched (LBNL NHC's rule); the rest are named
and left."""

from __future__ import annotations

import argparse
import getpass
import sys

from jobs.cli.drains import record_in_history
from jobs.cli.exit_codes import EXIT_CANNOT_RUN, EXIT_FAILED, EXIT_INCONCLUSIVE, EXIT_OK
from jobs.config.model import Config, ConfigError, load_config
from jobs.ending.recheck import Plan, check_argv, plan_recheck, recheck, reservation_of
from slurm.hostlist import BadHostlist, expand_hostlist
from slurm.maintenance import MaintenanceReservation, Refused, partition_nodes
from slurm.nodes import node_states
from slurm.runner import SlurmFailed
from slurm.steps import command_text

EVERY_NODE = "ALL"
PARTNERS = 2


def add_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    recheck = commands.add_parser(
        "recheck",
        help="check again the nodes collbench drained (resumed into a maintenance reservation with an idle partner) "
        "and resume those that pass; never a node someone else drained",
        description="Exit status: 0 every node re-checked passed and was resumed (or none to re-check), 1 a node "
        f"failed again (drained again with its new reason), 2 bad input, 3 Slurm unavailable, {EXIT_CANNOT_RUN} "
        "the check could not run (the nodes drained again as they were).",
    )
    recheck.add_argument(
        "nodes", metavar="HOSTLIST", help=f"the nodes to re-check (a Slurm hostlist), or {EVERY_NODE}: every node "
        "of the partition that collbench drained",
    )  # fmt: skip
    recheck.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="config overrides for the check")
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
    loose = [word for word in args.overrides if "=" not in word]
    if loose:
        raise ConfigError(f"recheck: {loose[0]!r} is not KEY=VALUE")
    cfg = load_config(args.config, [*args.overrides, "launcher=slurm"])
    partition = cfg.slurm.partition
    every = args.nodes == EVERY_NODE
    try:
        named = partition_nodes(partition) if every else _hostlist(args.nodes)
        states = node_states(named)
        if args.partners < 1:
            raise ConfigError(f"recheck: --partners {args.partners}: must be 1 or more")
        named = sorted(states) if every else named
        plan = plan_recheck(states, named, every, _partners(args.partner), args.partners, partition)
    except SlurmFailed as error:
        raise ConfigError(f"recheck: {error}") from None
    for line in plan.left:
        print(f"# leave {line}")
    if not plan.targets:
        print(f"# nothing to re-check: no node of {args.nodes} is drained by collbench")
        return EXIT_OK
    reservation = reservation_of(plan, getpass.getuser(), cfg.drain.reservation_minutes)
    check = check_argv(cfg, args.config, args.overrides, reservation)
    if args.dry_run:
        reserve, resume, release = reservation.lines()
        for argv in (reserve, resume, check, release):
            print(command_text(argv))
        return EXIT_OK
    return _recheck(cfg, plan, reservation, check)


def _hostlist(nodes: str) -> list[str]:
    try:
        return expand_hostlist(nodes)
    except BadHostlist as error:
        raise ConfigError(
            f"recheck: {nodes!r} is not a hostlist ({error}); allowed: a Slurm hostlist or {EVERY_NODE}"
        ) from None


def _partners(given: str | None) -> list[str]:
    if not given:
        return []
    try:
        return expand_hostlist(given)
    except BadHostlist as error:
        raise ConfigError(f"recheck: --partner {given!r} is not a hostlist ({error})") from None


def _recheck(cfg: Config, plan: Plan, reservation: MaintenanceReservation, check: list[str]) -> int:
    try:
        settled = recheck(cfg, plan, reservation, check)
    except Refused as refused:
        print(f"collbench: recheck: {refused}", file=sys.stderr)
        return EXIT_FAILED
    except SlurmFailed as error:
        print(f"collbench: recheck: cannot read the nodes' states after the check ({error}); the reservation "
              "is released, the nodes are as the check left them", file=sys.stderr)  # fmt: skip
        return EXIT_CANNOT_RUN
    for line in settled.resumed:
        print(line)
    if settled.record is not None:
        record_in_history(cfg, settled.record)
    if not settled.ran and settled.code == EXIT_INCONCLUSIVE and settled.run_id:
        print(f"collbench: recheck: the check could not settle the nodes (exit 5, INCONCLUSIVE: run "
              f"{settled.run_id} says which and why); drained again as they were", file=sys.stderr)  # fmt: skip
        return EXIT_INCONCLUSIVE
    if not settled.ran:
        made = "" if settled.run_id else ", no run directory"
        print(f"collbench: recheck: the check could not run (exit {settled.code}{made}); the nodes drained again "
              "as they were", file=sys.stderr)  # fmt: skip
        return EXIT_CANNOT_RUN
    return settled.code
