"""The `rails` and `topology` sections: defaults, overrides, one-line problems naming the bad value, what
each rank's environment gets from its rail, and ib-h100's commented example, loaded."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.cli.main import main
from jobs.config.model import configs_dir, load_config
from jobs.config.rails_settings import RailSettings
from jobs.config.schema import ConfigError
from jobs.config.topology_settings import TopologySettings
from jobs.rundir.layout import RunDir
from jobs.runtime.placement import Placement
from jobs.runtime.rank_job import rank_environment
from slurm.submission import SlurmUnavailable
from slurm.topology import Topology

NCCL_SLURM = [
    *("ranks=null", "launcher=slurm", "backend=nccl", "device=cuda", "nodes=2"),
    *("slurm.tasks_per_node=8", "slurm.gpus_per_node=8"),  # a rank on a GPU asks Slurm for its GPU
]


def test_defaults_leave_rails_to_the_ranks_per_node_and_topology_to_auto() -> None:
    cfg = load_config()
    assert (cfg.rails.aligned, cfg.rails.of_local_rank, cfg.rails.hcas, cfg.rails.interfaces) == ("auto", [], [], [])
    assert (cfg.topology.source, cfg.topology.switches) == ("auto", {})
    assert cfg.topology.from_config() is None
    rails = RailSettings()
    assert [rails.rail_of(i) for i in range(8)] == list(range(8))
    assert (rails.enabled(1), rails.enabled(2), rails.count(8)) == (False, True, 8)
    assert (rails.nic(3), rails.nccl_ib_hca(3), rails.interface(3)) == ("", "", "")


def test_overrides_set_rails_and_switches() -> None:
    cfg = load_config(
        None,
        [
            "rails.hcas=[mlx5_0,mlx5_3:1]",
            "rails.interfaces=[ib0,ib1]",
            "rails.aligned=on",
            "topology.switches.leaf1=n[1-2]",
            "topology.source=config",
        ],
    )
    assert cfg.rails.hcas == ["mlx5_0", "mlx5_3:1"]
    assert (cfg.rails.nic(1), cfg.rails.nccl_ib_hca(1), cfg.rails.interface(1)) == ("mlx5_3:1", "=mlx5_3:1", "ib1")
    assert cfg.rails.nic(2) == ""
    topology = cfg.topology.from_config()
    assert topology is not None and topology.leaves() == {"leaf1": ("n1", "n2")}
    assert cfg.topology.resolve() == topology


def test_rails_shared_by_two_gpus_each() -> None:
    rails = RailSettings(of_local_rank=[0, 0, 1, 1, 2, 2, 3, 3], interfaces=["ib0", "ib1", "ib2", "ib3"])
    assert [rails.rail_of(i) for i in range(8)] == [0, 0, 1, 1, 2, 2, 3, 3]
    assert rails.count(8) == 4 and rails.count(3) == 2
    assert rails.nic(2) == "ib2"
    assert rails.problems(8) == []
    with pytest.raises(ValueError, match="local rank 8 has no rail"):
        rails.rail_of(8)


def test_rails_aligned_off_and_on(tmp_path: Path) -> None:
    assert not RailSettings(aligned="off").enabled(8)
    assert RailSettings(aligned="on").enabled(1)
    # YAML reads a bare on/off as true/false: both spellings mean the same
    assert load_config(None, ["rails.aligned=on"]).rails.aligned == "on"
    path = tmp_path / "rails.yaml"
    path.write_text("ranks: 2\nrails:\n  aligned: off\n")
    assert load_config(str(path)).rails.aligned == "off"
    path.write_text("ranks: 2\nrails:\n  aligned: 'on'\n")
    assert load_config(str(path)).rails.aligned == "on"


BAD = {
    "hca with NCCL's own prefix": (
        ["rails.hcas=[mlx5_0,=mlx5_1]"],
        "rails.hcas[1]: '=mlx5_1' is not an HCA name; allowed: letters, digits",
    ),
    "hca with a bad port": (["rails.hcas=['mlx5_0:x']"], "rails.hcas[0]: 'mlx5_0:x' is not an HCA name"),
    "too few hcas": (
        ["ranks=4", "rails.hcas=[mlx5_0,mlx5_1]"],
        "rails.hcas: 2 entries ['mlx5_0', 'mlx5_1'] for rails 0-3",
    ),
    "interface too long": (
        ["rails.interfaces=[ib0,ib_interface_far_too_long]"],
        "rails.interfaces[1]: 'ib_interface_far_too_long' is not an interface name; allowed: up to 15",
    ),
    "too few interfaces": (["rails.interfaces=[ib0]"], "rails.interfaces: 1 entries ['ib0'] for rails 0-1"),
    "negative rail": (["rails.of_local_rank=[0,-1]"], "rails.of_local_rank[1]: -1 must be a rail number >= 0"),
    "rail map too short": (
        ["ranks=3", "rails.of_local_rank=[0,1]"],
        "rails.of_local_rank: [0, 1] gives rails for 2 local ranks, a node runs 3",
    ),
    "unknown aligned": (
        ["rails.aligned=always"],
        "rails.aligned: 'always' is not allowed; choose one of auto, on, off",
    ),
    "bad switch hostlist": (
        ["topology.switches.leaf1='n[1-'"],
        "topology.switches.leaf1: 'n[1-' is not a hostlist",
    ),
    "host under two switches": (
        ["topology.switches.leaf1='n[1-2]'", "topology.switches.leaf2='n[2-3]'"],
        "topology.switches.leaf2: n2 is also under leaf1; a node hangs off one leaf switch",
    ),
    "switch named spine": (["topology.switches.spine=n1"], "topology.switches.spine: 'spine' is the implicit top"),
    "config without switches": (["topology.source=config"], "topology.source: config needs topology.switches"),
    "unknown source": (
        ["topology.source=ufm"],
        "topology.source: 'ufm' is not allowed; choose one of auto, slurm, config, none",
    ),
}


@pytest.mark.parametrize("case", BAD, ids=str)
def test_bad_rails_and_topology_are_one_line_naming_the_key_and_value(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    overrides, message = BAD[case]
    with pytest.raises(ConfigError) as caught:
        load_config(None, overrides)
    assert message in str(caught.value)
    assert main(["run", f"output_dir={tmp_path / 'runs'}", *overrides]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "runs").exists()


def test_rails_validate_against_slurms_tasks_per_node() -> None:
    with pytest.raises(ConfigError, match=r"rails.hcas: 4 entries .* for rails 0-7, which this node's 8 local"):
        load_config(None, [*NCCL_SLURM, "rails.hcas=[mlx5_0,mlx5_1,mlx5_2,mlx5_3]"])
    assert load_config(None, [*NCCL_SLURM, "rails.of_local_rank=[0,0,1,1,2,2,3,3]", "rails.hcas=[a,b,c,d]"])


def test_topology_sources() -> None:
    def no_plugin() -> Topology | None:
        return None

    def unreachable() -> Topology | None:
        raise SlurmUnavailable("Slurm is not installed here")

    slurms = Topology((), "slurm topology/tree")
    assert TopologySettings(source="none", switches={"l1": "n1"}).resolve(lambda: slurms) is None
    assert TopologySettings(source="slurm").resolve(lambda: slurms) is slurms
    assert TopologySettings().resolve(lambda: slurms) is slurms
    assert TopologySettings().resolve(no_plugin) is None
    assert TopologySettings().resolve(unreachable) is None
    with pytest.raises(SlurmUnavailable):
        TopologySettings(source="slurm").resolve(unreachable)
    configured = TopologySettings(switches={"l1": "n[1-2]", "l2": "n3"}).resolve(unreachable)
    assert configured is not None and configured.path("l1", "l2") == ("l1", "spine", "l2")


def _placement(local_rank: int, local_world_size: int = 8, nodes: int = 2) -> Placement:
    return Placement(
        rank=local_world_size + local_rank,
        world_size=nodes * local_world_size,
        local_rank=local_rank,
        local_world_size=local_world_size,
        node_rank=1,
        nnodes=nodes,
        host="gpu002",
        master_addr="gpu001",
        master_port=29500,
        job_id="7",
    )


def test_each_nccl_rank_gets_its_rails_hca_alone_and_its_rail(tmp_path: Path) -> None:
    hcas = ",".join(f"mlx5_{i}" for i in range(8))
    cfg = load_config(None, [*NCCL_SLURM, f"rails.hcas=[{hcas}]", f"env.NCCL_IB_HCA='={hcas}'"])
    for local_rank in (0, 3, 7):
        env = rank_environment(cfg, RunDir(tmp_path), _placement(local_rank), inherited={})
        assert env["NCCL_IB_HCA"] == f"=mlx5_{local_rank}"
        assert env["COLLBENCH_RAIL"] == str(local_rank)


def test_without_hcas_or_on_gloo_nccl_ib_hca_stays_as_env_sets_it(tmp_path: Path) -> None:
    cfg = load_config(None, [*NCCL_SLURM, "env.NCCL_IB_HCA='=mlx5_0,mlx5_1'"])
    env = rank_environment(cfg, RunDir(tmp_path), _placement(1), inherited={})
    assert (env["NCCL_IB_HCA"], env["COLLBENCH_RAIL"]) == ("=mlx5_0,mlx5_1", "1")
    gloo = load_config(None, ["ranks=2", "rails.hcas=[mlx5_0,mlx5_1]"])
    env = rank_environment(gloo, RunDir(tmp_path), _placement(1, local_world_size=2, nodes=1), inherited={})
    assert "NCCL_IB_HCA" not in env and env["COLLBENCH_RAIL"] == "1"


def test_rails_off_or_one_rank_a_node_exports_no_rail(tmp_path: Path) -> None:
    cfg = load_config(None, [*NCCL_SLURM, "rails.aligned=off", "rails.hcas=[a,b,c,d,e,f,g,h]"])
    env = rank_environment(cfg, RunDir(tmp_path), _placement(2), inherited={})
    assert "COLLBENCH_RAIL" not in env and "NCCL_IB_HCA" not in env
    one = load_config(None, ["ranks=1"])
    assert "COLLBENCH_RAIL" not in rank_environment(one, RunDir(tmp_path), _placement(0, 1, 1), inherited={})


def _uncommented_example(text: str) -> str:
    """ib-h100.yaml with its commented rails/topology example switched on."""
    lines = text.splitlines()
    start = lines.index("# rails:")
    block = []
    for line in lines[start:]:
        if not line.startswith("# "):
            break
        block.append(line[2:])
    return "\n".join(lines[:start] + block) + "\n"


def test_ib_h100s_rails_example_is_a_valid_config(tmp_path: Path) -> None:
    assert load_config("ib-h100").rails.hcas == [], "the example stays commented out"
    path = tmp_path / "ib-h100-rails.yaml"
    path.write_text(_uncommented_example((configs_dir() / "ib-h100.yaml").read_text()))
    cfg = load_config(str(path))
    assert cfg.rails.hcas == [f"mlx5_{i}" for i in range(8)]
    assert cfg.rails.enabled(cfg.ranks_per_node) and cfg.ranks_per_node == 8
    topology = cfg.topology.from_config()
    assert topology is not None and topology.leaf_of("gpu040") == "su2"
    env = rank_environment(cfg, RunDir(tmp_path), _placement(5), inherited={})
    assert (env["NCCL_IB_HCA"], env["COLLBENCH_RAIL"]) == ("=mlx5_5", "5")
