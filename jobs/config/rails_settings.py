"""The config's `rails` section: which NIC (rail) each local rank uses, for rail-aligned plans and per-rail verdicts.

A GPU node has 8 GPUs and 8 NICs; in a rail-optimized fabric NIC i of every node sits on rail i's leaf switch.
Local rank i's traffic to other nodes leaves through its rail's NIC, so a group made of one rail's ranks
across the nodes measures that rail alone (nccl-tests' NCCL_TESTS_SPLIT "MOD 8", kept apart instead of
averaged).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

RailAlignment = Literal["auto", "on", "off"]

HCA_NAME = re.compile(r"^[A-Za-z0-9_.-]+(:[0-9]+)?$")
"""An RDMA device, with an optional port: mlx5_0, mlx5_3:1 (no '=' or '^': collbench writes NCCL_IB_HCA's '=')."""

INTERFACE_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,15}$")
"""A Linux network interface name (at most 15 characters, IFNAMSIZ less its terminator): ib0, enp12s0f1."""


def parse_alignment(value: Any) -> RailAlignment:
    """rails.aligned: auto, on or off; YAML reads a bare on/off (and yes/no) as true/false, taken as on/off."""
    if isinstance(value, bool):
        return "on" if value else "off"
    for choice in get_args(RailAlignment):
        if value == choice:
            return choice  # type: ignore[no-any-return]
    raise ValueError(f"{value!r} is not allowed; choose one of {', '.join(get_args(RailAlignment))}")


@dataclass(kw_only=True, slots=True)
class RailSettings:
    """Rails: local rank -> NIC. Rail-aligned plans in collbench isolate and check measure each rail's ranks
    across the nodes as a group of their own, all rails at once, so a verdict can name a NIC or a rail's
    switch rather than a whole node."""

    aligned: RailAlignment = field(default="auto", metadata={"parse": parse_alignment})
    """Rail-aligned plans in isolate and check: each rail's ranks across the nodes form their own group and all
    rails run at once (nccl-tests' NCCL_TESTS_SPLIT "MOD 8", kept apart instead of averaged); off: each group
    spans whole nodes; auto: on when a node runs two ranks or more."""
    of_local_rank: list[int] = field(default_factory=list)
    """Local rank i -> its rail, e.g. [0, 0, 1, 1, 2, 2, 3, 3] for two GPUs per NIC; empty: local rank i is on
    rail i (one rank per GPU and NIC)."""
    hcas: list[str] = field(default_factory=list)
    """Rail -> its HCA and optional port, e.g. [mlx5_0, mlx5_3:1, ...]: with backend nccl and rails enabled, each
    rank gets NCCL_IB_HCA==<its rail's HCA> (the exact-match '=' form: mlx5_1 alone would also match
    mlx5_10..mlx5_19) in place of env's node-wide NCCL_IB_HCA. Empty: NCCL_IB_HCA is left as env sets it."""
    interfaces: list[str] = field(default_factory=list)
    """Rail -> its network interface, e.g. [ib0, ib1, ...]: a rail group's GLOO_SOCKET_IFNAME with gloo, and the
    name a verdict gives the rail's NIC when rails.hcas names none."""

    def rail_of(self, local_rank: int) -> int:
        """The rail local rank `local_rank` uses."""
        if not self.of_local_rank:
            return local_rank
        if not 0 <= local_rank < len(self.of_local_rank):
            raise ValueError(
                f"rails.of_local_rank maps local ranks 0-{len(self.of_local_rank) - 1}; "
                f"local rank {local_rank} has no rail"
            )
        return self.of_local_rank[local_rank]

    def rails(self, ranks_per_node: int) -> list[int]:
        """The distinct rails a node's local ranks use, in ascending order."""
        return sorted({self.rail_of(local_rank) for local_rank in range(ranks_per_node)})

    def count(self, ranks_per_node: int) -> int:
        """How many distinct rails the node's local ranks use."""
        return len(self.rails(ranks_per_node))

    def enabled(self, ranks_per_node: int) -> bool:
        """Rail-aligned plans and per-rank rail settings are on: rails.aligned on, or auto with two ranks a node."""
        if self.aligned == "auto":
            return ranks_per_node >= 2
        return self.aligned == "on"

    def nic(self, rail: int) -> str:
        """The rail's NIC in a verdict: its HCA, else its interface, else ''."""
        return self.hca(rail) or self.interface(rail)

    def hca(self, rail: int) -> str:
        """The rail's HCA as rails.hcas gives it ('mlx5_3:1'), or ''."""
        return self.hcas[rail] if 0 <= rail < len(self.hcas) else ""

    def nccl_ib_hca(self, rail: int) -> str:
        """NCCL_IB_HCA for the rail's ranks in the exact-match form ('=mlx5_3:1'), or '' when no HCA is known."""
        hca = self.hca(rail)
        return f"={hca}" if hca else ""

    def interface(self, rail: int) -> str:
        """The rail's network interface, or ''."""
        return self.interfaces[rail] if 0 <= rail < len(self.interfaces) else ""

    def problems(self, ranks_per_node: int) -> list[str]:
        found = [
            f"rails.of_local_rank[{i}]: {rail} must be a rail number >= 0"
            for i, rail in enumerate(self.of_local_rank)
            if rail < 0
        ]
        if self.of_local_rank and len(self.of_local_rank) < ranks_per_node:
            found.append(
                f"rails.of_local_rank: {self.of_local_rank} gives rails for {len(self.of_local_rank)} local ranks, "
                f"a node runs {ranks_per_node}; allowed: one rail per local rank, or [] (local rank i on rail i)"
            )
            return found
        if found:
            return found
        needed = max(self.rails(ranks_per_node), default=-1) + 1
        for key, what, names, pattern, allowed in (
            (
                "hcas",
                "an HCA",
                self.hcas,
                HCA_NAME,
                "letters, digits, '_', '.', '-' and an optional :port, such as mlx5_3:1",
            ),
            (
                "interfaces",
                "an interface",
                self.interfaces,
                INTERFACE_NAME,
                "up to 15 letters, digits, '_', '.', '-', such as ib0",
            ),
        ):
            found += [
                f"rails.{key}[{i}]: {name!r} is not {what} name; allowed: {allowed}"
                for i, name in enumerate(names)
                if not pattern.match(name)
            ]
            if names and len(names) < needed:
                found.append(
                    f"rails.{key}: {len(names)} entries {names} for rails 0-{needed - 1}, which this node's "
                    f"{ranks_per_node} local ranks use; allowed: one per rail, or [] (not known)"
                )
        return found
