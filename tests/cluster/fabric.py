"""The test cluster's rail-optimized fabric (tests/cluster/up.sh), and faults to put on it for a test.

On rail r every node nI has an interface `rail<r>` with address 10.79.r.1I/24, a veth whose root end `cbr<r>vI`
sits on one of the rail's two leaf switches, bridges `cbr<r>s1` (nodes 1..ceil(N/2)) and `cbr<r>s2` (the rest).
The leaves of a rail are joined by one uplink, the veth pair `cbu<r>s1` <-> `cbu<r>s2`: traffic between the
leaves crosses it, traffic within a leaf does not. eth0 (10.78.0.1I, bridge cbbr0) carries Slurm as before.

Each fault is a context manager that slows links with the kernel's traffic control (tbf, as the isolate tests
do) and removes that shaping when the block ends, whatever happens in it. `noisy` is the fabric's background
noise: the rate of every switch port toward a node (htb) drawn afresh every period, as other jobs' traffic
would leave it. It shapes only the switch side of each link, the faults only the node side and the uplinks, so
a fault and the noise never share a device and compose in any order."""

from __future__ import annotations

import math
import random
import re
import subprocess
import threading
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field

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
    """tbf at `rate` on `device` (run behind `prefix`, e.g. ip netns exec NS) for the block; removed after."""
    with _shaped_by(prefix, device, _tbf(rate)):
        yield


@contextmanager
def _shaped_by(prefix: list[str], device: str, qdisc: list[str]) -> Iterator[None]:
    """The root `qdisc` (tc's words after `dev DEVICE`) on `device` for the block; removed after. `tc qdisc add`
    fails on a device already shaped, and then nothing is removed: not someone else's shaping."""
    added = False
    try:
        command = [*prefix, "tc", "qdisc", "add", "dev", device, *qdisc]
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


def port(node: str, rail: int) -> str:
    """The rail's leaf switch port toward the node, in the root namespace: (n4, 1) -> cbr1v4. What it sends is
    what the node receives on the rail."""
    leaf_of(node)
    _check_rail(rail)
    return f"cbr{rail}v{node.removeprefix('n')}"


RATE = re.compile(r"(\d+(?:\.\d+)?)(kbit|mbit|gbit)")
BITS = {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9}


def bits_per_s(rate: str) -> float:
    """tc's rate as bits a second: '300mbit' -> 3e8. Only kbit, mbit and gbit, as the faults and the noise write."""
    found = RATE.fullmatch(rate)
    if not found:
        raise ValueError(f"rate {rate!r}: write a number and kbit, mbit or gbit (e.g. 300mbit)")
    return float(found.group(1)) * BITS[found.group(2)]


@dataclass
class Noise:
    """What `noisy` shapes and has done: its ports, how many times it drew their rates, the draws' range (bits a
    second), and the first error of a redraw (raised when the block ends)."""

    ports: list[str]
    low: float
    high: float
    draws: int = 0
    error: str = ""
    rates: dict[str, float] = field(default_factory=dict)
    """Each port's current rate, bits a second."""

    def draw(self, rng: random.Random) -> list[str]:
        """A fresh rate for every port, log-uniform in [low, high]: tc -batch lines that set them."""
        lines = []
        for device in self.ports:
            rate = math.exp(rng.uniform(math.log(self.low), math.log(self.high)))
            self.rates[device] = rate
            lines.append(f"class replace dev {device} parent 1: classid 1:1 htb {_htb_rate(rate)}")
        self.draws += 1
        return lines


def _htb_rate(bits: float) -> str:
    kbit = max(1, round(bits / 1e3))
    return f"rate {kbit}kbit ceil {kbit}kbit burst 256k cburst 256k"


def _tc_batch(lines: Sequence[str]) -> str:
    """Run tc's commands in one process; its error text, empty when every line took."""
    proc = subprocess.run(["tc", "-batch", "-"], input="\n".join(lines) + "\n", capture_output=True, text=True)
    return "" if proc.returncode == 0 else f"tc -batch: exit {proc.returncode}: {proc.stderr.strip()}"


