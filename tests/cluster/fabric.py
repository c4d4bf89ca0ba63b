"""The test cluster's rail-optimized fabric (tests/cluster/up.sh), and faults to put on it for a test.

On rail r every node nI has an interface `rail<r>` with address 10.79.r.1I/24, a veth whose root end `cbr<r>vI`
sits on one of the rail's two leaf switches, bridges `cbr<r>s1` (nodes 1..ceil(N/2)) and `cbr<r>s2` (the rest).
The leaves of a rail are joined by one uplink, the veth pair `cbu<r>s1` <-> `cbu<r>s2`: traffic between the
leaves crosses it, traffic within a leaf does not. eth0 (10.78.0.1I, bridge cbbr0) carries Slurm as before.

Each fault is a context manager that slows links with the kernel's traffic control (tbf, as the isolate tests
do) and removes that shaping when the block ends, whatever happens in it."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

RAILS: int = 2
"""tests/cluster/up.sh's default RAILS."""
NODES: tuple[str, ...] = tuple(f"n{i}" for i in range(1, 7))
"""tests/cluster/up.sh's default NNODES (6)."""
LEAVES: dict[str, list[str]] = {"s1": list(NODES[: (len(NODES) + 1) // 2]), "s2": list(NODES[(len(NODES) + 1) // 2 :])}
"""Each leaf switch (Slurm's topology.conf names them alike) and the nodes under it, on every rail."""


def namespace(node: str) -> str:
    """The node's network namespace: n3 -> cbnode3."""
    return f"cbnode{node.removeprefix('n')}"


def rail_interface(rail: int) -> str:
    """The node-side name of the rail's interface, the same in every node: rail 1 -> rail1."""
    _check_rail(rail)
    return f"rail{rail}"


def rail_address(node: str, rail: int) -> str:
    """The node's address on the rail: (n4, 1) -> 10.79.1.14."""
    _check_rail(rail)
    return f"10.79.{rail}.1{node.removeprefix('n')}"


def leaf_of(node: str) -> str:
    """The leaf switch the node hangs off, on every rail: s1 or s2."""
    for leaf, nodes in LEAVES.items():
        if node in nodes:
            return leaf
    raise ValueError(f"{node!r} is not a node of the test cluster ({', '.join(NODES)})")


def uplink(rail: int) -> tuple[str, str]:
    """The two ends of the rail's uplink veth pair, in the root namespace: (cbu<r>s1, cbu<r>s2)."""
    _check_rail(rail)
    return f"cbu{rail}s1", f"cbu{rail}s2"


def _check_rail(rail: int) -> None:
    if not 0 <= rail < RAILS:
        raise ValueError(f"rail {rail}: the test cluster has rails 0..{RAILS - 1}")


def _tbf(rate: str) -> list[str]:
    return ["root", "tbf", "rate", rate, "burst", "32kbit", "latency", "400ms"]


@contextmanager
def _shaped(prefix: list[str], device: str, rate: str) -> Iterator[None]:
    """tbf at `rate` on `device` (run behind `prefix`, e.g. ip netns exec NS) for the block; removed after.
    `tc qdisc add` fails on a device already shaped, and then nothing is removed: not someone else's shaping."""
    added = False
    try:
        command = [*prefix, "tc", "qdisc", "add", "dev", device, *_tbf(rate)]
        proc = subprocess.run(command, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(command)}: exit {proc.returncode}: {proc.stderr.strip()}")
        added = True
        yield
    finally:
        if added:
            subprocess.run([*prefix, "tc", "qdisc", "del", "dev", device, "root"], check=False, capture_output=True)


def _in_node(node: str) -> list[str]:
    leaf_of(node)
    return ["ip", "netns", "exec", namespace(node)]


@contextmanager
def slowed_rail(node: str, rail: int, rate: str = "20mbit") -> Iterator[None]:
    """What the node sends on one rail, at `rate`, for the block."""
    with _shaped(_in_node(node), rail_interface(rail), rate):
        yield


@contextmanager
def slowed_uplink(rail: int, rate: str = "20mbit") -> Iterator[None]:
    """The rail's uplink between its leaves at `rate` both ways (both ends of the veth pair), for the block."""
    with ExitStack() as stack:
        for end in uplink(rail):
            stack.enter_context(_shaped([], end, rate))
        yield


@contextmanager
def slowed_node(node: str, rate: str = "20mbit") -> Iterator[None]:
    """Everything the node sends, on eth0 and every rail, at `rate`, for the block."""
    prefix = _in_node(node)
    with ExitStack() as stack:
        for device in ["eth0", *(rail_interface(r) for r in range(RAILS))]:
            stack.enter_context(_shaped(prefix, device, rate))
        yield
