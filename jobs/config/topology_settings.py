"""The config's `topology` section: which leaf switch each node hangs off, for verdicts at the fabric's grain."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from slurm.hostlist import BadHostlist, collect_hostlist, expand_hostlist
from slurm.submission import SlurmUnavailable
from slurm.topology import CONFIG_TOP, Topology, read_topology, topology_from_leaves

TopologySource = Literal["auto", "slurm", "config", "none"]


@dataclass(kw_only=True, slots=True)
class TopologySettings:
    """Where the fabric's switches come from: Slurm's topology plugin (`scontrol show topology`) or this
    section's switches, so that a verdict can name a leaf switch or the link above it rather than every node
    behind it."""

    source: TopologySource = "auto"
    """auto: topology.switches when given, else Slurm's topology when it has a topology plugin (tree or block),
    else none; slurm: only Slurm's; config: only topology.switches; none: no switches (verdicts name nodes)."""
    switches: dict[str, str] = field(default_factory=dict)
    """Leaf switch -> the hostlist of the nodes cabled to it, e.g. {leaf1: 'gpu[001-032]', leaf2: 'gpu[033-064]'},
    for clusters whose Slurm has no topology; the leaves join at one implicit top switch named spine."""
    resolved_from: str = ""
    """Where topology.switches came from, set by collbench isolate and check when they read the topology at
    the start (slurm topology/tree, config topology.switches, none): not to be set by hand."""

    def from_config(self) -> Topology | None:
        """The topology topology.switches describes; None when it names none."""
        return topology_from_leaves(self.switches) if self.switches else None

    def resolve(self, read_slurm: Callable[[], Topology | None] = read_topology) -> Topology | None:
        """The topology topology.source chooses. auto falls back to none when Slurm has no topology plugin
        or cannot be asked; slurm lets SlurmUnavailable through."""
        if self.source == "none":
            return None
        if self.source == "config" or (self.source == "auto" and self.switches):
            return self.from_config()
        if self.source == "slurm":
            return read_slurm()
        try:
            return read_slurm()
        except SlurmUnavailable:
            return None

    def resolved(self, read_slurm: Callable[[], Topology | None] = read_topology) -> TopologySettings:
        """This section with the leaves topology.source chooses written into topology.switches, and where they
        came from: what a run records at its start, so its readers never ask Slurm."""
        topology = self.resolve(read_slurm)
        if topology is None:
            return replace(self, switches={}, resolved_from="none")
        leaves = {name: collect_hostlist(hosts) for name, hosts in topology.leaves().items() if hosts}
        return replace(self, switches=leaves, resolved_from=topology.source)

    def leaves_of(self, hosts: Sequence[str]) -> dict[int, str]:
        """Node index -> its leaf switch, for the nodes topology.switches places (with source none: nothing)."""
        topology = self.from_config() if self.source != "none" else None
        if topology is None:
            return {}
        found = {node: topology.leaf_of(host) for node, host in enumerate(hosts)}
        return {node: leaf for node, leaf in found.items() if leaf is not None}

    def problems(self) -> list[str]:
        found = []
        owner: dict[str, str] = {}
        for name, expr in self.switches.items():
            if name == CONFIG_TOP:
                found.append(
                    f"topology.switches.{name}: {name!r} is the implicit top switch's name; allowed: any other name"
                )
            try:
                hosts = expand_hostlist(expr)
            except BadHostlist as error:
                found.append(f"topology.switches.{name}: {expr!r} is not a hostlist ({error}); e.g. gpu[001-032]")
                continue
            for host in dict.fromkeys(hosts):
                if host in owner:
                    found.append(
                        f"topology.switches.{name}: {host} is also under {owner[host]}; "
                        "a node hangs off one leaf switch"
                    )
                else:
                    owner[host] = name
        if self.source == "config" and not self.switches:
            found.append(
                "topology.source: config needs topology.switches (leaf switch -> hostlist); "
                "allowed without them: auto, slurm, none"
            )
        return found
