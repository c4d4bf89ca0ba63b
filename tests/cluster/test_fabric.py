"""The test cluster's rail-optimized fabric, for real: every node reaches every other on each rail, Slurm knows
the leaves and the spine, and tests/cluster/fabric.py's faults really slow what they name, and only while
their block lasts (throughput measured with a TCP sender and receiver inside the nodes' namespaces)."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from itertools import permutations
from pathlib import Path

import pytest

from tests.cluster import fabric
from tests.conftest import SlurmCluster

pytestmark = [pytest.mark.slurm, pytest.mark.integration]

PAYLOAD = 2_000_000
"""Bytes a measurement sends: 0.8 s at the faults' 20 Mbit/s, a few ms on a healthy veth."""
SLOW_MBIT = 40.0
"""Twice the faults' 20 Mbit/s: what tbf lets through beyond its rate is one 32 kbit burst."""
FAST_MBIT = 200.0
"""Far below what a healthy veth path carries here, even with the two cores busy."""

RECEIVER = """
import socket, sys
srv = socket.socket()
srv.bind((sys.argv[1], 0))
srv.listen(1)
srv.settimeout(20)
print(srv.getsockname()[1], flush=True)
conn, _ = srv.accept()
conn.settimeout(20)
n = 0
while chunk := conn.recv(1 << 16):
    n += len(chunk)
conn.sendall(n.to_bytes(8, "big"))
conn.close()
"""
SENDER = """
import socket, sys, time
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=20)
size = int(sys.argv[3])
started = time.perf_counter()
s.sendall(b"x" * size)
s.shutdown(socket.SHUT_WR)
ack = b""
while len(ack) < 8 and (chunk := s.recv(8 - len(ack))):
    ack += chunk
print(int.from_bytes(ack, "big"), time.perf_counter() - started)
"""


def in_node(node: str, *command: str, timeout: float = 20) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["ip", "netns", "exec", fabric.namespace(node), *command],
        capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip


def mbit_per_s(sender: str, receiver: str, address: str) -> float:
    """What `sender` gets across to `receiver` (listening on `address`, one of its own) in Mbit/s: PAYLOAD bytes
    over one TCP connection, timed from the first byte sent to the receiver's count of them coming back."""
    listening = subprocess.Popen(
        ["ip", "netns", "exec", fabric.namespace(receiver), sys.executable, "-c", RECEIVER, address],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert listening.stdout is not None
        port = listening.stdout.readline().strip()
        assert port.isdigit(), f"receiver in {receiver} did not listen: {listening.communicate(timeout=5)}"
        sent = in_node(sender, sys.executable, "-c", SENDER, address, port, str(PAYLOAD))
        assert sent.returncode == 0, sent.stderr
        received, seconds = sent.stdout.split()
        assert int(received) == PAYLOAD, sent.stdout
        listening.wait(timeout=10)
    finally:
        if listening.poll() is None:
            listening.kill()
            listening.wait()
    return PAYLOAD * 8 / float(seconds) / 1e6


def qdiscs(device: str, node: str | None = None) -> str:
    prefix = ["ip", "netns", "exec", fabric.namespace(node)] if node else []
    return subprocess.run([*prefix, "tc", "qdisc", "show", "dev", device], capture_output=True, text=True).stdout


def test_layout_helpers() -> None:
    assert fabric.LEAVES == {"s1": ["n1", "n2", "n3"], "s2": ["n4", "n5", "n6"]}
    assert [fabric.leaf_of(n) for n in ("n1", "n3", "n4", "n6")] == ["s1", "s1", "s2", "s2"]
    assert fabric.rail_interface(1) == "rail1"
    assert fabric.rail_address("n4", 1) == "10.79.1.14"
    with pytest.raises(ValueError):
        fabric.rail_address("n1", fabric.RAILS)
    with pytest.raises(ValueError):
        fabric.leaf_of("n7")


def test_every_node_reaches_every_other_on_each_rail(slurm_cluster: SlurmCluster) -> None:
    nodes = [n for nodes in fabric.LEAVES.values() for n in nodes]
    for rail in range(fabric.RAILS):
        for node in nodes:
            shown = in_node(node, "ip", "-4", "-o", "addr", "show", fabric.rail_interface(rail)).stdout
            assert f"inet {fabric.rail_address(node, rail)}/24" in shown, shown
    unreached = []
    for rail in range(fabric.RAILS):
        for node, peer in permutations(nodes, 2):
            if in_node(node, "ping", "-c1", "-W2", fabric.rail_address(peer, rail)).returncode != 0:
                unreached.append(f"{node} -> {peer} on rail {rail}")
    assert not unreached
    assert Path("/proc/sys/net/ipv4/ip_forward").read_text().strip() == "0", "nothing routes between the rails"


def test_slurm_knows_the_leaves_and_the_spine(slurm_cluster: SlurmCluster) -> None:
    env = slurm_cluster.env()

    def run(*command: str) -> str:
        proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=30, check=False)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout + proc.stderr

    switches = {}
    for line in run("scontrol", "show", "topology").splitlines():
        fields = dict(field.split("=", 1) for field in line.split())
        switches[fields["SwitchName"]] = fields
    assert sorted(switches) == ["s1", "s2", "spine"]
    for leaf, nodes in fabric.LEAVES.items():
        assert run("scontrol", "show", "hostnames", switches[leaf]["Nodes"]).split() == nodes
    assert switches["spine"]["Switches"] == "s[1-2]"
    assert run("scontrol", "show", "hostnames", switches["spine"]["Nodes"]).split() == list(slurm_cluster.wide_nodes)
    # three nodes without n1: a topology-blind pick is n[2-4], across the spine; the tree packs them under s2
    planned = run("sbatch", "--test-only", "--partition=wide", "--nodes=3", "--exclude=n1", "--wrap=true")
    found = re.search(r" on nodes (\S+) ", planned)
    assert found, planned
    assert run("scontrol", "show", "hostnames", found.group(1)).split() == fabric.LEAVES["s2"]


