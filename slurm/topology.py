"""The fabric's switches as Slurm knows them (`scontrol show topology`) or as a config names them: which
leaf switch a host hangs off, which switches a message crosses between two leaves, which hosts sit behind
a switch. No torch, nothing from jobs/.

topology/tree prints one line per switch, leaves at level 0 (its `Nodes`), the switches above them with
their children (`Switches`); either may be left out, or read `(null)`:

    SwitchName=s1 Level=0 LinkSpeed=1 Nodes=n[1-3]
    SwitchName=spine Level=1 LinkSpeed=1 Switches=s[1-2]

topology/block (Slurm 23.02+) prints one line per base block and, from 24.05, the aggregated blocks too:
named as a hostlist of base blocks (`BlockName=b[1-2]`), or from 24.11 on lines of their own
(`AggregatedBlock=b[1-2]`). Only the base blocks are kept, each a leaf under one implicit top switch
named "blocks":

    BlockName=b1 BlockIndex=0 Nodes=n[1-4] BlockSize=4

Without a topology plugin Slurm prints nothing, or (22.05 and later, on stderr) `scontrol: error: No
topology information available`: read_topology answers None.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from slurm import runner
from slurm.hostlist import BadHostlist, expand_hostlist
from slurm.runner import SlurmFailed, SlurmUnavailable

BLOCKS_TOP = "blocks"
"""The implicit switch above topology/block's base blocks (blocks join at a fabric Slurm does not name)."""

CONFIG_TOP = "spine"
"""The implicit switch above the leaves a config names."""

SCONTROL_TOPOLOGY = ("scontrol", "show", "topology")

_NO_TOPOLOGY = re.compile(
    r"No topology information available|Topology plugin may not be configured|topology.*not configured", re.I
)
"""Slurm's answers when it has no topology plugin (topology/none, default or flat)."""

_NULL = ("", "(null)")


@dataclass(frozen=True, slots=True)
class Switch:
    name: str
    level: int
    """0 for a leaf; each level up one more (Slurm's Level)."""
    nodes: tuple[str, ...]
    """The hosts cabled directly to it, expanded."""
    switches: tuple[str, ...]
    """Its child switches' names, expanded."""


@dataclass(frozen=True, slots=True)
class Topology:
    switches: tuple[Switch, ...]
    source: str
    """Where it came from: 'slurm topology/tree', 'slurm topology/block', 'config topology.switches'."""

    def switch(self, name: str) -> Switch:
        """The switch by name; ValueError naming it when there is none."""
        for switch in self.switches:
            if switch.name == name:
                return switch
        raise ValueError(f"no switch {name!r} in the topology ({self.source})")

    def leaf_of(self, host: str) -> str | None:
        """The lowest-level switch that holds `host` directly; None for a host the topology does not name."""
        holding = [switch for switch in self.switches if host in switch.nodes]
        return min(holding, key=lambda switch: switch.level).name if holding else None

    def leaves(self) -> dict[str, tuple[str, ...]]:
        """Leaf switch -> its hosts: only the switches that hold nodes, in the topology's order."""
        return {switch.name: switch.nodes for switch in self.switches if switch.nodes}

    def hosts(self) -> tuple[str, ...]:
        """Every host the topology names, once, in its order."""
        return tuple(dict.fromkeys(host for switch in self.switches for host in switch.nodes))

    def parent_of(self, switch: str) -> str | None:
        """The switch above `switch` (the lowest-level one when several list it); None at the top."""
        self.switch(switch)
        parents = [candidate for candidate in self.switches if switch in candidate.switches]
        return min(parents, key=lambda candidate: candidate.level).name if parents else None

    def hosts_behind(self, switch: str) -> tuple[str, ...]:
        """Every host below `switch`: its own nodes and, recursively, its child switches'."""
        found: dict[str, None] = {}
        seen: set[str] = set()
        pending = [switch]
        while pending:
            name = pending.pop(0)
            if name in seen:
                continue
            seen.add(name)
            current = self.switch(name)
            found.update(dict.fromkeys(current.nodes))
            pending.extend(child for child in current.switches if self._has(child))
        return tuple(found)

    def path(self, leaf_a: str, leaf_b: str) -> tuple[str, ...]:
        """The switches a message crosses from `leaf_a` to `leaf_b`: up to their lowest common ancestor and
        down again, ('s1', 'spine', 's2'); (leaf_a,) for one leaf. ValueError when they share no ancestor."""
        up_a, up_b = self._ancestry(leaf_a), self._ancestry(leaf_b)
        for position, name in enumerate(up_a):
            if name in up_b:
                return (*up_a[: position + 1], *reversed(up_b[: up_b.index(name)]))
        raise ValueError(f"switches {leaf_a!r} and {leaf_b!r} share no switch above them ({self.source})")

    def restricted(self, hosts: Iterable[str]) -> Topology:
        """Only `hosts`: every switch keeps those of its nodes, and switches with none of them behind are dropped."""
        kept_hosts = set(hosts)
        trimmed = {
            switch.name: Switch(
                switch.name, switch.level, tuple(h for h in switch.nodes if h in kept_hosts), switch.switches
            )
            for switch in self.switches
        }
        smaller = Topology(tuple(trimmed.values()), self.source)
        alive = {name for name in trimmed if smaller.hosts_behind(name)}
        return Topology(
            tuple(
                Switch(s.name, s.level, s.nodes, tuple(child for child in s.switches if child in alive))
                for s in trimmed.values()
                if s.name in alive
            ),
            self.source,
        )

    def _has(self, name: str) -> bool:
        return any(switch.name == name for switch in self.switches)

    def _ancestry(self, switch: str) -> list[str]:
        chain = [switch]
        parent = self.parent_of(switch)
        while parent is not None and parent not in chain:
            chain.append(parent)
            parent = self.parent_of(parent)
        return chain


