"""Checks a request against what the cluster can ever give, before sbatch: a partition, account or QOS
Slurm does not know, more nodes than the partition holds, a time limit beyond its MaxTime. Each is bad
input (one line naming the value and what is allowed), never a job left queued forever. No torch."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from slurm import runner
from slurm.hostlist import BadHostlist, collect_hostlist, expand_hostlist
from slurm.runner import SlurmFailed
from slurm.settings import SlurmSettings

Query = Callable[[list[str]], str]
"""A query's standard output, SlurmFailed when Slurm refuses it (slurm.runner.output)."""


class RequestRefused(ValueError):
    """The cluster could never run this request as asked; the message is one line for the user."""


@dataclass(frozen=True, slots=True)
class Partition:
    name: str
    nodes: list[str]
    max_nodes: int | None
    """None: unlimited."""
    max_time_min: float | None
    """None: unlimited."""
    default: bool


def parse_partitions(text: str) -> list[Partition]:
    """`scontrol -o show partition` lines -> partitions."""
    found = []
    for line in text.splitlines():
        fields = dict(re.findall(r"(\w+)=(\S*)", line))
        if "PartitionName" not in fields:
            continue
        try:
            nodes = expand_hostlist(fields.get("Nodes", "")) if fields.get("Nodes", "(null)") != "(null)" else []
        except BadHostlist:
            nodes = []
        max_nodes = fields.get("MaxNodes", "UNLIMITED")
        found.append(
            Partition(
                name=fields["PartitionName"],
                nodes=nodes,
                max_nodes=int(max_nodes) if max_nodes.isdigit() else None,
                max_time_min=slurm_minutes(fields.get("MaxTime", "UNLIMITED")),
                default=fields.get("Default") == "YES",
            )
        )
    return found


def slurm_minutes(text: str) -> float | None:
    """Slurm's time forms ('30', '30:00', '4:00:00', '1-12:00:00', 'UNLIMITED') -> minutes, None for no limit."""
    if text.upper() in ("UNLIMITED", "INFINITE", "NONE", ""):
        return None
    days, _, clock = text.rpartition("-")
    parts = [float(p) for p in clock.split(":")]
    if days:
        hours, minutes, seconds = [*parts, 0.0, 0.0][:3]
        return float(days) * 1440 + hours * 60 + minutes + seconds / 60
    if len(parts) == 3:
        return parts[0] * 60 + parts[1] + parts[2] / 60
    if len(parts) == 2:
        return parts[0] + parts[1] / 60
    return parts[0]


def check_request(settings: SlurmSettings, nodes: int, time_min: float, query: Query = runner.output) -> None:
    """Raise RequestRefused when the cluster can never run `nodes` nodes for `time_min` as configured."""
    partitions = parse_partitions(_said(query, ["scontrol", "-o", "show", "partition"]) or "")
    if not partitions:
        return  # nothing to check against: leave it to sbatch
    partition = _the_partition(settings.partition, partitions)
    usable = _usable_nodes(partition, settings)
    limit = min(len(usable), partition.max_nodes) if partition.max_nodes is not None else len(usable)
    if nodes > limit:
        held = collect_hostlist(usable) if usable else "none"
        raise RequestRefused(
            f"nodes: {nodes} is more than partition {partition.name!r} can ever hold ({limit} node(s) usable: "
            f"{held}); allowed: 1-{limit}"
        )
    if partition.max_time_min is not None and time_min > partition.max_time_min:
        raise RequestRefused(
            f"timeouts.job_min: {time_min:g} is beyond the MaxTime of partition {partition.name!r}, "
            f"{partition.max_time_min:g} min; allowed: up to {partition.max_time_min:g}"
        )
    for kind, value in (("account", settings.account), ("qos", settings.qos)):
        if value:
            _check_known(kind, value, query)


def _the_partition(name: str, partitions: list[Partition]) -> Partition:
    names = ", ".join(p.name for p in partitions)
    if not name:
        default = next((p for p in partitions if p.default), None)
        if default is None:
            raise RequestRefused(f"slurm.partition: empty, and this cluster has no default partition; choose: {names}")
        return default
    for partition in partitions:
        if partition.name == name:
            return partition
    raise RequestRefused(f"slurm.partition: {name!r} is not a partition of this cluster; partitions: {names}")


def _usable_nodes(partition: Partition, settings: SlurmSettings) -> list[str]:
    try:
        excluded = set(expand_hostlist(settings.exclude)) if settings.exclude else set()
        wanted = expand_hostlist(settings.nodelist) if settings.nodelist else []
    except BadHostlist as error:
        raise RequestRefused(f"slurm.exclude/nodelist: {error}") from None
    outside = [node for node in wanted if node not in partition.nodes]
    if outside:
        raise RequestRefused(
            f"slurm.nodelist: {collect_hostlist(outside)} not in partition {partition.name!r}; its nodes: "
            f"{collect_hostlist(partition.nodes)}"
        )
    return [node for node in partition.nodes if node not in excluded]


def _check_known(kind: str, value: str, query: Query) -> None:
    column = "Account" if kind == "account" else "Name"
    listed = _said(query, ["sacctmgr", "-n", "-P", "show", kind, f"format={column}"])
    if listed is None:
        return  # no accounting to ask: leave it to sbatch
    known = sorted({line.strip() for line in listed.splitlines() if line.strip()})
    if value not in known:
        shown = ", ".join(known[:12]) + (", ..." if len(known) > 12 else "")
        raise RequestRefused(f"slurm.{kind}: {value!r} is not one Slurm knows; known {kind}s: {shown or 'none'}")


def _said(query: Query, argv: list[str]) -> str | None:
    """What Slurm answered, None when it refused (nothing to check against: left to sbatch)."""
    try:
        return query(argv)
    except SlurmFailed:
        return None