def test_slowed_uplink_slows_only_traffic_between_the_leaves_of_its_rail(slurm_cluster: SlurmCluster) -> None:
    across = ("n1", "n4")
    within = ("n1", "n2")
    assert fabric.leaf_of(across[0]) != fabric.leaf_of(across[1])
    assert fabric.leaf_of(within[0]) == fabric.leaf_of(within[1])
    before = mbit_per_s(*across, fabric.rail_address(across[1], 1))
    with fabric.slowed_uplink(1):
        assert all("tbf" in qdiscs(end) for end in fabric.uplink(1))
        slow = mbit_per_s(*across, fabric.rail_address(across[1], 1))
        slow_back = mbit_per_s(across[1], across[0], fabric.rail_address(across[0], 1))
        inside_leaf = mbit_per_s(*within, fabric.rail_address(within[1], 1))
        other_rail = mbit_per_s(*across, fabric.rail_address(across[1], 0))
    after = mbit_per_s(*across, fabric.rail_address(across[1], 1))
    figures = (
        f"Mbit/s on rail 1 n1->n4: before {before:.0f}, slowed {slow:.1f} (n4->n1 {slow_back:.1f}), after {after:.0f}; "
        f"while slowed: n1->n2 on rail 1 {inside_leaf:.0f}, n1->n4 on rail 0 {other_rail:.0f}"
    )
    print(figures)
    assert slow < SLOW_MBIT and slow_back < SLOW_MBIT, figures
    assert min(before, inside_leaf, other_rail, after) > FAST_MBIT, figures
    assert min(inside_leaf, other_rail) > 10 * max(slow, slow_back), figures
    assert not any("tbf" in qdiscs(end) for end in fabric.uplink(1))


def test_slowed_rail_slows_what_the_node_sends_on_that_rail(slurm_cluster: SlurmCluster) -> None:
    with fabric.slowed_rail("n4", 0):
        assert "tbf" in qdiscs("rail0", "n4")
        slow = mbit_per_s("n4", "n5", fabric.rail_address("n5", 0))
        other_rail = mbit_per_s("n4", "n5", fabric.rail_address("n5", 1))
    figures = f"Mbit/s n4->n5 while n4's rail 0 is slowed: rail 0 {slow:.1f}, rail 1 {other_rail:.0f}"
    print(figures)
    assert slow < SLOW_MBIT < FAST_MBIT < other_rail, figures
    assert "tbf" not in qdiscs("rail0", "n4")