@contextmanager
def _port_shaped(device: str) -> Iterator[None]:
    """An htb root on the port, every packet in class 1:1 (whose rate the noise sets), for the block; removed
    after. A port already shaped fails it, and then nothing is removed."""
    with _shaped_by([], device, ["root", "handle", "1:", "htb", "default", "1"]):
        yield


@contextmanager
def noisy(
    low: str = "1gbit", high: str = "6gbit", period_s: float = 1.0, seed: int = 40, rails: Sequence[int] = ()
) -> Iterator[Noise]:
    """Background noise on the fabric for the block: every switch port toward a node, on `rails` (every rail by
    default), gets a rate drawn log-uniform in [low, high] and drawn afresh every `period_s` (from a generator
    seeded with `seed`), as a link shared with other jobs leaves each pair more or less of it from one moment to
    the next. A single TCP flow on a healthy veth carries 1.5-2.5 Gbit/s here, so `high` rarely binds and `low`
    does: the healthy figures spread, and a fault at 100 Mbit/s stays under the slowest of them (300mbit..3gbit
    brought isolate's level down tenfold, to where such a fault read 0.25 of it). Removed after, whatever happens; a
    redraw that failed is raised then. (The kernel here has no netem, so noise is in the rate, not in delay.)"""
    noise = Noise(
        ports=[port(node, rail) for rail in (rails or range(RAILS)) for node in NODES],
        low=bits_per_s(low),
        high=bits_per_s(high),
    )
    if not 0 < noise.low <= noise.high or period_s <= 0:
        raise ValueError(f"noisy(low={low}, high={high}, period_s={period_s}): want 0 < low <= high, period_s > 0")
    rng = random.Random(seed)
    stop = threading.Event()
    with ExitStack() as stack:
        for device in noise.ports:
            stack.enter_context(_port_shaped(device))
        if error := _tc_batch(noise.draw(rng)):
            raise RuntimeError(error)
        redraws = threading.Thread(target=_redraw, args=(noise, rng, period_s, stop), daemon=True)
        redraws.start()
        try:
            yield noise
        finally:
            stop.set()
            redraws.join()
    if noise.error:
        raise RuntimeError(f"noisy: a redraw failed: {noise.error}")


def _redraw(noise: Noise, rng: random.Random, period_s: float, stop: threading.Event) -> None:
    while not stop.wait(period_s):
        error = _tc_batch(noise.draw(rng))
        if error and not noise.error:
            noise.error = error


def _root_qdisc(prefix: list[str], device: str) -> str:
    """The device's root qdisc as tc shows it, or "" where it has the default (noqueue) or is not there."""
    shown = subprocess.run([*prefix, "tc", "qdisc", "show", "dev", device], capture_output=True, text=True).stdout
    roots = [line for line in shown.splitlines() if " root " in f"{line} " and not line.startswith("qdisc noqueue 0:")]
    return roots[0] if roots else ""


def clear_leftovers() -> list[str]:
    """Remove shaping a killed test left on the fabric (every device a fault or the noise shapes): a fault's
    block never ended, so its tbf stayed and slowed every later test. Only for the holder of the cluster's lock
    (tests/conftest.py), to whom any shaping is a leftover. What was removed, one 'where: qdisc' line each."""
    devices = [(_in_node(node), device) for node in NODES for device in ("eth0", *map(rail_interface, range(RAILS)))]
    devices += [([], end) for rail in range(RAILS) for end in uplink(rail)]
    devices += [([], port(node, rail)) for rail in range(RAILS) for node in NODES]
    removed = []
    for prefix, device in devices:
        if qdisc := _root_qdisc(prefix, device):
            subprocess.run([*prefix, "tc", "qdisc", "del", "dev", device, "root"], check=False, capture_output=True)
            removed.append(f"{prefix[-1] if prefix else 'root namespace'} {device}: {qdisc}")
    return removed