def parse_topology(text: str) -> Topology:
    """`scontrol show topology` output -> its switches (see the module's docstring for the formats).
    Lines of neither kind are ignored; a malformed hostlist raises ValueError naming the line. A tree
    wins over blocks should one output hold both."""
    tree: list[Switch] = []
    blocks: list[Switch] = []
    for number, line in enumerate(text.splitlines(), start=1):
        fields = _fields(line)
        try:
            if "SwitchName" in fields:
                tree.append(_tree_switch(fields))
            elif "BlockName" in fields and not _aggregated(fields["BlockName"]):
                blocks.append(Switch(fields["BlockName"], 0, _hosts(fields.get("Nodes", "")), ()))
        except ValueError as error:
            raise ValueError(f"scontrol show topology, line {number} {line.strip()!r}: {error}") from None
    if tree:
        return Topology(_own_nodes(tree), "slurm topology/tree")
    if blocks:
        top = Switch(BLOCKS_TOP, 1, (), tuple(block.name for block in blocks))
        return Topology((*blocks, top), "slurm topology/block")
    return Topology((), "slurm")


def _own_nodes(tree: list[Switch]) -> tuple[Switch, ...]:
    """Slurm lists under a switch every node below it (spine: Nodes=n[1-6] Switches=s[1-2]); keep under each
    switch only the nodes cabled to it, those no child switch lists."""
    listed = {switch.name: set(switch.nodes) for switch in tree}

    def below(switch: Switch) -> set[str]:
        return {host for child in switch.switches for host in listed.get(child, ())}

    return tuple(replace(switch, nodes=tuple(h for h in switch.nodes if h not in below(switch))) for switch in tree)


def _fields(line: str) -> dict[str, str]:
    pairs = (word.split("=", 1) for word in line.split() if "=" in word)
    return {key: value for key, value in pairs}


def _tree_switch(fields: dict[str, str]) -> Switch:
    level_text = fields.get("Level", "0")
    if not level_text.isdigit():
        raise ValueError(f"Level {level_text!r} is not a number")
    return Switch(
        fields["SwitchName"], int(level_text), _hosts(fields.get("Nodes", "")), _hosts(fields.get("Switches", ""))
    )


def _hosts(expr: str) -> tuple[str, ...]:
    return () if expr in _NULL else tuple(dict.fromkeys(expand_hostlist(expr)))


def _aggregated(name: str) -> bool:
    """An aggregated block (24.05) is named by the hostlist of the base blocks it joins: 'b[1-2]'."""
    return "[" in name or "," in name


def read_topology(env: Mapping[str, str] | None = None) -> Topology | None:
    """Slurm's topology (`scontrol show topology`, run with `env`, default this process's environment),
    or None when Slurm has no topology plugin. SlurmUnavailable when Slurm is missing or does not answer;
    ValueError (parse_topology) when its answer cannot be read."""
    environment = dict(os.environ if env is None else env)
    environment.pop("SLURM_TOPO_LEN", None)  # it cuts every printed line to that many characters
    try:
        answer = runner.run(SCONTROL_TOPOLOGY, env=environment)
    except SlurmFailed as error:
        return topology_from_answer(error.returncode, error.stdout, error.stderr)
    return topology_from_answer(0, answer.stdout, answer.stderr)


def topology_from_answer(returncode: int, stdout: str, stderr: str) -> Topology | None:
    """What `scontrol show topology` said, read: a Topology, None for no topology plugin, SlurmUnavailable
    for a controller that did not answer or any other failure (with scontrol's words)."""
    said = " ".join((stderr + "\n" + stdout).split())
    if runner.unreachable(said):
        raise SlurmUnavailable(f"{' '.join(SCONTROL_TOPOLOGY)} could not reach Slurm's controller: {said}")
    if _NO_TOPOLOGY.search(said):
        return None
    if returncode != 0:
        raise SlurmUnavailable(f"{' '.join(SCONTROL_TOPOLOGY)} failed (exit {returncode}): {said or 'no output'}")
    topology = parse_topology(stdout)
    return topology if topology.switches else None


def topology_from_leaves(leaves: Mapping[str, str]) -> Topology:
    """Leaf switch -> the hostlist of its hosts (as a config gives it), every leaf under one implicit top
    switch named "spine". ValueError for a bad hostlist, a host under two leaves, or a leaf named "spine"."""
    owner: dict[str, str] = {}
    switches = []
    for name, expr in leaves.items():
        if name == CONFIG_TOP:
            raise ValueError(f"leaf switch {name!r}: the name is taken by the implicit top switch; rename it")
        try:
            hosts = tuple(dict.fromkeys(expand_hostlist(expr)))
        except BadHostlist as error:
            raise ValueError(f"leaf switch {name!r}: {error}") from None
        for host in hosts:
            if host in owner:
                raise ValueError(f"host {host} is under both {owner[host]!r} and {name!r}; a host has one leaf switch")
            owner[host] = name
        switches.append(Switch(name, 0, hosts, ()))
    if not switches:
        return Topology((), "config topology.switches")
    top = Switch(CONFIG_TOP, 1, (), tuple(switch.name for switch in switches))
    return Topology((*switches, top), "config topology.switches")
