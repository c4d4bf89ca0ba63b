"""The fabric's switches from `scontrol show topology` (tree and block) or from a config's leaves: which leaf
holds a host, the switches between two leaves, the hosts behind a switch, and Slurm without a topology."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from slurm.submission import SlurmUnavailable
from slurm.topology import (
    Switch,
    Topology,
    parse_topology,
    read_topology,
    topology_from_answer,
    topology_from_leaves,
)

TREE = """\
SwitchName=leaf1 Level=0 LinkSpeed=1 Nodes=gpu[001-004]
SwitchName=leaf2 Level=0 LinkSpeed=1 Nodes=gpu[005-008]
SwitchName=leaf3 Level=0 LinkSpeed=1 Nodes=gpu[009-010]
SwitchName=spine1 Level=1 LinkSpeed=1 Switches=leaf[1-2]
SwitchName=spine2 Level=1 LinkSpeed=1 Nodes=(null) Switches=leaf3
SwitchName=core Level=2 LinkSpeed=1 Switches=spine[1-2]
"""

# 22.05 printed each field with a trailing blank; fields it has no value for are left out
TREE_2205 = "SwitchName=s1 Level=0 LinkSpeed=1 Nodes=n[1-2] \nSwitchName=top Level=1 LinkSpeed=1 Switches=s1 \n"

BLOCKS_2405 = """\
BlockName=b1 BlockIndex=0 Nodes=n[01-04] BlockSize=4
BlockName=b2 BlockIndex=1 Nodes=n[05-08] BlockSize=4
BlockName=b3 BlockIndex=2 Nodes=n[09-12] BlockSize=4
BlockName=b[1-2] BlockIndex=3 Nodes=n[01-08] BlockSize=8
"""

BLOCKS_2411 = """\
BlockName=b1 BlockIndex=0 Nodes=n[01-04] BlockSize=4
BlockName=b2 BlockIndex=1 Nodes=n[05-08] BlockSize=4
AggregatedBlock=b[1-2] BlockIndex=2 Nodes=n[01-08] BlockSize=8
"""


def test_a_tree_is_read_switch_by_switch_with_its_hostlists_expanded() -> None:
    topology = parse_topology(TREE)
    assert topology.source == "slurm topology/tree"
    assert topology.switches[0] == Switch("leaf1", 0, ("gpu001", "gpu002", "gpu003", "gpu004"), ())
    assert topology.switch("spine1").switches == ("leaf1", "leaf2")
    assert topology.switch("spine2") == Switch("spine2", 1, (), ("leaf3",))
    assert list(topology.leaves()) == ["leaf1", "leaf2", "leaf3"]
    assert topology.leaves()["leaf3"] == ("gpu009", "gpu010")


def test_leaf_parent_path_and_hosts_behind() -> None:
    topology = parse_topology(TREE)
    assert topology.leaf_of("gpu006") == "leaf2"
    assert topology.leaf_of("elsewhere") is None
    assert topology.parent_of("leaf3") == "spine2"
    assert topology.parent_of("core") is None
    assert topology.path("leaf1", "leaf2") == ("leaf1", "spine1", "leaf2")
    assert topology.path("leaf1", "leaf3") == ("leaf1", "spine1", "core", "spine2", "leaf3")
    assert topology.path("leaf2", "leaf2") == ("leaf2",)
    assert topology.hosts_behind("spine1") == tuple(f"gpu{i:03d}" for i in range(1, 9))
    assert topology.hosts_behind("core") == tuple(f"gpu{i:03d}" for i in range(1, 11))
    assert topology.hosts_behind("leaf3") == ("gpu009", "gpu010")
    with pytest.raises(ValueError, match="no switch 'leaf9'"):
        topology.path("leaf1", "leaf9")


def test_the_lowest_level_switch_holding_a_host_is_its_leaf() -> None:
    topology = parse_topology("SwitchName=top Level=1 Nodes=n1 Switches=s1\nSwitchName=s1 Level=0 Nodes=n[1-2]\n")
    assert topology.leaf_of("n1") == "s1"


def test_leaves_without_a_common_switch_have_no_path() -> None:
    topology = parse_topology("SwitchName=a Level=0 Nodes=n1\nSwitchName=b Level=0 Nodes=n2\n")
    with pytest.raises(ValueError, match="share no switch"):
        topology.path("a", "b")


def test_restricted_keeps_only_the_given_hosts_and_drops_empty_switches() -> None:
    small = parse_topology(TREE).restricted(["gpu002", "gpu003", "gpu009"])
    assert [switch.name for switch in small.switches] == ["leaf1", "leaf3", "spine1", "spine2", "core"]
    assert small.leaves() == {"leaf1": ("gpu002", "gpu003"), "leaf3": ("gpu009",)}
    assert small.switch("spine1").switches == ("leaf1",)
    assert small.path("leaf1", "leaf3") == ("leaf1", "spine1", "core", "spine2", "leaf3")
    assert small.source == "slurm topology/tree"
    assert parse_topology(TREE).restricted(["gpu001"]).hosts() == ("gpu001",)
    assert parse_topology(TREE).restricted([]).switches == ()


def test_22_05_output_with_trailing_blanks() -> None:
    topology = parse_topology(TREE_2205)
    assert topology.leaves() == {"s1": ("n1", "n2")}
    assert topology.path("s1", "s1") == ("s1",)
    assert topology.parent_of("s1") == "top"


@pytest.mark.parametrize("text", [BLOCKS_2405, BLOCKS_2411], ids=["24.05", "24.11"])
def test_blocks_keep_the_base_blocks_under_one_implicit_top(text: str) -> None:
    topology = parse_topology(text)
    assert topology.source == "slurm topology/block"
    assert list(topology.leaves()) == ["b1", "b2", *(["b3"] if text is BLOCKS_2405 else [])]
    assert topology.leaf_of("n06") == "b2"
    assert topology.parent_of("b1") == "blocks"
    assert topology.path("b1", "b2") == ("b1", "blocks", "b2")
    assert topology.hosts_behind("blocks")[:8] == tuple(f"n{i:02d}" for i in range(1, 9))


def test_unknown_lines_are_ignored_and_a_bad_hostlist_names_its_line() -> None:
    assert parse_topology("some banner\n\n" + TREE_2205).leaves() == {"s1": ("n1", "n2")}
    assert parse_topology("").switches == ()
    with pytest.raises(ValueError, match=r"line 2 'SwitchName=s2 Level=0 LinkSpeed=1 Nodes=n\[1-'"):
        parse_topology("SwitchName=s1 Level=0 Nodes=n1\nSwitchName=s2 Level=0 LinkSpeed=1 Nodes=n[1-\n")
    with pytest.raises(ValueError, match=r"line 1 .*BlockName=b1.*runs backwards"):
        parse_topology("BlockName=b1 BlockIndex=0 Nodes=n[4-1] BlockSize=4\n")
    with pytest.raises(ValueError, match="Level 'x' is not a number"):
        parse_topology("SwitchName=s1 Level=x Nodes=n1\n")


def test_slurms_answers_without_a_topology_are_none() -> None:
    assert topology_from_answer(0, "", "") is None
    assert topology_from_answer(0, "", "scontrol: error: No topology information available\n") is None
    assert topology_from_answer(1, "", "slurm_load_topo error: Topology plugin may not be configured\n") is None
    assert topology_from_answer(0, TREE, "") == parse_topology(TREE)


def test_a_controller_that_does_not_answer_is_slurm_unavailable() -> None:
    with pytest.raises(SlurmUnavailable, match="could not reach"):
        topology_from_answer(1, "", "slurm_load_topo error: Unable to contact slurm controller (connect failure)")
    with pytest.raises(SlurmUnavailable, match="exit 1"):
        topology_from_answer(1, "", "scontrol: error: Invalid user for SlurmUser\n")


def _fake_scontrol(directory: Path, script: str) -> dict[str, str]:
    path = directory / "scontrol"
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return {"PATH": str(directory)}


def test_read_topology_runs_scontrol_without_slurm_topo_len(tmp_path: Path) -> None:
    # SLURM_TOPO_LEN cuts every line scontrol prints; the reader never lets it through
    env = _fake_scontrol(
        tmp_path,
        '[ "$1 $2" = "show topology" ] || exit 2\n'
        '[ -z "$SLURM_TOPO_LEN" ] || exit 3\n'
        "echo 'SwitchName=s1 Level=0 LinkSpeed=1 Nodes=n[1-2]'\n",
    )
    topology = read_topology({**env, "SLURM_TOPO_LEN": "10"})
    assert topology == Topology((Switch("s1", 0, ("n1", "n2"), ()),), "slurm topology/tree")


def test_read_topology_without_a_plugin_or_without_slurm(tmp_path: Path) -> None:
    env = _fake_scontrol(tmp_path, "echo 'scontrol: error: No topology information available' >&2\n")
    assert read_topology(env) is None
    with pytest.raises(SlurmUnavailable, match="scontrol not found"):
        read_topology({"PATH": str(tmp_path / "nowhere")})


def test_a_configs_leaves_join_at_one_spine() -> None:
    topology = topology_from_leaves({"leaf1": "gpu[001-002]", "leaf2": "gpu003,gpu004"})
    assert topology.source == "config topology.switches"
    assert topology.leaves() == {"leaf1": ("gpu001", "gpu002"), "leaf2": ("gpu003", "gpu004")}
    assert topology.path("leaf1", "leaf2") == ("leaf1", "spine", "leaf2")
    assert topology.leaf_of("gpu004") == "leaf2"
    assert topology_from_leaves({}).switches == ()


def test_a_configs_leaves_refuse_a_host_twice_a_bad_hostlist_and_the_spines_name() -> None:
    with pytest.raises(ValueError, match="host gpu002 is under both 'leaf1' and 'leaf2'"):
        topology_from_leaves({"leaf1": "gpu[001-002]", "leaf2": "gpu[002-003]"})
    with pytest.raises(ValueError, match=r"leaf switch 'leaf1'.*gpu\[1-"):
        topology_from_leaves({"leaf1": "gpu[1-"})
    with pytest.raises(ValueError, match="'spine'"):
        topology_from_leaves({"spine": "gpu1"})


def test_an_upper_switch_keeps_only_the_nodes_cabled_to_it_not_those_slurm_lists_below_it() -> None:
    """What Slurm 22.05 prints for the test cluster's topology.conf: the spine lists every node below it."""
    topology = parse_topology(
        "SwitchName=s1 Level=0 LinkSpeed=1 Nodes=n[1-3]\n"
        "SwitchName=s2 Level=0 LinkSpeed=1 Nodes=n[4-6]\n"
        "SwitchName=spine Level=1 LinkSpeed=1 Nodes=n[1-6] Switches=s[1-2]\n"
    )
    assert topology.leaves() == {"s1": ("n1", "n2", "n3"), "s2": ("n4", "n5", "n6")}
    assert topology.switch("spine").nodes == ()
    assert topology.hosts_behind("spine") == tuple(f"n{i}" for i in range(1, 7))
    assert topology.leaf_of("n5") == "s2" and topology.path("s1", "s2") == ("s1", "spine", "s2")