def test_slowed_node_shapes_every_interface_and_undoes_it_on_error(slurm_cluster: SlurmCluster) -> None:
    devices = ["eth0", *(fabric.rail_interface(r) for r in range(fabric.RAILS))]
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="inside the block"), fabric.slowed_node("n2"):
        assert all("tbf" in qdiscs(device, "n2") for device in devices)
        raise RuntimeError("inside the block")
    assert not any("tbf" in qdiscs(device, "n2") for device in devices)
    assert time.monotonic() - started < 10
    # a device already shaped is left as it was: the fault fails, and removes only what it added
    with fabric.slowed_rail("n2", 1):
        with pytest.raises(RuntimeError, match="rail1"), fabric.slowed_node("n2"):
            pass
        assert "tbf" in qdiscs("rail1", "n2")
        assert "tbf" not in qdiscs("eth0", "n2") and "tbf" not in qdiscs("rail0", "n2")
    assert "tbf" not in qdiscs("rail1", "n2")


def root_qdiscs(node: str) -> str:
    """What `ip netns exec cbnodeN tc qdisc show` lists that is not a device's default (noqueue)."""
    shown = in_node(node, "tc", "qdisc", "show").stdout
    return "\n".join(line for line in shown.splitlines() if line.strip() and not line.startswith("qdisc noqueue 0:"))


def test_noisy_redraws_every_port_composes_with_a_fault_and_leaves_nothing(slurm_cluster: SlurmCluster) -> None:
    ports = [fabric.port(node, rail) for rail in range(fabric.RAILS) for node in fabric.NODES]
    assert fabric.port("n4", 1) == "cbr1v4" and len(ports) == 12
    with pytest.raises(ValueError, match="low <= high"), fabric.noisy(low="2gbit", high="1gbit"):
        pass
    with pytest.raises(ValueError, match="kbit, mbit or gbit"), fabric.noisy(low="fast"):
        pass
    with fabric.noisy(period_s=0.3) as noise:
        assert all("htb 1: root" in qdiscs(device) for device in ports)
        first = dict(noise.rates)
        figures = [mbit_per_s("n1", "n2", fabric.rail_address("n2", 0)) for _ in range(6)]
        assert noise.draws >= 2 and noise.rates != first, "redrawn while the block lasts"
        assert all(noise.low <= rate <= noise.high for rate in noise.rates.values())
        with fabric.slowed_rail("n4", 0, "100mbit"):
            assert "tbf" in qdiscs("rail0", "n4") and "htb" in qdiscs(fabric.port("n4", 0))
            slowed = mbit_per_s("n4", "n5", fabric.rail_address("n5", 0))
        shown = f"Mbit/s n1->n2 on rail 0 under noise: {[round(f) for f in figures]}; n4->n5 slowed too: {slowed:.0f}"
        print(shown)
        assert slowed < 200 < min(figures), shown
    assert not any("htb" in qdiscs(device) for device in ports)
    assert not any(root_qdiscs(node) for node in fabric.NODES), "nothing left inside the nodes"
    # a port already shaped: noisy fails, and removes only what it added
    tbf = ["root", "tbf", "rate", "1gbit", "burst", "32kbit", "latency", "400ms"]
    subprocess.run(["tc", "qdisc", "add", "dev", ports[5], *tbf], check=True)
    try:
        with pytest.raises(RuntimeError, match=ports[5]), fabric.noisy():
            pass
        assert "tbf" in qdiscs(ports[5]) and not any("htb" in qdiscs(device) for device in ports)
    finally:
        subprocess.run(["tc", "qdisc", "del", "dev", ports[5], "root"], check=False)


def test_a_killed_test_s_shaping_is_cleared_for_the_next_session(slurm_cluster: SlurmCluster) -> None:
    """What a test killed inside a fault's block leaves: a tbf in a node, an htb on a port. The next session's
    fixture clears it (the leftover slowed n5 and a healthy check cordoned it)."""
    tbf = in_node("n5", "tc", "qdisc", "add", "dev", "eth0", "root", "tbf", "rate", "20mbit", "burst", "32kbit",
                  "latency", "400ms")  # fmt: skip
    assert tbf.returncode == 0, tbf.stderr
    subprocess.run(["tc", "qdisc", "add", "dev", fabric.port("n2", 1), "root", "handle", "1:", "htb"], check=True)
    removed = fabric.clear_leftovers()
    assert [line.split(": ")[0] for line in removed] == ["cbnode5 eth0", "root namespace cbr1v2"], removed
    assert "tbf" in removed[0] and "htb" in removed[1], removed
    assert not root_qdiscs("n5") and "htb" not in qdiscs(fabric.port("n2", 1))
    assert fabric.clear_leftovers() == []
